package org.apache.spark.sql.sparkext

import org.apache.spark.sql.AnalysisException

/**
 * A query a guard refused (`sparkext.refuse`), or that the guards could not judge (they fail
 * closed): error class `SPARKEXT_QUERY_REFUSED`, SQLSTATE 42000, a message naming the guard
 * and the reason, and both as message parameters (`guard`, `reason`).
 *
 * An `AnalysisException`, so that classic PySpark converts it to
 * `pyspark.errors.AnalysisException` (any other class reaches Python as a raw
 * `Py4JJavaError`) and Spark Connect sends it with its class and condition; both clients'
 * `getCondition()` (`getErrorClass()` on 3.5) is `SPARKEXT_QUERY_REFUSED`. Built through the
 * primary constructor with named arguments: the error-class constructors look the class up
 * in Spark's own registry of error classes, which an extension cannot add to, and throw
 * INTERNAL_ERROR for ours. (In this package because that constructor is `protected[sql]` on
 * some lines.) Python's `e.getMessage()` goes through that registry too and fails for this
 * class; `str(e)` is the message.
 */
final class SparkextQueryRefused(message: String, val guard: String, val reason: String)
  extends AnalysisException(
    message = s"[${SparkextQueryRefused.ErrorClass}] $message",
    errorClass = Some(SparkextQueryRefused.ErrorClass),
    messageParameters = Map("guard" -> guard, "reason" -> reason)) {

  // Spark's default looks the state up in its registry, which has no entry for our class.
  override def getSqlState: String = SparkextQueryRefused.SqlState
}

object SparkextQueryRefused {
  val ErrorClass = "SPARKEXT_QUERY_REFUSED"
  /** Syntax error or access rule violation: the query is not allowed as written. */
  val SqlState = "42000"
}
