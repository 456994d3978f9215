package io.sparkext.shims

import com.fasterxml.jackson.core.{JsonFactoryBuilder, StreamWriteConstraints}

import org.apache.hadoop.conf.Configuration

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.catalog.SessionCatalog
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.optimizer.Optimizer
import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.apache.spark.sql.catalyst.plans.{JoinType, LeftSingle}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, LogicalPlanIntegrity}
import org.apache.spark.sql.types.StringType

/**
 * What sparkext needs of Spark that changed between 3.5 and 4.0: this is the 4.x side
 * (4.0-4.3); spark-3.5/ has the same object for Spark 3.5. Common code calls only these.
 */
private[sparkext] object SparkShim {
  /** Jackson 2.16+ (Spark 4.x ships 2.18+) also limits nesting when writing. */
  def limitWriteNesting(b: JsonFactoryBuilder, maxNesting: Int): Unit =
    b.streamWriteConstraints(StreamWriteConstraints.builder().maxNestingDepth(maxNesting).build())

  /** LeftSingle (the join of a scalar subquery) exists from Spark 4.0. */
  val extraJoinTypes: Map[String, JoinType] = Map("LeftSingle" -> LeftSingle)

  /** Spark 4.0 made null intolerance a method of Expression (3.5 has the trait). */
  def nullIntolerant(e: Expression): Boolean = e.nullIntolerant

  // Spark 4.0 split the API: the classic (non-Connect) session owns sessionState.
  private def state(session: SparkSession) =
    session.asInstanceOf[org.apache.spark.sql.classic.SparkSession].sessionState
  def optimizer(session: SparkSession): Optimizer = state(session).optimizer
  def sqlParser(session: SparkSession): ParserInterface = state(session).sqlParser
  def catalog(session: SparkSession): SessionCatalog = state(session).catalog
  /** Spark 4.0 groups by maps, which its optimizer normalises (`MapSort`). */
  val groupsMaps: Boolean = true
  /** A Hadoop configuration with a relation's options, as its scan gets one. */
  def hadoopConf(session: SparkSession, options: Map[String, String]): Configuration =
    state(session).newHadoopConfWithOptions(options)
  /** Whether strings of this type compare by their UTF-8 bytes (UTF8_BINARY collation). */
  def comparesAsBytes(t: StringType): Boolean = t.typeName == "string"  // no COLLATE
  /** The rows `plan` gives, run (analyzed, optimized, planned) in `session`. */
  def toRdd(session: SparkSession, plan: LogicalPlan): RDD[InternalRow] =
    state(session).executePlan(plan).toRdd

  /**
   * Catalyst's integrity checks of a rewrite. validateOptimizedPlan leaves the last two to
   * planChangeValidation (off by default): a rule's attribute that no child produces must
   * not reach execution.
   */
  def validateIntegrity(before: LogicalPlan, after: LogicalPlan): Option[String] =
    LogicalPlanIntegrity.validateOptimizedPlan(before, after, true)
      .orElse(LogicalPlanIntegrity.validateNoDanglingReferences(after))
      .orElse(LogicalPlanIntegrity.validateAggregateExpressions(after))
}
