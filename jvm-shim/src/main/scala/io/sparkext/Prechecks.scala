package io.sparkext

import scala.collection.mutable
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.JsonNode

import org.apache.spark.sql.catalyst.expressions.{Alias, And, Attribute, AttributeReference, AttributeSet,
  EqualNullSafe, EqualTo, Expression, IsNull, NamedExpression, WindowExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, Count, Max, Min}
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{DoubleType, FloatType}

/**
 * JVM-side pre-checks a Python rule can declare (`jvm_precheck` in its registration): a
 * necessary condition for the rule to change a plan, tested here before any encoding. When
 * every active rule declares one and none holds, the call is skipped (`skipped_precheck`).
 * A pre-check may say "may change" of a plan the rule leaves alone (that only costs a
 * call); it must never say "cannot change" of a plan the rule would change (one exception,
 * a missed rewrite, never other rows: [[ScanPrechecks]] over Delta).
 *
 * What a pre-check must know of Python's analyses (the window functions they read) comes
 * in the registration document (`prechecks`, sparkext/bridge.py `precheck_vocabulary`):
 * the JVM keeps no list of its own. `ordering`: None when the registration sends none (a
 * rule declaring that pre-check is then refused at registration).
 */
private[sparkext] final class Prechecks(val ordering: Option[OrderingVocabulary]) {
  private val orderingPrecheck = ordering.map(new OrderingPrecheck(_))

  def mayChange(name: String, plan: LogicalPlan): Boolean = name match {
    case Prechecks.Ordering => orderingPrecheck.forall(_.mayChange(plan))
    case Prechecks.TopKScan => ScanPrechecks.topKOverScan(plan)
    case Prechecks.GlobalAggregateScan => ScanPrechecks.globalAggregateOverScan(plan)
    case _ => true
  }
}

/**
 * What the ordering and uniqueness analyses read of window functions (Catalyst class
 * names; sparkext/catalyst_names.py `ORDERING_PRECHECK`): those whose value never
 * decreases along their window's order (row_number, rank, ...), the aggregates that only
 * grow (or only shrink) over a frame from the partition's first row (count, max, min), and
 * the window functions that number a partition's rows apart (row_number: with the
 * partition keys, a unique key).
 */
private[sparkext] final case class OrderingVocabulary(nondecreasing: Set[String],
    runningMonotonic: Set[String], numbering: Set[String])

private[sparkext] object OrderingVocabulary {
  def parse(node: JsonNode): OrderingVocabulary = {
    def names(field: String): Set[String] = node.get(field) match {
      case a if a != null && a.isArray =>
        val out = Set.newBuilder[String]
        a.forEach(n => out += n.asText())
        out.result()
      case _ => throw new IllegalArgumentException(s"the registration's ordering pre-check " +
        s"vocabulary has no '$field': the sparkext Python package and jar differ")
    }
    OrderingVocabulary(names("nondecreasing_window_functions"),
      names("running_monotonic_aggregates"), names("numbering_window_functions"))
  }
}

private[sparkext] object Prechecks {
  /** sparkext's sort rules (`simplify_sort_keys`, `eliminate_sorts`): [[OrderingPrecheck]]. */
  val Ordering = "ordering"
  /** `bound_top_k`: a limit over a global sort whose input is a scan ([[ScanPrechecks]]). */
  val TopKScan = "top_k_scan"
  /** `answer_from_statistics`: an aggregate without grouping over a scan. */
  val GlobalAggregateScan = "global_aggregate_scan"
  val known: Seq[String] = Seq(Ordering, TopKScan, GlobalAggregateScan)

  /** The registration's `prechecks` (null: none sent). */
  def parse(node: JsonNode): Prechecks = {
    val ordering = Option(node).flatMap(n => Option(n.get(Ordering))).filterNot(_.isNull)
    new Prechecks(ordering.map(OrderingVocabulary.parse))
  }
}

/**
 * The statistics rules' pre-checks: the shapes they act on, so that a plan without one
 * costs no listing of files and no footers (their rules need files). Over-approximations
 * of the rules' own matches (sparkext/rules/bound_top_k.py, answer_from_statistics.py):
 * any Limit, Offset or Project between the limit and the sort; Projects, and Filters that
 * read only the partition columns of a file relation, between the sort (or the aggregate)
 * and the relation; for an aggregate, only `min`, `max` and `count` of non-floating values;
 * over a Delta table, the values bounded (the top-K's first key, the min/max arguments) are
 * partition columns or of a type Delta's log may bound exactly ([[LakeFiles.deltaMayBound]]:
 * not timestamps, strings, decimals), else listing its files (a Spark job over its log)
 * would buy nothing but the rare case the rules answer from counts alone (a column of
 * NULLs only, no file at all): there these pre-checks under-approximate, on purpose, and
 * the rewrite is missed (the plan stays as Spark's). The rules check the rest (which
 * columns, which statistics).
 */
private[sparkext] object ScanPrechecks {
  /** Whether `p` is a file scan through Projects and partition-column Filters; `bounded`:
   *  the expressions whose min and max the rule needs, followed through aliases. */
  private def overScan(p: LogicalPlan, filtered: AttributeSet, bounded: Seq[Expression]): Boolean = p match {
    case Project(list, c) =>
      val below = bounded.map {
        case a: Attribute => list.collectFirst {
          case al @ Alias(child: Attribute, _) if al.exprId == a.exprId => child
        }.getOrElse(a)
        case e => e
      }
      overScan(c, filtered, below)
    case Filter(condition, c) => overScan(c, filtered ++ condition.references, bounded)
    case l: LogicalRelation => l.relation match {
      case fs: HadoopFsRelation =>
        // by name, as the relation's partition schema names its columns (a Project
        // renaming one on the way is over-approximated: the rule looks at ids)
        val resolver = SQLConf.get.resolver
        def partition(a: Attribute) = fs.partitionSchema.fieldNames.exists(resolver(_, a.name))
        filtered.forall(partition) && (!RelationFacts.isDelta(fs.location) || bounded.forall {
          case a: Attribute if partition(a) => true  // its values are the partition's
          case e => LakeFiles.deltaMayBound(e.dataType)
        })
      case _ => false  // no files to list
    }
    case _: DataSourceV2Relation => true  // (Iceberg: its partitioning is not read here)
    case _ => false
  }

  private def overSortedScan(p: LogicalPlan): Boolean = p match {
    case s: Sort => s.global && s.order.nonEmpty && overScan(s.child, AttributeSet.empty, Seq(s.order.head.child))
    case _: Project | _: LocalLimit | _: GlobalLimit | _: Offset => overSortedScan(p.children.head)
    case _ => false
  }

  def topKOverScan(plan: LogicalPlan): Boolean = plan.exists {
    case g: GlobalLimit => overSortedScan(g.child)
    case _ => false
  }

  /** `min(x)`, `max(x)`, `count(...)`, without DISTINCT or FILTER, maybe aliased. */
  private def fromStatistics(e: Expression): Boolean = e match {
    case Alias(child, _) => fromStatistics(child)
    case ae: AggregateExpression if !ae.isDistinct && ae.filter.isEmpty =>
      ae.aggregateFunction match {
        case _: Count => true
        case f @ (_: Min | _: Max) => !(f.dataType == FloatType || f.dataType == DoubleType)
        case _ => false
      }
    case _ => false
  }

  /** The arguments of the `min` and `max` in `e`. */
  private def bounded(e: Expression): Seq[Expression] = e.collect {
    case ae: AggregateExpression => ae.aggregateFunction match {
      case f @ (_: Min | _: Max) => f.children
      case _ => Nil
    }
  }.flatten

  def globalAggregateOverScan(plan: LogicalPlan): Boolean = plan.exists {
    case a: Aggregate => a.groupingExpressions.isEmpty &&
      a.aggregateExpressions.forall(fromStatistics) &&
      overScan(a.child, AttributeSet.empty, a.aggregateExpressions.flatMap(bounded))
    case _ => false
  }
}

/**
 * Whether sparkext's sort rules can change `plan`: an over-approximation of the ordering
 * analysis (sparkext/analysis/ordering.py, uniqueness.py) for one common shape only. Every
 * other plan "may change", and Python decides.
 *
 * The shape: from the root down, only `GlobalLimit`, `LocalLimit`, `Project` and `Filter`
 * lead to one `Sort` (nothing above it can override it), and below that Sort there is no
 * other Sort and nothing that makes an order but a `Window`, nor deduplicates rows: every
 * node is a `Project`, `Filter`, `Join`, an `Aggregate` with grouping, a `Window`, a
 * `Union`, `Expand`, `Generate`, `SubqueryAlias`, or a leaf Catalyst gives no
 * `outputOrdering`. Then the only orderings the analysis finds below the Sort are the
 * Windows' (their partition keys, then their order keys, or then a column that never
 * decreases or never increases along those, such as row_number or a running count), and
 * both rules can act only through constants, unique keys and those: `eliminate_sorts`
 * removes the Sort when every key is constant, or a unique key of the input is, or its
 * first non-constant key leads an ordering from below (through a group of equal
 * expressions, or as a monotonic function of it); `simplify_sort_keys` drops a key that is
 * constant once the keys before it tie, or that follows keys covering a unique key.
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
 * finds has all its members in the groups of one Aggregate's grouping expressions, or of
 * a Window's partition keys and its numbering column (`row_number`). A key "may go" when every
 * attribute it reads is in a constant group or in the group of an earlier key (ties); a
 * unique key "may be constant" likewise. The first key "may be
 * ordered" when an attribute it reads is in the group of an attribute a Window's partition
 * or order keys read, or of such a window function's output, unless the Sort is under a
 * limit (a top-K: see `loneSort`). If no key may go, no unique key may be constant at any
 * key and the first key may not be ordered, the sort rules cannot change the plan.
 */
private[sparkext] final class OrderingPrecheck(vocabulary: OrderingVocabulary) {

  def mayChange(plan: LogicalPlan): Boolean = try {
    loneSort(plan, underLimit = false) match {
      case Some((sort, underLimit)) => mayChangeSort(sort, underLimit)
      case None => true
    }
  } catch {
    case NonFatal(_) => true
  }

  /**
   * The Sort the root reaches through limits, projections and filters only, or None; and
   * whether a limit is on that path with only projections and deterministic filters after
   * it. Such a Sort is part of a top-K: `eliminate_sorts` removes it only when every key is
   * constant (its `under_limit`), and `simplify_sort_keys` never reads an order from below,
   * so no Window's order can change it.
   */
  private def loneSort(plan: LogicalPlan, underLimit: Boolean): Option[(Sort, Boolean)] =
    plan match {
      case s: Sort => Some((s, underLimit))
      case _: GlobalLimit | _: LocalLimit => loneSort(plan.children.head, underLimit = true)
      case p: Project => loneSort(p.child, underLimit)
      case f: Filter => loneSort(f.child, underLimit && f.condition.deterministic)
      case _ => None
    }

  private def mayChangeSort(sort: Sort, underLimit: Boolean): Boolean = {
    val facts = new Facts
    if (!facts.collect(sort.child)) return true
    facts.close()
    val key = new Ints
    val orders = sort.order
    var o = 0
    while (o < orders.length) {
      if (facts.aUniqueKeyIsCovered) return true
      key.clear()
      facts.read(orders(o).child, key)
      // reads no attribute, or only constant ones, or ones the keys before it tie
      if (facts.covered(key)) return true
      // the order a Window below makes may be this one (the rest follows only a first key;
      // under a limit, no order from below counts)
      if (o == 0 && !underLimit && facts.ordered(key)) return true
      facts.cover(key)
      o += 1
    }
    false
  }

  /** A growable list of ints (written out: this runs on every query with a Sort, mostly
   *  before the JIT has compiled it, where each layer of collections costs). */
  private final class Ints {
    private var a = new Array[Int](16)
    var length = 0
    def add(x: Int): Unit = {
      if (length == a.length) a = java.util.Arrays.copyOf(a, length * 2)
      a(length) = x
      length += 1
    }
    def apply(i: Int): Int = a(i)
    def clear(): Unit = length = 0
    def toArray: Array[Int] = java.util.Arrays.copyOf(a, length)
  }

  /** Groups of attributes (union-find over slots, one per expression id) and what the
   *  subtree says of them. */
  private final class Facts {
    private val slots = new java.util.HashMap[java.lang.Long, Integer]()
    private var parent = new Array[Int](64)
    /** Per group root, after [[close]]: constant (or, later, tied); made by a Window. */
    private var isCovered = new Array[Boolean](64)
    private var isOrdered = new Array[Boolean](64)
    private var size = 0
    private val constants = new Ints
    /** The attributes the Windows' partition and order keys read. */
    private val windowKeys = new Ints
    /** Per grouped Aggregate: the attributes its grouping expressions read. */
    private val uniqueKeys = new mutable.ArrayBuffer[Array[Int]]()
    private val left = new Ints
    private val right = new Ints

    private def slot(id: Long): Int = {
      val known = slots.get(id)
      if (known != null) return known.intValue
      if (size == parent.length) {
        parent = java.util.Arrays.copyOf(parent, size * 2)
        isCovered = java.util.Arrays.copyOf(isCovered, size * 2)
        isOrdered = java.util.Arrays.copyOf(isOrdered, size * 2)
      }
      parent(size) = size
      slots.put(id, size)
      size += 1
      size - 1
    }

    private def find(s: Int): Int = {
      var k = s
      while (parent(k) != k) {
        parent(k) = parent(parent(k))
        k = parent(k)
      }
      k
    }

    private def link(a: Int, b: Int): Unit = {
      val (ra, rb) = (find(a), find(b))
      if (ra != rb) parent(rb) = ra
    }

    /** Appends the slots of the attributes `e` reads (every AttributeReference in it). */
    def read(e: Expression, out: Ints): Unit = e match {
      case a: AttributeReference => out.add(slot(a.exprId.id))
      case _ =>
        val cs = e.children
        var i = 0
        while (i < cs.length) { read(cs(i), out); i += 1 }
    }

    /** Marks the constant and the ordered groups, once every group is known. */
    def close(): Unit = {
      var i = 0
      while (i < constants.length) { isCovered(find(constants(i))) = true; i += 1 }
      i = 0
      while (i < windowKeys.length) { isOrdered(find(windowKeys(i))) = true; i += 1 }
    }

    def covered(xs: Ints): Boolean = {
      var i = 0
      while (i < xs.length) { if (!isCovered(find(xs(i)))) return false; i += 1 }
      true
    }

    def ordered(xs: Ints): Boolean = {
      var i = 0
      while (i < xs.length) { if (isOrdered(find(xs(i)))) return true; i += 1 }
      false
    }

    def cover(xs: Ints): Unit = {
      var i = 0
      while (i < xs.length) { isCovered(find(xs(i))) = true; i += 1 }
    }

    def aUniqueKeyIsCovered: Boolean =
      uniqueKeys.exists(k => k.forall(s => isCovered(find(s))))

    /** Records `plan`'s facts; false when a node is outside the shape (see above). */
    def collect(plan: LogicalPlan): Boolean = {
      val ok = plan match {
        case Project(list, _) => named(list); true
        case Filter(cond, _) => conjuncts(cond); true
        case j: Join => j.condition.foreach(conjuncts); true
        case a: Aggregate if a.groupingExpressions.nonEmpty =>
          named(a.aggregateExpressions)
          val key = new Ints
          a.groupingExpressions.foreach(read(_, key))
          uniqueKeys += key.toArray
          true
        case w: Window =>
          // Its outputs are no constants and no members of a group. The order it makes
          // counts, by its keys and by the window functions that never decrease along them
          // (row_number, rank, ...; count, max, min over a growing frame: the frame is not
          // read, admitting more only makes more calls), and so do the unique keys
          // row_number makes (numbered 1, 2, ... within a partition: with the partition
          // keys, unique). The functions' names are the registration's vocabulary.
          w.partitionSpec.foreach(read(_, windowKeys))
          w.orderSpec.foreach(read(_, windowKeys))
          w.windowExpressions.foreach {
            case a @ Alias(WindowExpression(f, _), _) =>
              val name = f.getClass.getSimpleName
              val ordered = vocabulary.nondecreasing(name) || (f match {
                case ae: AggregateExpression =>
                  vocabulary.runningMonotonic(ae.aggregateFunction.getClass.getSimpleName)
                case _ => false
              })
              if (ordered) windowKeys.add(slot(a.exprId.id))
              if (vocabulary.numbering(name)) {
                val key = new Ints
                w.partitionSpec.foreach(read(_, key))
                key.add(slot(a.exprId.id))
                uniqueKeys += key.toArray
              }
            case _ =>
          }
          true
        case _: Union | _: Expand | _: Generate | _: SubqueryAlias => true
        case leaf if leaf.children.isEmpty => leaf.outputOrdering.isEmpty
        case _ => false
      }
      ok && plan.children.forall(collect)
    }

    private def named(list: Seq[NamedExpression]): Unit = list.foreach {
      case a: Alias =>
        left.clear()
        read(a.child, left)
        val self = slot(a.exprId.id)
        // `count(1) AS n` reads nothing, yet is no constant: the analysis never takes an
        // aggregate's result for one (it sees many rows).
        if (left.length == 0 && a.child.find(_.isInstanceOf[AggregateExpression]).isEmpty) {
          constants.add(self)
        }
        var i = 0
        while (i < left.length) { link(self, left(i)); i += 1 }
      case _ =>
    }

    private def conjuncts(cond: Expression): Unit = cond match {
      case And(l, r) => conjuncts(l); conjuncts(r)
      case EqualTo(l, r) => equal(l, r)
      case EqualNullSafe(l, r) => equal(l, r)
      case IsNull(x) => read(x, constants)
      case _ =>
    }

    private def equal(l: Expression, r: Expression): Unit = {
      left.clear()
      read(l, left)
      right.clear()
      read(r, right)
      var i = 0
      if (left.length == 0) while (i < right.length) { constants.add(right(i)); i += 1 }
      i = 0
      if (right.length == 0) while (i < left.length) { constants.add(left(i)); i += 1 }
      // one group for both sides: every attribute joins the first one read
      val first = if (left.length > 0) left(0) else if (right.length > 0) right(0) else -1
      i = 0
      while (i < left.length) { link(first, left(i)); i += 1 }
      i = 0
      while (i < right.length) { link(first, right(i)); i += 1 }
    }
  }
}
