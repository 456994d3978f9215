package io.sparkext.shims

import org.apache.spark.sql.ExtendedExplainGenerator
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.sparkext.SparkextConf

import io.sparkext.QueryReport

/**
 * The `sparkext` section of `EXPLAIN EXTENDED` / `df.explain("extended")`, through
 * `spark.sql.extendedExplainProviders` (SPARK-47289, Spark 4.0+; 3.5 has no such hook and
 * its ExplainShim does nothing).
 */
object ExplainShim {
  private val Key = "spark.sql.extendedExplainProviders"

  /**
   * Adds [[SparkextExplain]] to the session's providers (kept when the user set others).
   * Spark reads the list at every explain, so setting it in the session suffices.
   */
  def register(conf: SQLConf): Unit = {
    val name = classOf[SparkextExplain].getName
    val current = conf.getConfString(Key, "").trim
    if (!current.split(",").map(_.trim).contains(name)) {
      conf.setConfString(Key, if (current.isEmpty) name else s"$current,$name")
    }
  }
}

/** Spark builds one per explain, by name, with no arguments. */
class SparkextExplain extends ExtendedExplainGenerator {
  override def title: String = "sparkext"

  /**
   * Spark prints the section's header whatever this returns, so an explain with no report
   * (the session switched sparkext off, or no rule was registered when it was planned)
   * says so in one line rather than leaving the header empty.
   */
  override def generateExtendedInfo(plan: SparkPlan): String =
    QueryReport.render(reports(plan)) match {
      case "" if !SparkextConf.enabled(SQLConf.get) =>
        s"sparkext is off in this session (${SparkextConf.Enabled}=false): " + QueryReport.NoRuleRan
      case "" => QueryReport.NoRuleRan
      case text => text
    }

  private def reports(plan: SparkPlan): Seq[QueryReport] = {
    val logical = Seq.newBuilder[LogicalPlan]
    val direct = Seq.newBuilder[QueryReport]
    def visit(p: SparkPlan): Unit = {
      p.logicalLink.foreach(logical += _)
      p match {
        case a: AdaptiveSparkPlanExec =>
          // the query's own report: AQE keeps the QueryExecution that planned it
          QueryReport.of(a.context.qe.tracker).foreach(direct += _)
          logical += a.context.qe.optimizedPlan
          visit(a.inputPlan)
        case _ =>
      }
      p.children.foreach(visit)
      p.subqueries.foreach(visit)
    }
    visit(plan)
    direct.result() ++ logical.result().flatMap(QueryReport.in)
  }
}
