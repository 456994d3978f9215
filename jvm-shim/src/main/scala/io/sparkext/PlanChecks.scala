package io.sparkext

import scala.reflect.ClassTag

import org.apache.spark.sql.catalyst.expressions.{Expression, RowOrdering, SortOrder, WindowExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.types.{BooleanType, IntegerType}

/**
 * The checks Catalyst's analyzer (`CheckAnalysis`) makes on a node and neither a node's
 * `resolved` nor `LogicalPlanIntegrity` repeats: a plan Python builds skips the analyzer,
 * so without them a `Filter(1)` or a `GlobalLimit(-5)` is accepted and then fails the
 * query inside Spark, which blames itself. One row per node kind the mirror can build
 * (`sparkext/plan.py`); kinds without a row (Project, Union, Distinct, Deduplicate,
 * SubqueryAlias, RebalancePartitions) have nothing the other checks miss.
 */
private[sparkext] object PlanChecks {

  /** A check on nodes of one class: what must hold, and the offending part when it does not. */
  private final case class Check(node: Class[_], must: String, violation: LogicalPlan => Option[Any])

  private def check[T <: LogicalPlan](must: String)(violation: T => Option[Any])(implicit t: ClassTag[T]): Check =
    Check(t.runtimeClass, must, p => violation(p.asInstanceOf[T]))

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
    check[Window]("have only window expressions")(w => w.windowExpressions.find(_.collectFirst {
      case e: WindowExpression => e
    }.isEmpty)),
    check[RepartitionByExpression]("range-partition by orderable SortOrder keys")(r =>
      if (r.partitionExpressions.exists(_.isInstanceOf[SortOrder])) unorderable(r.partitionExpressions) else None),
    check[Repartition]("have a positive number of partitions")(r => Some(r.numPartitions).filter(_ <= 0)),
    // CheckAnalysis's checkValidGroupingExprs.
    check[Aggregate]("have no aggregate or window function in its grouping expressions")(a =>
      aggregateOrWindow(a.groupingExpressions)),
    check[Aggregate]("group by orderable types")(a =>
      a.groupingExpressions.find(e => !RowOrdering.isOrderable(e.dataType))),
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
    after.collectFirst(Function.unlift { (p: LogicalPlan) =>
      if (original.contains(p)) None
      else {
        val problems = byClass.getOrElse(p.getClass, Nil).iterator.flatMap(c => c.violation(p).map(v =>
          s"${p.nodeName} must ${c.must}: $v"))
        if (problems.hasNext) Some(problems.next()) else None // no nextOption in Scala 2.12
      }
    })
  }
}
