package io.sparkext

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.{FunctionIdentifier, InternalRow}
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Expression, ExpressionInfo}
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.types.{ArrayType, DataType, LongType, StringType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * The bridge's counters through SQL, for clients that have no py4j (Spark Connect, spark-sql,
 * the Thrift server, JDBC):
 *
 * {{{
 *   SELECT accepted, calls FROM sparkext_metrics()   -- this session's counters
 *   SELECT * FROM sparkext_reset_metrics()           -- the counters, then zeroes them
 * }}}
 *
 * Both return one wide row: a BIGINT column per counter, named and ordered as
 * [[BridgeMetrics]] writes them (the keys of `sparkext.metrics(spark)`),
 * `warnings ARRAY<STRING>`, and `rules STRING`: the per-rule figures as a JSON object
 * (`sparkext.metrics` decodes it). One row rather than one row per counter: a
 * client reads it as the same dictionary, and SQL selects a counter by name.
 *
 * The row is read when Spark analyses the query, from the session that analyses it (the
 * active session: a Connect client's own server-side session). The reset therefore happens
 * at analysis too; a query analysed twice (a Connect `spark.sql` is) resets twice, which
 * zeroes the same counters.
 */
object MetricsTable {
  private val mapper = new ObjectMapper()

  /** The two functions, for `SparkSessionExtensions.injectTableFunction`. */
  val functions: Seq[(FunctionIdentifier, ExpressionInfo, Seq[Expression] => LogicalPlan)] = Seq(
    describe("sparkext_metrics", "this session's sparkext counters, one row",
      args => read("sparkext_metrics", args)),
    describe("sparkext_reset_metrics", "this session's sparkext counters, then resets them",
      args => {
        val row = read("sparkext_reset_metrics", args)
        Sparkext.resetMetrics(activeSession("sparkext_reset_metrics"))
        row
      }))

  private def describe(name: String, usage: String, build: Seq[Expression] => LogicalPlan) =
    (FunctionIdentifier(name),
      new ExpressionInfo(getClass.getName, null, name, s"$name() - $usage", "", "", "", "", "",
        "", ""),
      build)

  private def read(name: String, args: Seq[Expression]): LogicalPlan = {
    if (args.nonEmpty) {
      throw new SparkextException(s"$name() takes no arguments (got ${args.size})")
    }
    toRow(mapper.readTree(Sparkext.metrics(activeSession(name))))
  }

  private def activeSession(name: String): SparkSession =
    SparkSession.getActiveSession.getOrElse(throw new SparkextException(
      s"$name() needs an active SparkSession: run it through spark.sql"))

  /** One column per field of the JSON object: integers as BIGINT, lists of strings,
   *  objects as their JSON text. */
  private def toRow(json: JsonNode): LocalRelation = {
    val names = scala.collection.mutable.ArrayBuffer.empty[String]
    json.fieldNames().forEachRemaining(n => names += n)
    val columns = names.toList.map(n => column(n, json.get(n)))
    val row = InternalRow.fromSeq(columns.map(_._2))
    LocalRelation(columns.map(c => AttributeReference(c._1._1, c._1._2, nullable = false)()),
      Seq(row))
  }

  private def column(name: String, value: JsonNode): ((String, DataType), Any) =
    if (value.isArray) {
      val items = new Array[Any](value.size)
      for (i <- 0 until value.size) items(i) = UTF8String.fromString(value.get(i).asText)
      ((name, ArrayType(StringType, containsNull = false)), new GenericArrayData(items))
    } else if (value.isObject) {
      ((name, StringType), UTF8String.fromString(mapper.writeValueAsString(value)))
    } else if (value.isIntegralNumber) {
      ((name, LongType), value.asLong)
    } else {
      ((name, StringType), UTF8String.fromString(value.asText))
    }
}
