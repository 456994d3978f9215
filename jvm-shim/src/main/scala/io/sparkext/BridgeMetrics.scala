package io.sparkext

import java.util.concurrent.atomic.AtomicLong

import com.fasterxml.jackson.databind.ObjectMapper

/**
 * Per-session counters of the bridge. Every field is monotonic until [[reset]]; times are
 * wall-clock nanoseconds summed over calls.
 */
final class BridgeMetrics {
  /** Optimizer invocations that reached Python. */
  val calls = new AtomicLong
  /** Invocations answered without Python (disabled, excluded, no matching node, same plan). */
  val skipped = new AtomicLong
  val skippedDisabled = new AtomicLong
  val skippedExcluded = new AtomicLong
  val skippedNoPattern = new AtomicLong
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

  private val maxWarnings = 20
  private val warnings = new java.util.ArrayDeque[String]()

  def recordWarning(message: String): Unit = warnings.synchronized {
    if (warnings.size == maxWarnings) warnings.removeFirst()
    warnings.addLast(message)
  }

  private def all: Seq[(String, AtomicLong)] = Seq(
    "calls" -> calls, "skipped" -> skipped, "skipped_disabled" -> skippedDisabled,
    "skipped_excluded" -> skippedExcluded, "skipped_no_pattern" -> skippedNoPattern,
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
  }

  def toJson: String = {
    val m = new java.util.LinkedHashMap[String, Any]()
    all.foreach { case (k, v) => m.put(k, v.get()) }
    m.put("warnings", warnings.synchronized(new java.util.ArrayList[String](warnings)))
    new ObjectMapper().writeValueAsString(m)
  }
}
