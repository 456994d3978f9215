package io.sparkext

import scala.util.control.NonFatal

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeMap, Expression, SortOrder}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/** Best-effort names of leaf relations, for plan text and for rule authors. */
private[sparkext] object Relations {
  import org.apache.spark.sql.catalyst.plans.physical.{Partitioning, RangePartitioning, SinglePartition}
  import org.apache.spark.sql.execution.{LogicalRDD, SparkPlan}
  import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec
  import org.apache.spark.sql.execution.columnar.InMemoryRelation
  import org.apache.spark.sql.execution.datasources.LogicalRelation
  import org.apache.spark.sql.execution.datasources.v2.{DataSourceV2Relation, DataSourceV2ScanRelation}
  import org.apache.spark.sql.catalyst.catalog.HiveTableRelation

  /**
   * Whether the leaf's `outputOrdering` holds across partitions, not only within each:
   * Catalyst's logical ordering does not say. Provable for a Range, and for a cached or
   * checkpointed plan whose partitioning is a single partition or a range partitioning
   * that agrees with the ordering. A cached plan read again (a cached view or table, each
   * read analysed anew) has new attribute ids for the same columns, and its ordering is in
   * them: the cached plan's partitioning is read in them too, column by position, as
   * `InMemoryRelation.withOutput` maps its ordering.
   */
  def orderingIsGlobal(p: LogicalPlan, ordering: Seq[SortOrder]): Boolean = try {
    p match {
      case _: org.apache.spark.sql.catalyst.plans.logical.Range => true
      case r: InMemoryRelation =>
        val cached = r.cacheBuilder.cachedPlan
        val ids = AttributeMap(cached.output.zip(r.output))
        def renamed(e: Expression): Expression = e.transform { case a: Attribute => ids.getOrElse(a, a) }
        val partitioning = physical(cached).outputPartitioning match {
          case RangePartitioning(keys, n) if cached.output.length == r.output.length =>
            RangePartitioning(keys.map(k => renamed(k).asInstanceOf[SortOrder]), n)
          case other => other
        }
        provable(partitioning, ordering)
      case r: LogicalRDD => provable(r.outputPartitioning, ordering)
      case _ => false
    }
  } catch { case NonFatal(_) => false }

  /** An adaptive plan says nothing of its partitioning; the plan it settled on does. */
  private def physical(plan: SparkPlan): SparkPlan = plan match {
    case a: AdaptiveSparkPlanExec => a.executedPlan
    case other => other
  }

  private def provable(partitioning: Partitioning, ordering: Seq[SortOrder]): Boolean =
    partitioning match {
      case SinglePartition => true
      case RangePartitioning(keys, _) =>
        keys.nonEmpty && keys.zip(ordering).forall { case (k, o) => k.semanticEquals(o) }
      case other => other.numPartitions == 1
    }

  def name(p: LogicalPlan): String = try {
    p match {
      case r: LogicalRelation => r.catalogTable.map(_.identifier.unquotedString)
        .getOrElse(r.relation.toString)
      case r: DataSourceV2Relation => r.name
      case r: DataSourceV2ScanRelation => r.relation.name
      case r: InMemoryRelation => r.cacheBuilder.tableName.orNull
      case r: HiveTableRelation => r.tableMeta.identifier.unquotedString
      case _ => null
    }
  } catch { case NonFatal(_) => null }
}
