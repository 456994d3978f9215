package io.sparkext

import scala.collection.mutable

import org.slf4j.LoggerFactory

import org.apache.spark.sql.catalyst.QueryPlanningTracker
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.PlanChangeLogger
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.internal.SQLConf

/**
 * What sparkext did in one query, for the `sparkext` section of Spark's extended explain
 * (`ExplainShim`, Spark 4.x): per Python rule, how often it ran and changed the plan, its
 * time in Python, why it changed something (`sparkext.because`) and why a change was
 * refused; per guard, what it decided. One report per query, known by the planning
 * tracker of the thread optimizing it (its subqueries and every optimizer call share it);
 * the plans the calls return carry it in [[QueryReport.Tag]], so the explain finds it from
 * the plan it is given.
 */
final class QueryReport {
  private final class Entry {
    var invocations = 0L
    var effective = 0L
    var nanos = 0L
    val because = mutable.LinkedHashSet.empty[String]
    val refusals = mutable.LinkedHashSet.empty[String]
  }
  private val rules = mutable.LinkedHashMap.empty[String, Entry]
  private val notes = mutable.LinkedHashSet.empty[String]
  /** Each guard's decisions on the query's units: (guard, decision, reason), each once. */
  private val guards = mutable.LinkedHashSet.empty[(String, String, String)]

  private def entry(rule: String): Entry = rules.getOrElseUpdate(rule, new Entry)

  def ran(rule: String, invocations: Long, effective: Long, nanos: Long): Unit = synchronized {
    val e = entry(rule)
    e.invocations += invocations
    e.effective += effective
    e.nanos += nanos
  }

  def because(rule: String, reason: String): Unit = synchronized(entry(rule).because += reason)

  def refused(rule: String, reason: String): Unit = synchronized(entry(rule).refusals += reason)

  /** A guard's decision on one of the query's units ([[Guards]]). */
  def guard(name: String, decision: String, reason: String): Unit = synchronized {
    guards += ((name, decision, reason))
  }

  /** A note: a call that failed without naming a rule, one that did not reach Python, a
   *  batch that did not converge. Whether it is new to this query's report. */
  def note(message: String): Boolean = synchronized(notes.add(message))

  def render: String = synchronized {
    val out = new StringBuilder
    if (rules.isEmpty && guards.isEmpty) out ++= QueryReport.NoRuleRan
    rules.foreach { case (name, e) =>
      val changed = if (e.effective == 0) "unchanged" else s"changed the plan ${e.effective}x"
      val ms = f"${e.nanos / 1e6}%.3f"
      out ++= s"$name: ran ${e.invocations}x, $changed, $ms ms\n"
      e.because.foreach(r => out ++= s"  because: $r\n")
      e.refusals.foreach(r => out ++= s"  refused: $r\n")
    }
    guards.foreach { case (name, decision, reason) =>
      val did = QueryReport.Decided.getOrElse(decision, decision)
      out ++= s"guard $name: $did" + (if (reason.isEmpty) "\n" else s": $reason\n")
    }
    notes.foreach(n => out ++= s"note: $n\n")
    out.toString
  }
}

object QueryReport {
  /** What a report without rules or guards says. */
  val NoRuleRan = "no Python rule ran\n"

  val Tag: TreeNodeTag[QueryReport] = TreeNodeTag[QueryReport]("sparkext.report")

  /** How the explain words a guard's decision ([[Decision]]). */
  private val Decided = Map(Decision.Allow -> "allowed", Decision.Refuse -> "refused",
    Decision.Warn -> "would refuse (warn mode)", Decision.Error -> "failed (refused)")

  private val byQuery = new java.util.WeakHashMap[QueryPlanningTracker, QueryReport]()

  /** The report of the query being optimized on this thread (a new one outside a query). */
  def current(): QueryReport = QueryPlanningTracker.get match {
    case Some(t) => byQuery.synchronized {
      var r = byQuery.get(t)
      if (r == null) { r = new QueryReport; byQuery.put(t, r) }
      r
    }
    case None => new QueryReport
  }

  /** The report of the query `tracker` planned, if sparkext took part in it. */
  def of(tracker: QueryPlanningTracker): Option[QueryReport] =
    byQuery.synchronized(Option(byQuery.get(tracker)))

  /** The reports the plans in `plan` (and their subqueries) carry, each once. */
  def in(plan: LogicalPlan): Seq[QueryReport] = {
    val tagged = plan.collectWithSubqueries { case p if p.getTagValue(Tag).isDefined => p.getTagValue(Tag).get }
    tagged.foldLeft(List.empty[QueryReport])((acc, r) => if (acc.exists(_ eq r)) acc else r :: acc).reverse
  }

  /** Renders several reports (a query's parts, found apart) as one. */
  def render(reports: Seq[QueryReport]): String =
    reports.foldLeft(List.empty[QueryReport])((acc, r) => if (acc.exists(_ eq r)) acc else r :: acc)
      .reverse.map(_.render).mkString
}

/**
 * Catalyst's plan change log for Python rules: when `spark.sql.planChangeLog.level` makes
 * Catalyst's `PlanChangeLogger` print, each Python rule's change is logged under the rule's
 * own name (`sparkext:<rule>`), as a native rule's is. The bridge then asks Python for the
 * plan after each change (the request's `trace`); otherwise that is never paid for.
 */
object PlanChangeLog {
  private val logger = LoggerFactory.getLogger(classOf[PlanChangeLogger[_]].getName.stripSuffix("$"))

  def ruleName(rule: String): String = s"sparkext:$rule"

  /** Whether Catalyst's plan change logger would print a Python rule's change now. */
  def active(conf: SQLConf): Boolean = {
    val rulesConf = conf.getConfString("spark.sql.planChangeLog.rules", "").trim
    val named = rulesConf.isEmpty ||
      rulesConf.split(",").exists(_.trim.startsWith(ruleName("")))
    named && (conf.getConfString("spark.sql.planChangeLog.level", "trace").trim.toLowerCase match {
      case "error" => logger.isErrorEnabled
      case "warn" => logger.isWarnEnabled
      case "info" => logger.isInfoEnabled
      case "debug" => logger.isDebugEnabled
      case _ => logger.isTraceEnabled
    })
  }

  /** Logs each step `(rule, plan after it)`, the first one's before being `input`. */
  def log(input: LogicalPlan, steps: Seq[(String, LogicalPlan)]): Unit = {
    val changes = new PlanChangeLogger[LogicalPlan]()
    steps.foldLeft(input) { case (before, (rule, after)) =>
      changes.logRule(ruleName(rule), before, after)
      after
    }
  }
}
