package io.sparkext

/**
 * The Python object of one `sparkext.enable`, as py4j hands it to the JVM.
 *
 * Python implements this trait (py4j `class Java: implements = ["io.sparkext.RuleBridge"]`)
 * and hands the object to [[Sparkext.register]]. The optimizer's calls do not go through
 * it: they go over [[PythonChannel]], and so do cancels (a rule worker started by the JVM
 * has no py4j). Holding it keeps the Python object alive: py4j frees it when the JVM lets go.
 */
trait RuleBridge
