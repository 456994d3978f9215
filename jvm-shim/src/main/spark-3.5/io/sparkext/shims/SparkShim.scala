package io.sparkext.shims

import com.fasterxml.jackson.core.JsonFactoryBuilder

import org.apache.hadoop.conf.Configuration

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.MultiInstanceRelation
import org.apache.spark.sql.catalyst.catalog.SessionCatalog
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, NullIntolerant, SubqueryExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.optimizer.Optimizer
import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.apache.spark.sql.catalyst.plans.JoinType
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Command, LogicalPlan, LogicalPlanIntegrity}
import org.apache.spark.sql.types.StringType

/** What sparkext needs of Spark that changed between 3.5 and 4.0: the Spark 3.5 side. */
private[sparkext] object SparkShim {
  /** Jackson 2.15 (Spark 3.5) has no StreamWriteConstraints: writing has no depth limit. */
  def limitWriteNesting(b: JsonFactoryBuilder, maxNesting: Int): Unit = ()

  /** No LeftSingle join before Spark 4.0. */
  val extraJoinTypes: Map[String, JoinType] = Map.empty

  /** In 3.5 null intolerance is the NullIntolerant trait. */
  def nullIntolerant(e: Expression): Boolean = e.isInstanceOf[NullIntolerant]

  // SessionState is private[sql] in 3.5: hand out only the parts sparkext uses.
  def optimizer(session: SparkSession): Optimizer = session.sessionState.optimizer
  def sqlParser(session: SparkSession): ParserInterface = session.sessionState.sqlParser
  def catalog(session: SparkSession): SessionCatalog = session.sessionState.catalog
  /** Spark 3.5 groups by no map. */
  val groupsMaps: Boolean = false
  /** A Hadoop configuration with a relation's options, as its scan gets one. */
  def hadoopConf(session: SparkSession, options: Map[String, String]): Configuration =
    session.sessionState.newHadoopConfWithOptions(options)
  /** Strings compare by their UTF-8 bytes: 3.5 has no collations. */
  def comparesAsBytes(t: StringType): Boolean = true
  /** The rows `plan` gives, run (analyzed, optimized, planned) in `session`. */
  def toRdd(session: SparkSession, plan: LogicalPlan): RDD[InternalRow] =
    session.sessionState.executePlan(plan).toRdd

  /**
   * 3.5's validateOptimizedPlan(prev, cur) checks resolution, expression-id uniqueness and
   * the schema, but 3.5 has neither validateNoDanglingReferences nor
   * validateAggregateExpressions: the two checks below stand in for them, so a rewrite
   * Spark 4.x rejects is rejected here too.
   */
  def validateIntegrity(before: LogicalPlan, after: LogicalPlan): Option[String] =
    LogicalPlanIntegrity.validateOptimizedPlan(before, after)
      .orElse(danglingReference(after))
      .orElse(looseAggregateColumn(after))

  /**
   * 4.0's validateNoDanglingReferences, case for case: the first node that can tell its
   * output (commands and caches excepted) must read only attributes its children produce.
   */
  private def danglingReference(plan: LogicalPlan): Option[String] = plan.collectFirst {
    case _: Command | _: MultiInstanceRelation => None
    case n if LogicalPlanIntegrity.canGetOutputAttrs(n) =>
      Option(n.missingInput).filter(_.nonEmpty).map { missing =>
        s"Aliases ${missing.mkString(", ")} are dangling in the references for plan:\n ${n.treeString}"
      }
  }.flatten

  /**
   * An Aggregate whose output reads a column that is neither grouped nor aggregated: the
   * part of 4.0's validateAggregateExpressions (ExprUtils.assertValidAggregation, absent
   * in 3.5) that a rewrite can break.
   */
  private def looseAggregateColumn(plan: LogicalPlan): Option[String] = plan.collectFirst {
    case a: Aggregate =>
      a.aggregateExpressions.flatMap(loose(_, a.groupingExpressions)).headOption.map { c =>
        s"Aggregate: $a is not a valid aggregate expression: $c is neither grouped nor aggregated"
      }
  }.flatten

  private def loose(e: Expression, groups: Seq[Expression]): Seq[Attribute] = e match {
    case _: AggregateExpression | _: SubqueryExpression => Nil
    case _ if groups.exists(_.semanticEquals(e)) => Nil
    case a: Attribute => Seq(a)
    case _ => e.children.flatMap(loose(_, groups))
  }
}
