package io.sparkext

import java.util.concurrent.atomic.AtomicLong

import com.fasterxml.jackson.databind.ObjectMapper

/** One Python rule's figures in a session (`sparkext.metrics(spark)["rules"][name]`). */
final class RuleFigures {
  /** Times the rule ran (each fixed-point round that ran it counts). */
  val invocations = new AtomicLong
  /** Invocations that changed the plan. */
  val effective = new AtomicLong
  /** Wall-clock nanoseconds in the rule, in Python. */
  val nanos = new AtomicLong
  /** Changes of the rule that were not kept: it raised, or its plan failed validation. */
  val refused = new AtomicLong

  private val reasons = new Reasons

  def refuse(reason: String): Unit = reasons.count(refused, reason)

  def toMap: java.util.Map[String, Any] = Reasons.ordered("invocations" -> invocations.get(),
    "effective" -> effective.get(), "nanos" -> nanos.get(), "refused" -> refused.get(),
    "refusal_reasons" -> reasons.list)
}

/** One guard's figures in a session (`sparkext.metrics(spark)["guards"][name]`). */
final class GuardFigures {
  /** Planning units the guard judged (a query, and each subquery planned apart from it). */
  val judged = new AtomicLong
  /** Queries the guard refused (a guard that raised included: guards fail closed). */
  val refusedQueries = new AtomicLong
  /** Queries the guard would have refused, let through because its mode is warn. */
  val warned = new AtomicLong
  /** Queries the guard raised on (counted in `refusedQueries` too). */
  val errors = new AtomicLong
  /** Wall-clock nanoseconds in the guard, in Python. */
  val nanos = new AtomicLong

  private val reasons = new Reasons

  def refuse(reason: String): Unit = reasons.count(refusedQueries, reason)

  def warn(reason: String): Unit = reasons.count(warned, reason)

  def toMap: java.util.Map[String, Any] = Reasons.ordered("judged" -> judged.get(),
    "refused_queries" -> refusedQueries.get(), "warned" -> warned.get(),
    "errors" -> errors.get(), "nanos" -> nanos.get(), "reasons" -> reasons.list)
}

/** The last distinct reasons given (at most 10), oldest first. */
final class Reasons {
  private val max = 10
  private val reasons = new java.util.ArrayDeque[String]()

  def add(reason: String): Unit = reasons.synchronized {
    if (!reasons.contains(reason)) {
      if (reasons.size == max) reasons.removeFirst()
      reasons.addLast(reason)
    }
  }

  def list: java.util.List[String] = reasons.synchronized(new java.util.ArrayList[String](reasons))

  /** One more in `counter`, for `reason`. */
  def count(counter: AtomicLong, reason: String): Unit = {
    counter.incrementAndGet()
    add(reason)
  }
}

object Reasons {
  /** Figures as a JSON object's fields, in this order. */
  def ordered(fields: (String, Any)*): java.util.Map[String, Any] = {
    val m = new java.util.LinkedHashMap[String, Any]()
    fields.foreach { case (k, v) => m.put(k, v) }
    m
  }
}

/**
 * Per-session counters of the bridge. Every field is monotonic until [[reset]]; times are
 * wall-clock nanoseconds summed over calls.
 */
final class BridgeMetrics {
  /** Optimizer invocations that reached Python. */
  val calls = new AtomicLong
  /** Invocations answered without Python (disabled, excluded, no matching node, a
   *  pre-check, same plan). */
  val skipped = new AtomicLong
  val skippedDisabled = new AtomicLong
  val skippedExcluded = new AtomicLong
  val skippedNoPattern = new AtomicLong
  /** Every active rule declares a JVM pre-check ([[Prechecks]]) and none holds. */
  val skippedPrecheck = new AtomicLong
  val skippedSamePlan = new AtomicLong
  /** Skipped because a timeout opened the registration's circuit breaker. */
  val skippedBreaker = new AtomicLong
  /** Skipped because this driver's rule worker could not start, during the cool-down. */
  val skippedWorker = new AtomicLong
  /** The rule worker (`spark.sparkext.rules`) could not start, or was found dead. */
  val workerErrors = new AtomicLong
  /** Python returned a different plan and it passed validation. */
  val accepted = new AtomicLong
  /** Python left the plan as it was. */
  val unchanged = new AtomicLong
  /** Python returned a plan that failed validation or could not be rebuilt. */
  val rejected = new AtomicLong
  /** A rule raised, returned something that is not a plan, or the call itself failed. */
  val pythonErrors = new AtomicLong
  /** Python did not answer within spark.sparkext.timeoutMs. */
  val timeouts = new AtomicLong
  /** The input plan could not be encoded (a bug in sparkext: please report it). */
  val encodeErrors = new AtomicLong
  /** Queries the guards refused: a guard refused, raised, or none could judge. */
  val refusedQueries = new AtomicLong
  /** Queries refused because no guard could judge them (worker, time-out, settings). */
  val guardFailures = new AtomicLong
  /** Time spent judging queries, the guards' facts and the worker's answer included. */
  val guardNanos = new AtomicLong
  /** Of that, listing the files the guards need ([[RelationFacts]]). */
  val guardFactsNanos = new AtomicLong
  /** Of that, the round trip to the guard worker (Python's decoding and guards included). */
  val guardCallNanos = new AtomicLong

  val encodeNanos = new AtomicLong
  val pythonNanos = new AtomicLong
  val rebuildNanos = new AtomicLong
  val validateNanos = new AtomicLong
  val payloadBytes = new AtomicLong

  /** Per Python rule, by name, in first-run order. */
  private val rules = new java.util.LinkedHashMap[String, RuleFigures]()

  def rule(name: String): RuleFigures = rules.synchronized {
    var f = rules.get(name)
    if (f == null) { f = new RuleFigures; rules.put(name, f) }
    f
  }

  /** Per guard, by name, in first-judged order. */
  private val guards = new java.util.LinkedHashMap[String, GuardFigures]()

  def guard(name: String): GuardFigures = guards.synchronized {
    var f = guards.get(name)
    if (f == null) { f = new GuardFigures; guards.put(name, f) }
    f
  }

  private val maxWarnings = 20
  private val warnings = new java.util.ArrayDeque[String]()

  def recordWarning(message: String): Unit = warnings.synchronized {
    if (warnings.size == maxWarnings) warnings.removeFirst()
    warnings.addLast(message)
  }

  private def all: Seq[(String, AtomicLong)] = Seq(
    "calls" -> calls, "skipped" -> skipped, "skipped_disabled" -> skippedDisabled,
    "skipped_excluded" -> skippedExcluded, "skipped_no_pattern" -> skippedNoPattern,
    "skipped_precheck" -> skippedPrecheck,
    "skipped_same_plan" -> skippedSamePlan,
    "skipped_breaker" -> skippedBreaker, "skipped_worker" -> skippedWorker,
    "worker_errors" -> workerErrors, "accepted" -> accepted, "unchanged" -> unchanged,
    "rejected" -> rejected, "python_errors" -> pythonErrors, "timeouts" -> timeouts,
    "encode_errors" -> encodeErrors, "refused_queries" -> refusedQueries,
    "guard_failures" -> guardFailures, "guard_nanos" -> guardNanos,
    "guard_facts_nanos" -> guardFactsNanos, "guard_call_nanos" -> guardCallNanos,
    "encode_nanos" -> encodeNanos,
    "python_nanos" -> pythonNanos, "rebuild_nanos" -> rebuildNanos,
    "validate_nanos" -> validateNanos, "payload_bytes" -> payloadBytes)

  def reset(): Unit = {
    all.foreach(_._2.set(0))
    warnings.synchronized(warnings.clear())
    rules.synchronized(rules.clear())
    guards.synchronized(guards.clear())
  }

  def toJson: String = {
    val m = new java.util.LinkedHashMap[String, Any]()
    all.foreach { case (k, v) => m.put(k, v.get()) }
    m.put("warnings", warnings.synchronized(new java.util.ArrayList[String](warnings)))
    val byRule = new java.util.LinkedHashMap[String, Any]()
    rules.synchronized {
      val it = rules.entrySet.iterator
      while (it.hasNext) { val e = it.next(); byRule.put(e.getKey, e.getValue.toMap) }
    }
    m.put("rules", byRule)
    val byGuard = new java.util.LinkedHashMap[String, Any]()
    guards.synchronized {
      val it = guards.entrySet.iterator
      while (it.hasNext) { val e = it.next(); byGuard.put(e.getKey, e.getValue.toMap) }
    }
    m.put("guards", byGuard)
    new ObjectMapper().writeValueAsString(m)
  }
}
