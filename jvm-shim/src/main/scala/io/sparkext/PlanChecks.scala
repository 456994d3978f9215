package io.sparkext

import scala.reflect.ClassTag

import org.apache.spark.sql.catalyst.expressions.{Attribute, ExprId, Expression, RowOrdering, SortOrder, WindowExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.types.{BooleanType, IntegerType}

import io.sparkext.shims.SparkShim

/**
 * The checks Catalyst's analyzer (`CheckAnalysis`) makes on a node and neither a node's
 * `resolved` nor `LogicalPlanIntegrity` repeats: a plan Python builds skips the analyzer,
 * so without them a `Filter(1)` or a `GlobalLimit(-5)` is accepted and then fails the
 * query inside Spark, which blames itself. One row per node kind the mirror can build
 * (`sparkext/plan.py`); kinds without a row (Project, Union, Distinct, Deduplicate,
 * SubqueryAlias, RebalancePartitions) have nothing the other checks miss.
 */
private[sparkext] object PlanChecks {

  /**
   * A check on nodes of one class: what must hold, and the offending part when it does not
   * (given the plan Spark made, which passed the analyzer).
   */
  private final case class Check(node: Class[_], must: String, violation: (LogicalPlan, Input) => Option[Any])

  private def check[T <: LogicalPlan](must: String)(violation: T => Option[Any])(implicit t: ClassTag[T]): Check =
    Check(t.runtimeClass, must, (p, _) => violation(p.asInstanceOf[T]))

  private def checkWith[T <: LogicalPlan](must: String)(violation: (T, Input) => Option[Any])(
      implicit t: ClassTag[T]): Check =
    Check(t.runtimeClass, must, (p, in) => violation(p.asInstanceOf[T], in))

  /** What the input plan says that a node's check may need. */
  private final class Input(before: LogicalPlan) {
    /**
     * The map-typed keys Spark's own Aggregates group by: Spark 4.x's optimizer made them
     * groupable (`InsertMapSortInGroupingExpressions`: a `mapsort` of the map, often a
     * `_groupingmapsort` column of a LocalRelation once ConvertToLocalRelation has folded
     * it). A rewrite may keep them, not add a raw map, which would group by layout.
     */
    lazy val normalisedMapKeys: Set[ExprId] = before.collect {
      case a: Aggregate => a.groupingExpressions.collect {
        case k: Attribute if !RowOrdering.isOrderable(k.dataType) => k.exprId
      }
    }.flatten.toSet
  }

  private def notBoolean(e: Expression): Option[Expression] =
    Some(e).filter(_.dataType != BooleanType)

  /** `checkLimitLikeClause`: a foldable, non-null, non-negative INT. */
  private def badLimit(e: Expression): Option[Expression] =
    Some(e).filter(_ => !e.foldable || e.dataType != IntegerType || {
      val v = e.eval()
      v == null || v.asInstanceOf[Int] < 0
    })

  /** A sort key that is not a SortOrder, or whose type has no ordering (a map). */
  private def unorderable(keys: Seq[Expression]): Option[Expression] = keys.find {
    case s: SortOrder => !RowOrdering.isOrderable(s.dataType)
    case _ => true
  }

  private def aggregateOrWindow(es: Seq[Expression]): Option[Expression] =
    es.find(_.exists(e => e.isInstanceOf[AggregateExpression] || e.isInstanceOf[WindowExpression]))

  /**
   * A map-typed grouping key Spark 4.x groups correctly: one its optimizer normalised
   * (`InsertMapSortInGroupingExpressions`: `mapsort`, alone or inside an array's or a
   * struct's transform), or a key Spark's own plan grouped by ([[Input]]). A raw map
   * column would be grouped by its physical layout: two equal maps could fall apart.
   * Spark 3.5 groups by no map at all.
   */
  private def normalisedMap(e: Expression, in: Input): Boolean = SparkShim.groupsMaps && (e match {
    case a: Attribute => in.normalisedMapKeys.contains(a.exprId)
    case other => other.exists(_.getClass.getSimpleName == "MapSort")
  })

  /** Sample's constructor allows this much rounding (spark-core's `RandomSampler.roundingEpsilon`). */
  private val Epsilon = 1e-6

  private val table: Seq[Check] = Seq(
    check[Filter]("have a boolean condition")(f => notBoolean(f.condition)),
    check[Filter]("have no aggregate or window function in its condition")(f => aggregateOrWindow(Seq(f.condition))),
    check[Join]("have a boolean condition")(j => j.condition.flatMap(notBoolean)),
    check[Join]("have no aggregate or window function in its condition")(j => aggregateOrWindow(j.condition.toSeq)),
    check[GlobalLimit]("have a foldable non-negative INT limit")(l => badLimit(l.limitExpr)),
    check[LocalLimit]("have a foldable non-negative INT limit")(l => badLimit(l.limitExpr)),
    check[Sort]("sort by orderable SortOrder keys")(s => unorderable(s.order)),
    check[Window]("order by orderable SortOrder keys")(w => unorderable(w.orderSpec)),
    // Besides window expressions, Spark's own decorrelation (DecorrelateInnerQuery, a
    // window in a correlated subquery) lists the child's columns it must carry up to the
    // join condition: the analyzer has no check here, and the planner takes both.
    check[Window]("have only window expressions and its child's columns")(w =>
      w.windowExpressions.find {
        case a: Attribute => !w.child.outputSet.contains(a)
        case e => e.collectFirst { case x: WindowExpression => x }.isEmpty
      }),
    check[RepartitionByExpression]("range-partition by orderable SortOrder keys")(r =>
      if (r.partitionExpressions.exists(_.isInstanceOf[SortOrder])) unorderable(r.partitionExpressions) else None),
    check[Repartition]("have a positive number of partitions")(r => Some(r.numPartitions).filter(_ <= 0)),
    // CheckAnalysis's checkValidGroupingExprs.
    check[Aggregate]("have no aggregate or window function in its grouping expressions")(a =>
      aggregateOrWindow(a.groupingExpressions)),
    checkWith[Aggregate]("group by orderable types (a map only as Catalyst normalised it)")((a, in) =>
      a.groupingExpressions.find(e => !RowOrdering.isOrderable(e.dataType) && !normalisedMap(e, in))),
    check[Aggregate]("group by deterministic expressions")(a => a.groupingExpressions.find(!_.deterministic)),
    check[Generate]("have a generator that outputs its generator output")(g =>
      Some(g.generator).filter(_.elementSchema.length != g.generatorOutput.length)),
    check[Expand]("have projections of its output's length and types")(e => e.projections.find(p =>
      p.length != e.output.length ||
        p.zip(e.output).exists { case (x, a) => !DataTypeUtils.sameType(x.dataType, a.dataType) })),
    check[Sample]("have bounds with 0 <= lower <= upper (<= 1 without replacement)")(s =>
      Some((s.lowerBound, s.upperBound)).filter(_ => s.lowerBound < -Epsilon ||
        s.upperBound - s.lowerBound < -Epsilon || (!s.withReplacement && s.upperBound > 1 + Epsilon)))
  )

  private val byClass: Map[Class[_], Seq[Check]] = table.groupBy(_.node)

  /**
   * The first failed check of a node of `after` that `before` does not hold (Spark's own
   * nodes passed the analyzer already), as "Filter must have a boolean condition: 1".
   */
  def problem(before: LogicalPlan, after: LogicalPlan): Option[String] = {
    val original = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap[LogicalPlan, java.lang.Boolean]())
    before.foreach(original.add)
    val input = new Input(before)
    after.collectFirst(Function.unlift { (p: LogicalPlan) =>
      if (original.contains(p)) None
      else {
        val problems = byClass.getOrElse(p.getClass, Nil).iterator.flatMap(c => c.violation(p, input).map(v =>
          s"${p.nodeName} must ${c.must}: $v"))
        if (problems.hasNext) Some(problems.next()) else None // no nextOption in Scala 2.12
      }
    })
  }
}
