package io.sparkext

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.spark.sql.catalyst.expressions.{Alias, And, AttributeReference, EqualNullSafe,
  EqualTo, Expression, IsNull, NamedExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.logical._

/**
 * JVM-side pre-checks a Python rule can declare (`jvm_precheck` in its registration): a
 * necessary condition for the rule to change a plan, tested here before any encoding. When
 * every active rule declares one and none holds, the call is skipped (`skipped_precheck`).
 * A pre-check may say "may change" of a plan the rule leaves alone (that only costs a
 * call); it must never say "cannot change" of a plan the rule would change.
 */
private[sparkext] object Prechecks {
  /** sparkext's sort rules (`simplify_sort_keys`, `eliminate_sorts`): [[OrderingPrecheck]]. */
  val Ordering = "ordering"
  val known: Seq[String] = Seq(Ordering)

  def mayChange(name: String, plan: LogicalPlan): Boolean = name match {
    case Ordering => OrderingPrecheck.mayChange(plan)
    case _ => true
  }
}

/**
 * Whether sparkext's sort rules can change `plan`: an over-approximation of the ordering
 * analysis (sparkext/ordering.py, sparkext/uniqueness.py) for one common shape only. Every
 * other plan "may change", and Python decides.
 *
 * The shape: from the root down, only `GlobalLimit`, `LocalLimit`, `Project` and `Filter`
 * lead to one `Sort` (nothing above it can override it), and below that Sort there is no
 * other Sort and nothing that makes or keeps an order, repeats or deduplicates rows:
 * every node is a `Project`, `Filter`, `Join`, an `Aggregate` with grouping, a `Union`,
 * `Expand`, `Generate`, `SubqueryAlias`, or a leaf Catalyst gives no `outputOrdering`. Then
 * the Sort's input has no ordering in the analysis, and both rules can act only through
 * constants and unique keys: `eliminate_sorts` removes the Sort when every key is constant
 * or a unique key of the input is, `simplify_sort_keys` drops a key that is constant once
 * the keys before it tie, or that follows keys covering a unique key.
 *
 * Over-approximated with groups of attributes (union-find over expression ids, the whole
 * subtree at once, whatever node the fact holds at): every alias joins its attribute to the
 * attributes its expression reads, every `=` or `<=>` conjunct of a filter or join
 * condition joins the attributes of its two sides; a group is "constant" when one member is
 * an alias of an expression that reads no attribute (and holds no aggregate), is compared
 * by `=` or `<=>` with an expression that reads none, or is tested by `IS NULL`. (The
 * analysis learns equalities and constants from these alone, and a constant's group-mates
 * and functions of constants are constant: all inside the constant groups.) Whatever it finds
 * constant then reads only attributes of constant groups (or none), and every unique key it
 * finds has all its members in the groups of one Aggregate's grouping expressions. A key
 * "may go" when every attribute it reads is in a constant group or in the group of an
 * earlier key (ties); a unique key "may be constant" likewise. If no key may go and no
 * unique key may be constant at any key, the sort rules cannot change the plan.
 */
private[sparkext] object OrderingPrecheck {

  def mayChange(plan: LogicalPlan): Boolean = try {
    loneSort(plan) match {
      case Some(sort) => mayChangeSort(sort)
      case None => true
    }
  } catch {
    case NonFatal(_) => true
  }

  /** The Sort the root reaches through limits, projections and filters only, or None. */
  private def loneSort(plan: LogicalPlan): Option[Sort] = plan match {
    case s: Sort => Some(s)
    case _: GlobalLimit | _: LocalLimit | _: Project | _: Filter => loneSort(plan.children.head)
    case _ => None
  }

  private def mayChangeSort(sort: Sort): Boolean = {
    val facts = new Facts
    if (!facts.collect(sort.child)) return true
    val cover = new mutable.LongMap[Unit]()
    facts.constantGroups.foreach(g => cover.update(g, ()))
    val key = new mutable.ArrayBuffer[Long]()
    for (order <- sort.order) {
      if (facts.uniqueKeys.exists(_.forall(id => cover.contains(facts.find(id))))) return true
      key.clear()
      Facts.read(order.child, key)
      // reads no attribute, or only constant ones, or ones the keys before it tie
      if (key.forall(id => cover.contains(facts.find(id)))) return true
      key.foreach(id => cover.update(facts.find(id), ()))
    }
    false
  }

  private object Facts {
    /** The ids of the attributes `e` reads (every AttributeReference in it). */
    def read(e: Expression, out: mutable.ArrayBuffer[Long]): Unit = e match {
      case a: AttributeReference => out += a.exprId.id
      case _ => e.children.foreach(read(_, out))
    }
  }

  /** Groups of attributes and what the subtree says of them. */
  private final class Facts {
    private val parent = new mutable.LongMap[Long]()
    private val constant = new mutable.ArrayBuffer[Long]()
    private val scratch = new mutable.ArrayBuffer[Long]()
    /** Per grouped Aggregate: the attributes its grouping expressions read. */
    val uniqueKeys = new mutable.ArrayBuffer[Array[Long]]()

    def find(id: Long): Long = {
      var k = id
      var p = parent.getOrElse(k, k)
      while (p != k) {
        val gp = parent.getOrElse(p, p)
        parent.update(k, gp)
        k = p
        p = gp
      }
      k
    }

    private def link(a: Long, b: Long): Unit = {
      val (ra, rb) = (find(a), find(b))
      if (ra != rb) parent.update(rb, ra)
    }

    private def ids(e: Expression): mutable.ArrayBuffer[Long] = {
      scratch.clear()
      Facts.read(e, scratch)
      scratch
    }

    def constantGroups: Iterator[Long] = constant.iterator.map(find)

    /** Records `plan`'s facts; false when a node is outside the shape (see above). */
    def collect(plan: LogicalPlan): Boolean = {
      val ok = plan match {
        case Project(list, _) => named(list); true
        case Filter(cond, _) => conjuncts(cond); true
        case j: Join => j.condition.foreach(conjuncts); true
        case a: Aggregate if a.groupingExpressions.nonEmpty =>
          named(a.aggregateExpressions)
          val key = new mutable.ArrayBuffer[Long]()
          a.groupingExpressions.foreach(Facts.read(_, key))
          uniqueKeys += key.toArray
          true
        case _: Union | _: Expand | _: Generate | _: SubqueryAlias => true
        case leaf if leaf.children.isEmpty => leaf.outputOrdering.isEmpty
        case _ => false
      }
      ok && plan.children.forall(collect)
    }

    private def named(list: Seq[NamedExpression]): Unit = list.foreach {
      case a: Alias =>
        val read = ids(a.child)
        // `count(1) AS n` reads nothing, yet is no constant: the analysis never takes an
        // aggregate's result for one (it sees many rows).
        if (read.isEmpty && a.child.find(_.isInstanceOf[AggregateExpression]).isEmpty) {
          constant += a.exprId.id
        }
        read.foreach(link(a.exprId.id, _))
      case _ =>
    }

    private def conjuncts(cond: Expression): Unit = cond match {
      case And(l, r) => conjuncts(l); conjuncts(r)
      case EqualTo(l, r) => equal(l, r)
      case EqualNullSafe(l, r) => equal(l, r)
      case IsNull(x) => constant ++= ids(x)
      case _ =>
    }

    private def equal(l: Expression, r: Expression): Unit = {
      val li = ids(l).toArray
      val ri = ids(r)
      if (li.isEmpty) constant ++= ri
      if (ri.isEmpty) constant ++= li
      val all = li ++ ri
      all.foreach(link(all(0), _))
    }
  }
}
