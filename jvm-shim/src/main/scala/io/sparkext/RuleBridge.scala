package io.sparkext

/**
 * The JVM side of the one callback per optimizer invocation.
 *
 * Python implements this trait (py4j `class Java: implements = ["io.sparkext.RuleBridge"]`)
 * and hands the object to [[Sparkext.register]]. Only abstract methods: py4j proxies need
 * nothing else.
 */
trait RuleBridge {

  /**
   * Runs the registered Python rules on one encoded plan (see docs/wire-format.md) and
   * returns the response document: the rewritten plan, "unchanged", or an error.
   */
  def apply(payload: String): String

  /** The name of the rule that call `callId` is running right now ("" when none). */
  def running(callId: Long): String
}
