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

  private val maxReasons = 10
  private val reasons = new java.util.ArrayDeque[String]()

  def refuse(reason: String): Unit = {
    refused.incrementAndGet()
    reasons.synchronized {
      if (!reasons.contains(reason)) {
        if (reasons.size == maxReasons) reasons.removeFirst()
        reasons.addLast(reason)
      }
    }
  }

  def toMap: java.util.Map[String, Any] = {
    val m = new java.util.LinkedHashMap[String, Any]()
    m.put("invocations", invocations.get())
    m.put("effective", effective.get())
    m.put("nanos", nanos.get())
    m.put("refused", refused.get())
    m.put("refusal_reasons", reasons.synchronized(new java.util.ArrayList[String](reasons)))
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
    "encode_errors" -> encodeErrors, "encode_nanos" -> encodeNanos,
    "python_nanos" -> pythonNanos, "rebuild_nanos" -> rebuildNanos,
    "validate_nanos" -> validateNanos, "payload_bytes" -> payloadBytes)

  def reset(): Unit = {
    all.foreach(_._2.set(0))
    warnings.synchronized(warnings.clear())
    rules.synchronized(rules.clear())
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
    new ObjectMapper().writeValueAsString(m)
  }
}
