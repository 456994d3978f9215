package io.sparkext

import com.fasterxml.jackson.databind.JsonNode

/**
 * Reads JSON scalars without Jackson's lenient conversions (`intValue` of 3000000000 wraps,
 * of 1.5 truncates, `booleanValue` of 1 is false): a value that does not fit its type is an
 * error, so a rule's wrong constant rejects the rewrite instead of changing the query.
 */
object StrictJson {
  private def bad(j: JsonNode, what: String): Nothing =
    throw new IllegalArgumentException(s"$j is not a valid $what value")

  def long(j: JsonNode, what: String, min: Long = Long.MinValue, max: Long = Long.MaxValue): Long = {
    if (j == null || !j.isIntegralNumber || !j.canConvertToLong) bad(j, what)
    val v = j.longValue()
    if (v < min || v > max) bad(j, what)
    v
  }

  def int(j: JsonNode, what: String): Int = long(j, what, Int.MinValue, Int.MaxValue).toInt

  def bool(j: JsonNode, what: String): Boolean = {
    if (j == null || !j.isBoolean) bad(j, what)
    j.booleanValue()
  }

  def number(j: JsonNode, what: String): Double = {
    if (j == null || !j.isNumber) bad(j, what)
    j.doubleValue()
  }

  def text(j: JsonNode, what: String): String = {
    if (j == null || !j.isTextual) bad(j, what)
    j.asText()
  }
}
