package io.sparkext

import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.atomic.AtomicLong

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.JsonNode

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{InterpretedOrdering, OuterReference, SortOrder}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Sort}

import io.sparkext.shims.SparkShim

/**
 * The facts about rows that sparkext's ordering rules relied on to remove a sort or drop
 * sort keys (`sparkext.optimizer.OrderFact`), kept when Python sends them (only with
 * `SPARKEXT_CHECK_ORDER_FACTS=1`: sparkext's own test suite and fuzzer) and checked on
 * the rows by [[check]], which a test harness calls after its queries with the session's
 * rules switched off. An analysis can be wrong in a way no row comparison of the query
 * shows (the rows came out in order by luck): here each fact is checked on the input of
 * the very sort it was about. Test support only: nothing records facts otherwise.
 */
object OrderFacts {

  /** `sort`'s input is in its order (`kept` None), or its keys outside `kept` never decide. */
  final case class Fact(rule: String, sort: Sort, kept: Option[Seq[Int]])

  /** At most this many facts wait to be checked; more are counted in [[dropped]]. */
  private val Capacity = 10000
  /** Rows of one sort's input read for a check, at most (test data is small). */
  private val MaxRows = 200000

  private val waiting = new ConcurrentLinkedQueue[Fact]()
  private val size = new AtomicLong()
  private val dropped = new AtomicLong()
  private val checked = new AtomicLong()
  private val skipped = new AtomicLong()
  private val failed = new AtomicLong()

  /** Keeps the facts of an answer (`"facts"`: rule, sort plan, kept key indices or null). */
  private[sparkext] def record(facts: JsonNode, rebuild: JsonNode => LogicalPlan): Unit = {
    if (facts == null || !facts.isArray) return
    facts.asScala.foreach { f =>
      rebuild(f.get("sort")) match {
        case s: Sort if size.incrementAndGet() <= Capacity =>
          val kept = Option(f.get("kept")).filterNot(_.isNull).map(_.asScala.map(_.asInt).toSeq)
          waiting.add(Fact(f.get("rule").asText(), s, kept))
        case _: Sort => size.decrementAndGet(); dropped.incrementAndGet()
        case other => throw new IllegalArgumentException(s"a fact names no sort: ${other.nodeName}")
      }
    }
  }

  /**
   * Checks, then forgets, every fact recorded so far: runs each sort's input in `session`
   * (switch sparkext off in it first) and returns one line per fact the rows contradict.
   * A fact about a subquery's plan that reads the outer query's columns cannot run alone,
   * and is skipped.
   */
  def check(session: SparkSession): java.util.List[String] = {
    val out = new java.util.ArrayList[String]()
    var f = waiting.poll()
    while (f != null) {
      size.decrementAndGet()
      val child = f.sort.child
      if (child.exists(_.expressions.exists(_.exists(_.isInstanceOf[OuterReference])))) {
        skipped.incrementAndGet()
      } else {
        checked.incrementAndGet()
        val problem = try contradiction(f, partitions(session, child)) catch {
          case NonFatal(e) => Some(s"its input could not be run: $e")
        }
        problem.foreach { p =>
          failed.incrementAndGet()
          out.add(s"${f.rule} relied on a fact the rows contradict: $p\n${f.sort.treeString}")
        }
      }
      f = waiting.poll()
    }
    out
  }

  /** Facts checked, skipped, failed and dropped since the JVM started (for a summary). */
  def summary(): String =
    s"checked=${checked.get} skipped=${skipped.get} failed=${failed.get} dropped=${dropped.get}"

  private def partitions(session: SparkSession, plan: LogicalPlan): Array[Array[InternalRow]] =
    SparkShim.toRdd(session, plan)
      .mapPartitions(rows => Iterator(rows.take(MaxRows).map(_.copy()).toArray))
      .collect()

  private def contradiction(f: Fact, parts: Array[Array[InternalRow]]): Option[String] = {
    val order = f.sort.order
    val output = f.sort.child.output
    def ordering(keys: Seq[SortOrder]) = new InterpretedOrdering(keys, output)
    f.kept match {
      case None =>
        // The rows come in the sort's order: across partitions, or within each.
        val runs = if (f.sort.global) Array(parts.flatten) else parts
        val cmp = ordering(order)
        runs.iterator.flatMap(run => run.sliding(2).filter(_.length == 2))
          .collectFirst { case Array(a, b) if cmp.compare(a, b) > 0 =>
            s"its input is not in ${if (f.sort.global) "" else "each partition's "}order " +
              s"[${order.map(_.sql).mkString(", ")}]: ${show(a, output)} comes before ${show(b, output)}"
          }
      case Some(kept) =>
        // In the full order, rows that tie on every key before a dropped one form runs:
        // the dropped key must not change within them (kept keys determine earlier
        // dropped ones, so tying on the kept keys before it is tying on all before it).
        val rows = parts.flatten.sortWith((a, b) => ordering(order).compare(a, b) < 0)
        val dropped = order.indices.filterNot(kept.contains)
        val prefix = dropped.map(j => ordering(kept.filter(_ < j).map(order)))
        val key = dropped.map(j => ordering(Seq(order(j))))
        rows.sliding(2).filter(_.length == 2).flatMap { case Array(a, b) =>
          dropped.indices.collectFirst {
            case i if prefix(i).compare(a, b) == 0 && key(i).compare(a, b) != 0 =>
              s"the dropped key ${order(dropped(i)).child.sql} differs between two rows that " +
                s"tie on the kept keys before it: ${show(a, output)} and ${show(b, output)}"
          }
        }.toSeq.headOption
    }
  }

  private def show(row: InternalRow, output: Seq[org.apache.spark.sql.catalyst.expressions.Attribute]) =
    output.zipWithIndex.map { case (a, i) => s"${a.name}=${if (row.isNullAt(i)) "NULL" else row.get(i, a.dataType)}" }
      .mkString("[", ", ", "]")
}
