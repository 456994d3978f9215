package io.sparkext

import java.lang.ref.WeakReference
import java.nio.charset.StandardCharsets
import java.util.concurrent.atomic.{AtomicLong, AtomicReference}

import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.QueryPlanningTracker
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.trees.TreePattern

import org.apache.spark.sql.sparkext.{SparkextConf => Conf}

import io.sparkext.shims.SparkShim

/** Raised instead of a warning when `spark.sparkext.strict=true`. */
class SparkextException(message: String, cause: Throwable = null)
  extends RuntimeException(message, cause)

/** Where the bridge sits in Catalyst's optimizer. */
sealed abstract class Position(val name: String)
object Position {
  /** `injectPreCBORule`: once per query, after Catalyst's operator optimization. */
  case object Once extends Position("once")
  /** `injectOptimizerRule`: inside Catalyst's fixed-point operator-optimization batches. */
  case object FixedPoint extends Position("fixed_point")

  def parse(s: String): Position = s match {
    case "once" => Once
    case "fixed_point" => FixedPoint
    case other => throw new IllegalArgumentException(
      s"unknown rule position '$other' (expected 'once' or 'fixed_point')")
  }
}

/**
 * One registered Python rule as the JVM needs to know it: for exclusion and skipping.
 * `onlyWhenCatalystExcludes`: the Catalyst rules (short names) it duplicates; when that is
 * not empty, the rule runs only while at least one of them is in
 * `spark.sql.optimizer.excludedRules` (with all of them active it has nothing to add).
 * `precheck`: the name of a JVM-side necessary condition for the rule to change a plan
 * ([[Prechecks]]), or None.
 */
final case class RuleInfo(name: String, position: Position, patterns: Seq[TreePattern.Value],
    onlyWhenCatalystExcludes: Seq[String] = Nil, precheck: Option[String] = None,
    needs: Set[String] = Set.empty) {
  def activeWith(catalystExcluded: Set[String]): Boolean =
    onlyWhenCatalystExcludes.isEmpty || onlyWhenCatalystExcludes.exists(catalystExcluded.contains)
  /** Whether the rule may act on `plan` (it declares no patterns, or `plan` holds one). */
  def mayMatch(plan: LogicalPlan): Boolean = patterns.isEmpty || plan.containsAnyPattern(patterns: _*)
}

/**
 * The rules of one position that run under one setting of `spark.sparkext.excludedRules`
 * (`excluded`) and of `spark.sql.optimizer.excludedRules` (`catalystExcluded`, short
 * names), and what the JVM's skip tests: `patterns`, the tree patterns of which a plan must
 * hold one for any of them to match, or None when one of them declares none (it may match
 * anything); `allPrechecked`, whether each declares a JVM pre-check (then a plan none of
 * them may act on, [[mayAct]], needs no call), run with the registration's `prechecks`.
 */
final class ActiveRules private (val excludedText: String, val catalystText: String,
    val excluded: Set[String], val catalystExcluded: Seq[String], val rules: Seq[RuleInfo],
    val prechecks: Prechecks) {
  val patterns: Option[Seq[TreePattern.Value]] =
    if (rules.forall(_.patterns.nonEmpty)) Some(rules.flatMap(_.patterns).distinct) else None
  /** Whether every rule declares a pre-check: a plan none of them passes needs no call. */
  val allPrechecked: Boolean = rules.nonEmpty && rules.forall(_.precheck.nonEmpty)
  private val needing = rules.filter(_.needs.nonEmpty)

  /** Whether `r` may act on `plan`: by its patterns and its pre-check. */
  def mayAct(r: RuleInfo, plan: LogicalPlan): Boolean =
    r.mayMatch(plan) && r.precheck.forall(prechecks.mayChange(_, plan))

  /**
   * The relation facts to send with `plan` ([[RelationFacts.Needs]]): what the rules that
   * may act on it (by their patterns and pre-checks) declare. Empty for most registrations
   * and most plans: a plan is then encoded as if facts did not exist.
   */
  def needsFor(plan: LogicalPlan): Set[String] =
    if (needing.isEmpty) Set.empty
    else needing.filter(mayAct(_, plan)).flatMap(_.needs).toSet
}

object ActiveRules {
  def apply(rules: Seq[RuleInfo], excludedText: String, catalystText: String,
      prechecks: Prechecks): ActiveRules = {
    val excluded = Conf.namesIn(excludedText).toSet
    val catalystExcluded = Conf.namesIn(catalystText).map(_.split('.').last)
    val catalystSet = catalystExcluded.toSet
    new ActiveRules(excludedText, catalystText, excluded, catalystExcluded,
      rules.filter(r => !excluded.contains(r.name) && r.activeWith(catalystSet)), prechecks)
  }
}

/** What `sparkext.enable` registered for one session. */
final class Registration(
    val bridge: RuleBridge,
    val channel: PythonChannel,
    /** Names `bridge` in the calls over `channel`. */
    val key: Long,
    val spec: MirrorSpec,
    val rules: Seq[RuleInfo],
    /** What the rules' JVM pre-checks are told of Python's analyses. */
    val prechecks: Prechecks,
    val version: Long) {

  private val byPosition: Map[Position, Seq[RuleInfo]] = rules.groupBy(_.position)

  def rulesAt(p: Position): Seq[RuleInfo] = byPosition.getOrElse(p, Nil)

  private val lastActive = Map[Position, AtomicReference[ActiveRules]](
    Position.Once -> new AtomicReference[ActiveRules](),
    Position.FixedPoint -> new AtomicReference[ActiveRules]())

  /**
   * The rules at `p` that run while `spark.sparkext.excludedRules` is `excludedText` and
   * `spark.sql.optimizer.excludedRules` is `catalystText` (their values as set). The last
   * one per position is kept: every optimizer invocation asks, most make no call, and
   * parsing both settings anew was most of what a skipped invocation cost
   * (docs/performance.md). Its identity stands for the two settings in the plan memo.
   */
  def activeAt(p: Position, excludedText: String, catalystText: String): ActiveRules = {
    val slot = lastActive(p)
    val last = slot.get()
    if (last != null && last.excludedText == excludedText && last.catalystText == catalystText) {
      return last
    }
    val fresh = ActiveRules(rulesAt(p), excludedText, catalystText, prechecks)
    if (fresh.excluded.nonEmpty) {
      Conf.unknownRules(fresh.excluded, rules.map(_.name)).foreach(w => PythonRules.log.warn(w))
    }
    slot.set(fresh)
    fresh
  }

  val breaker = new Breaker
}

/**
 * A set of queries, each known by the planning tracker of the thread optimizing it
 * (Catalyst optimizes a query's subqueries within the same tracker, one optimizer call
 * each); held weakly, so a finished query leaves it.
 */
final class QueryMarks {
  private val marked = new java.util.WeakHashMap[QueryPlanningTracker, java.lang.Boolean]()

  /** Marks the query being optimized on this thread; whether it was not marked yet (always
   *  true for a call outside any query: no tracker, e.g. `Sparkext.applyRules`). */
  def mark(): Boolean = QueryPlanningTracker.get match {
    case Some(t) => marked.synchronized(marked.put(t, java.lang.Boolean.TRUE) == null)
    case None => true
  }

  /** Whether the query being optimized on this thread is marked. */
  def isMarked: Boolean =
    QueryPlanningTracker.get.exists(t => marked.synchronized(marked.containsKey(t)))
}

/**
 * The circuit breaker of one registration (docs/design.md, "Timeouts"). A call that timed
 * out opens it: Python is skipped for the rest of that query (its planning tracker) and,
 * for `spark.sparkext.cooldownMs`, for every query of the registration, so a runaway rule
 * costs one timeout, not one per optimizer call, and no new call starts on a Python side
 * that may still be busy with the abandoned one. When the cool-down ends, the breaker
 * stays open as long as Python says the abandoned call is still running (a rule stuck
 * where it cannot be cancelled): at most one such call per registration.
 */
final class Breaker {
  private val tripped = new QueryMarks
  /** `System.nanoTime` until which every query skips Python; 0 when closed. */
  @volatile private var openUntil = 0L
  /** The call abandoned last, while the cool-down runs (0: none). */
  @volatile private var abandoned = 0L

  /** Records the timeout of call `callId` in the query being optimized on this thread. */
  def trip(callId: Long, cooldownMs: Long): Unit = synchronized {
    tripped.mark()
    if (cooldownMs > 0) {
      abandoned = callId
      openUntil = nonZero(System.nanoTime() + cooldownMs * 1000000L)
    }
  }

  /**
   * Whether Python must be skipped now. `stillRunning(callId)` asks Python whether the
   * abandoned call still runs; it is asked once per cool-down that ends, by one thread.
   */
  def isOpen(cooldownMs: Long, stillRunning: Long => Boolean): Boolean = {
    if (tripped.isMarked) return true
    if (openUntil == 0L) return false
    synchronized {
      if (openUntil == 0L) return false
      if (System.nanoTime() - openUntil < 0) return true
      if (cooldownMs > 0 && stillRunning(abandoned)) {
        openUntil = nonZero(System.nanoTime() + cooldownMs * 1000000L)
        return true
      }
      openUntil = 0L
      abandoned = 0L
      false
    }
  }

  private def nonZero(t: Long): Long = if (t == 0L) 1L else t
}

/** The plan a position returned last time, so a fixed-point batch that hands it back is skipped. */
private[sparkext] final case class Memo(plan: WeakReference[LogicalPlan], version: Long, active: ActiveRules)

/** Everything sparkext keeps for one SparkSession. */
final class SessionBridge {
  @volatile var registration: Registration = null
  /** Whether the session's extended explain lists sparkext's section yet (io.sparkext.shims.ExplainShim). */
  @volatile var explainRegistered = false
  val metrics = new BridgeMetrics
  private val memos = Map[Position, AtomicReference[Memo]](
    Position.Once -> new AtomicReference[Memo](),
    Position.FixedPoint -> new AtomicReference[Memo]())

  def isMemoized(p: Position, plan: LogicalPlan, version: Long, active: ActiveRules): Boolean = {
    val m = memos(p).get()
    m != null && m.version == version && (m.active eq active) && (m.plan.get() eq plan)
  }

  def memoize(p: Position, plan: LogicalPlan, version: Long, active: ActiveRules): Unit =
    memos(p).set(Memo(new WeakReference(plan), version, active))

  def forget(): Unit = memos.values.foreach(_.set(null))

  /** The queries that warned already. */
  private val warned = new QueryMarks

  /**
   * Whether the query being optimized on this thread has not warned yet (and now has). A
   * call outside any query always warns.
   */
  def firstWarningOfQuery(): Boolean = warned.mark()
}

/**
 * The registry: which Python rules each session runs. Python calls these methods through py4j;
 * the injected [[PythonRules]] read them at every optimizer call.
 */
object Sparkext {
  private val mapper = new ObjectMapper()
  private val versions = new AtomicLong()
  // Weak keys: a session that is gone takes its rules and metrics with it.
  private val sessions = new java.util.WeakHashMap[SparkSession, SessionBridge]()

  def stateOrNull(session: SparkSession): SessionBridge = sessions.synchronized {
    sessions.get(session)
  }

  private[sparkext] def state(session: SparkSession): SessionBridge = sessions.synchronized {
    var s = sessions.get(session)
    if (s == null) {
      s = new SessionBridge
      sessions.put(session, s)
    }
    s
  }

  /** True when this session's optimizer runs the injected rules (the extension is loaded). */
  def isInstalled(session: SparkSession): Boolean = {
    SparkShim.optimizer(session).batches.exists(_.rules.exists(_.isInstanceOf[PythonRules]))
  }

  /**
   * Registers the Python rules for a session, replacing any earlier registration.
   *
   * `specJson` holds the [[Handshake]] (refused, with one error, when the package and
   * this jar differ), the rules (name, position, tree patterns) and the mirror (the Catalyst
   * classes Python mirrors, with the kinds of their constructor arguments). Returns a JSON
   * list of the mirror classes this Spark cannot build, each with the reason; those
   * classes travel as opaque nodes, the registration's version (for [[unregister]]), and
   * the configuration's warnings not given yet ([[Conf.check]]: unknown `spark.sparkext.*`
   * keys, unknown rule names in `spark.sparkext.excludedRules`), for Python to log. A bad
   * configuration value raises Spark's error instead.
   */
  def register(session: SparkSession, bridge: RuleBridge, specJson: String): String = {
    val (registration, dropped) = compile(mapper.readTree(specJson), bridge)
    // Before the registration takes effect: a bad value refuses it, with Spark's error.
    val confWarnings = Conf.check(session.conf.getAll, registration.rules.map(_.name))
    val s = state(session)
    s.registration = registration
    s.forget()
    // Jackson nodes, not java.util.Map.of: the Spark 3.5 jars target Java 8.
    val answer = mapper.createObjectNode()
    answer.put("version", registration.version)
    val list = answer.putArray("dropped")
    dropped.foreach { case (name, why) => list.addObject().put("name", name).put("reason", why) }
    val warnings = answer.putArray("warnings")
    confWarnings.foreach(w => warnings.add(w))
    mapper.writeValueAsString(answer)
  }

  /**
   * Removes the session's Python rules if `version` is still the registration in force
   * (or always, for version 0); the metrics stay readable.
   */
  def unregister(session: SparkSession, version: Long): Unit = {
    val s = stateOrNull(session)
    if (s != null && s.registration != null && (version == 0 || s.registration.version == version)) {
      s.registration = null
      s.forget()
    }
  }

  /**
   * A registration document, as `sparkext.enable` sends it and a rule worker
   * ([[RuleWorker]], `bridge` null) prints it, compiled; with the mirror classes this Spark
   * cannot build.
   */
  private[sparkext] def compile(spec: JsonNode, bridge: RuleBridge): (Registration, Seq[(String, String)]) = {
    Handshake.check(spec.get("handshake"))
    val rules = parseRules(spec.get("rules"))
    val prechecks = Prechecks.parse(spec.get("prechecks"))
    rules.find(r => r.precheck.contains(Prechecks.Ordering) && prechecks.ordering.isEmpty).foreach { r =>
      throw new IllegalArgumentException(s"rule '${r.name}' declares the JVM pre-check " +
        s"'${Prechecks.Ordering}', and the registration sends no vocabulary for it: the " +
        "sparkext Python package and jar differ")
    }
    val (mirror, dropped) = MirrorSpec.compile(spec.get("mirror"))
    val (channel, key) = parseChannel(spec.get("channel"))
    (new Registration(bridge, channel, key, mirror, rules, prechecks, versions.incrementAndGet()), dropped)
  }

  /** Every `spark.sparkext.*` entry as JSON: `[{"key", "default", "doc"}, ...]`. */
  def confEntries(): String = {
    val list = mapper.createArrayNode()
    Conf.describe.foreach { case (k, d, doc) =>
      list.addObject().put("key", k).put("default", d).put("doc", doc)
    }
    mapper.writeValueAsString(list)
  }

  /** This jar's half of the handshake, as JSON. */
  def handshake(): String = Handshake.json

  def isRegistered(session: SparkSession): Boolean = {
    val s = stateOrNull(session)
    s != null && s.registration != null
  }

  /** The session's counters as a JSON object (all zero when nothing ran yet). */
  def metrics(session: SparkSession): String = {
    val s = stateOrNull(session)
    (if (s == null) new BridgeMetrics else s.metrics).toJson
  }

  def resetMetrics(session: SparkSession): Unit = {
    val s = stateOrNull(session)
    if (s != null) s.metrics.reset()
  }

  /**
   * The request document the bridge would send for `plan` (for tests and `explain`).
   * Needs a registration: the mirror decides what is mirrored and what is opaque.
   */
  def encodePlan(session: SparkSession, plan: LogicalPlan): String = {
    val s = stateOrNull(session)
    if (s == null || s.registration == null) {
      throw new IllegalStateException("sparkext.enable(spark) has not run in this session")
    }
    new String(new PlanEncoder(s.registration.spec).encode(plan, _ => ()), StandardCharsets.UTF_8)
  }

  /** Runs the registered rules of one position on `plan`, as the optimizer would. */
  def applyRules(session: SparkSession, plan: LogicalPlan, position: String): LogicalPlan =
    new PythonRules(session, Position.parse(position)).apply(plan)

  /** Where Python serves this registration's calls (sparkext/channel.py). */
  private def parseChannel(node: JsonNode): (PythonChannel, Long) = {
    def field(name: String): JsonNode = Option(node).map(_.get(name)).orNull match {
      case null => throw new IllegalArgumentException(
        s"the registration names no channel '$name': the sparkext Python package and jar differ")
      case v => v
    }
    (PythonChannel(field("address").asText(), field("secret").asText()), field("key").asLong())
  }

  private def parseRules(node: JsonNode): Seq[RuleInfo] = {
    val out = Seq.newBuilder[RuleInfo]
    if (node != null) node.forEach { r =>
      val patterns = Seq.newBuilder[TreePattern.Value]
      val ps = r.get("patterns")
      if (ps != null) ps.forEach { p =>
        patterns += (try TreePattern.withName(p.asText()) catch {
          case NonFatal(_) => throw new IllegalArgumentException(
            s"rule '${r.get("name").asText()}' declares an unknown Catalyst tree pattern " +
              s"'${p.asText()}' (see org.apache.spark.sql.catalyst.trees.TreePattern)")
        })
      }
      val only = Seq.newBuilder[String]
      val os = r.get("only_when_catalyst_excludes")  // absent from older Python packages
      if (os != null) os.forEach(o => only += o.asText())
      val precheck = Option(r.get("jvm_precheck")).filterNot(_.isNull).map(_.asText())
      precheck.filterNot(Prechecks.known.contains).foreach { p =>
        throw new IllegalArgumentException(s"rule '${r.get("name").asText()}' declares an " +
          s"unknown JVM pre-check '$p' (known: ${Prechecks.known.mkString(", ")})")
      }
      val needs = Set.newBuilder[String]
      val ns = r.get("needs")  // absent from older Python packages
      if (ns != null) ns.forEach { n =>
        if (!RelationFacts.Needs.contains(n.asText())) {
          throw new IllegalArgumentException(s"rule '${r.get("name").asText()}' needs " +
            s"'${n.asText()}', which this jar cannot give (known: ${RelationFacts.Needs.mkString(", ")})")
        }
        needs += n.asText()
      }
      out += RuleInfo(r.get("name").asText(), Position.parse(r.get("position").asText()),
        patterns.result(), only.result(), precheck, needs.result())
    }
    out.result()
  }
}
