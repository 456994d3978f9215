package io.sparkext

/**
 * The Python object of one `sparkext.enable`, as py4j hands it to the JVM.
 *
 * Python implements this trait (py4j `class Java: implements = ["io.sparkext.RuleBridge"]`)
 * and hands the object to [[Sparkext.register]]. The optimizer's calls do not go through
 * it: they go over [[PythonChannel]]. Holding it keeps the Python object alive (py4j frees
 * it when the JVM lets go), and it answers the one question asked after a timeout. Only
 * abstract methods: py4j proxies need nothing else.
 */
trait RuleBridge {

  /** The name of the rule that call `callId` is running right now ("" when none). */
  def running(callId: Long): String
}
