package io.sparkext

import java.time.Instant
import java.util.concurrent.atomic.AtomicLong

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.core.JsonGenerator
import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.ObjectNode
import org.slf4j.LoggerFactory

import org.apache.spark.{SparkConf, SparkContext}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.QueryPlanningTracker
import org.apache.spark.sql.catalyst.expressions.{DynamicPruningSubquery, SubqueryExpression}
import org.apache.spark.sql.catalyst.plans.logical.{CommandResult, Join, LogicalPlan, ReturnAnswer}
import org.apache.spark.sql.catalyst.trees.TreePattern
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.sparkext.{GuardSettings, SparkextQueryRefused, SparkextConf => Conf}

import io.sparkext.shims.ExplainShim

/**
 * The guards' hook: a planner strategy (`injectPlannerStrategy`). Spark's planner hands it
 * every planning unit's fully optimized plan, wrapped in `ReturnAnswer`: a query, each of
 * its subqueries, the query of a command or a write, a cache build; after partition
 * pruning and scan push-down. No session setting reaches it: `SparkPlanner.strategies`
 * reads no configuration, unlike the optimizer's batches, which
 * `spark.sql.optimizer.excludedRules` can empty. It plans nothing itself (always `Nil`, so
 * Spark's own strategies plan every node): it judges, and refuses by throwing.
 *
 * Called for every node the planner reaches; only `ReturnAnswer` roots are judged, so the
 * other calls cost one field read and one type test.
 */
final class GuardStrategy(session: SparkSession) extends SparkStrategy {
  private val guards = Guards.of(session.sparkContext)

  override def apply(plan: LogicalPlan): Seq[SparkPlan] = {
    if (guards.any) plan match {
      case ReturnAnswer(root) => guards.judge(session, root)
      case _ =>
    }
    Nil
  }
}

/** One guard as its worker declared it: name, relation facts it needs, mode. */
private[sparkext] final case class GuardInfo(name: String, needs: Set[String], mode: String)

/** One guard's decision on one planning unit, as the worker answered. */
private[sparkext] final case class Decision(guard: String, decision: String, reason: String, nanos: Long) {
  def refuses: Boolean = decision == Decision.Refuse || decision == Decision.Error
}

private[sparkext] object Decision {
  val Allow = "allow"
  val Refuse = "refuse"
  val Warn = "warn"
  /** The guard raised: the query is refused (guards fail closed). */
  val Error = "error"
}

/**
 * The guards of one SparkContext, as its launch configuration names them
 * (`spark.sparkext.guards` and the built-in guards' `spark.sparkext.guards.*` settings,
 * static SQL confs read once from the context's SparkConf: docs/guards.md). They run in a
 * Python guard worker the driver starts ([[Workers]]), on every planning unit of every
 * session of the context.
 *
 * Fail closed: the query is refused when its guards cannot judge it (a bad setting, a
 * worker that cannot start, died or does not answer within `spark.sparkext.guards.timeoutMs`,
 * a guard that raises), with an error that says why. A worker that died is reported once,
 * and the next query starts a new one; one that timed out is killed (a guard stuck in a loop
 * cannot be stopped otherwise), and the next query starts a new one.
 */
private[sparkext] final class Guards(val sc: SparkContext) {
  import Guards._

  /** The settings, or why they are invalid (every query is then refused with it). */
  private val settings: Either[String, GuardSettings] =
    try Right(Conf.guardSettings(sc.getConf)) catch { case NonFatal(e) => Left(e.getMessage) }

  /** Whether any guard is set up (or the setting is invalid, which refuses everything). */
  val any: Boolean = settings.fold(_ => true, _.any)

  /** The guard infos of the worker last seen, by its registration. */
  @volatile private var infos: (Registration, Seq[GuardInfo]) = (null, Nil)

  private def infosOf(w: WorkerProcess): Seq[GuardInfo] = {
    val last = infos
    if (last._1 eq w.registration) return last._2
    val parsed = parseInfos(w.spec.get("guards"))
    infos = (w.registration, parsed)
    parsed
  }

  /**
   * Judges one planning unit `root` (and its subqueries, sent with it): returns when every
   * guard lets it through (or only warns), throws [[SparkextQueryRefused]] otherwise.
   *
   * Deterministic and idempotent within a query: a unit judged already in the query being
   * planned on this thread (the same `QueryPlanningTracker`), or a subquery judged with its
   * query, is not judged again; a refusal is thrown again as it was. Skipped: AQE's
   * re-planning of a query already judged (its plan holds `LogicalQueryStage`s, materialized
   * parts of that very query) and a command's result (`CommandResult`: rows already computed,
   * by a command judged in its own unit).
   */
  def judge(session: SparkSession, root: LogicalPlan): Unit = {
    if (root.isInstanceOf[CommandResult] || root.containsPattern(TreePattern.LOGICAL_QUERY_STAGE)) {
      return
    }
    val memo = Judged.ofCurrentQuery()
    if (memo != null) memo.synchronized(Option(memo.get(root))) match {
      case Some(refusal) => refusal.foreach(r => throw r); return
      case None =>
    }
    val subqueries = subqueryPlans(root)
    val refusal = decide(session, root, subqueries)
    if (memo != null) memo.synchronized {
      memo.put(root, refusal)
      if (refusal.isEmpty) subqueries.foreach(memo.put(_, None))
    }
    refusal.foreach(r => throw r)
  }

  /** The refusal of `root`, or None when it may run. */
  private def decide(session: SparkSession, root: LogicalPlan,
      subqueries: Seq[LogicalPlan]): Option[SparkextQueryRefused] = {
    val t0 = System.nanoTime()
    val state = Sparkext.state(session)
    val m = state.metrics
    val conf = SQLConf.get
    // From the first unit judged on, the session's extended explain has a sparkext section.
    if (!state.explainRegistered) {
      ExplainShim.register(conf)
      state.explainRegistered = true
    }
    val report = QueryReport.current()
    root.setTagValue(QueryReport.Tag, report)
    val audit = new AuditContext(session)
    try {
      val decisions = settings match {
        case Left(error) => Left(s"the guards' settings are invalid: $error")
        case Right(s) =>
          // Anything unforeseen while judging (listing the files, a plan sparkext cannot
          // encode) refuses too, saying what it was, and never lets the query through.
          try call(root, subqueries, s, conf, m) catch {
            case NonFatal(e) => Left(s"judging it failed: $e; please report this")
          }
      }
      decisions match {
        case Left(why) =>
          m.refusedQueries.incrementAndGet()
          m.guardFailures.incrementAndGet()
          val message = s"the guards could not judge the query, and guards fail closed: $why"
          report.note(message)
          audit.write(GuardsItself, "refused", why)
          Some(new SparkextQueryRefused(message, GuardsItself, why))
        case Right(ds) => verdict(ds, m, report, audit)
      }
    } finally {
      m.guardNanos.addAndGet(System.nanoTime() - t0)
    }
  }

  /** Records each decision; the refusal when one of them refuses. */
  private def verdict(ds: Seq[Decision], m: BridgeMetrics, report: QueryReport,
      audit: AuditContext): Option[SparkextQueryRefused] = {
    ds.foreach { d =>
      val f = m.guard(d.guard)
      f.judged.incrementAndGet()
      f.nanos.addAndGet(d.nanos)
      report.guard(d.guard, d.decision, d.reason)
      d.decision match {
        case Decision.Allow =>
        case Decision.Warn =>
          f.warn(d.reason)
          audit.write(d.guard, "warned", d.reason)
          log.warn(s"sparkext: guard '${d.guard}' would refuse this query (its mode is warn): ${d.reason}")
        case other =>
          if (other == Decision.Error) f.errors.incrementAndGet()
          f.refuse(d.reason)
          audit.write(d.guard, "refused", d.reason)
      }
    }
    val refusing = ds.filter(_.refuses)
    if (refusing.isEmpty) return None
    m.refusedQueries.incrementAndGet()
    def says(d: Decision): String =
      if (d.decision == Decision.Error) s"guard '${d.guard}' failed, and guards fail closed: ${d.reason}"
      else s"guard '${d.guard}' refused the query: ${d.reason}"
    val first = refusing.head
    val also = refusing.tail.map(says)
    val message = says(first) + (if (also.isEmpty) "" else also.mkString(" (also: ", "; ", ")"))
    Some(new SparkextQueryRefused(message, first.guard, first.reason))
  }

  /** One call to the guard worker: every guard's decision, or why there is none. */
  private def call(root: LogicalPlan, subqueries: Seq[LogicalPlan], s: GuardSettings,
      conf: SQLConf, m: BridgeMetrics): Either[String, Seq[Decision]] = {
    val w = workers.acquire(sc, RetryMs, s"; it is tried again at the first query after $RetryMs ms") match {
      case Acquired.Running(worker, _) => worker
      case Acquired.Died(message) => return Left(s"$message; the next query starts a new one")
      case Acquired.CannotStart(message, _) => return Left(message)
      case Acquired.Absent => return Left("the guard worker is gone (the SparkContext stopped)")
    }
    val reg = w.registration
    val guards = infosOf(w)
    val needs = guards.flatMap(_.needs).toSet
    val t0 = System.nanoTime()
    val facts = try {
      if (needs.isEmpty) null else RelationFacts.forPlans(root +: subqueries, needs, conf)
    } finally m.guardFactsNanos.addAndGet(System.nanoTime() - t0)
    val enc = new PlanEncoder(reg.spec, facts)
    val callId = Calls.nextId()
    val payload = try enc.encode(root, g => {
      g.writeNumberField("id", callId)
      g.writeStringField("pos", Position)
    }, g => writeUnitParts(g, enc, subqueries)) catch {
      case NonFatal(e) => return Left(s"could not encode the plan for the guards ($e); please report this")
    }
    val t1 = System.nanoTime()
    val answer = try reg.channel.call(reg.key, payload, s.timeoutMs) catch {
      case _: PythonChannel.Timeout =>
        // A guard that never returns cannot be stopped inside its process: end the process.
        workers.discard(sc, w)
        return Left(s"the guards did not answer within ${Conf.GUARDS_TIMEOUT_MS.key}=${s.timeoutMs} ms; " +
          s"the guard worker (pid ${w.pid}) was stopped, and the next query starts a new one")
      case NonFatal(e) =>
        if (!w.process.isAlive) {
          val code = w.process.exitValue()
          workers.discard(sc, w)
          return Left(s"the guard worker (pid ${w.pid}) exited with code $code${w.stderr.describe}; " +
            "the next query starts a new one")
        }
        return Left(s"the call to the guard worker failed: $e")
    } finally {
      m.guardCallNanos.addAndGet(System.nanoTime() - t1)
    }
    try parseAnswer(answer, guards) catch {
      case NonFatal(e) => Left(s"the guard worker answered what the JVM cannot read ($e)")
    }
  }

  /**
   * The unit's other parts, in the request's body: its subqueries' plans, and Catalyst's
   * estimate of the size of each join's two inputs (what `limit_cartesian_joins` compares),
   * by the join's handle: `"joins": [[h, left bytes, right bytes], ...]`, a size unknown
   * to Catalyst being null.
   */
  private def writeUnitParts(g: JsonGenerator, enc: PlanEncoder, subqueries: Seq[LogicalPlan]): Unit = {
    g.writeArrayFieldStart("subqueries")
    subqueries.foreach(enc.writePlan)
    g.writeEndArray()
    g.writeArrayFieldStart("joins")
    var h = 0
    val n = enc.handleCount
    while (h < n) {
      enc.call.objectAt(h) match {
        case j: Join =>
          g.writeStartArray()
          g.writeNumber(h)
          writeSize(g, j.left)
          writeSize(g, j.right)
          g.writeEndArray()
        case _ =>
      }
      h += 1
    }
    g.writeEndArray()
  }

  private def writeSize(g: JsonGenerator, p: LogicalPlan): Unit =
    try g.writeNumber(p.stats.sizeInBytes.bigInteger) catch { case NonFatal(_) => g.writeNull() }

  /**
   * `{"guards": [[name, decision, reason, nanos], ...]}`, one entry per guard in `guards`;
   * or Python's error document (the worker could not read the request: refused too).
   */
  private def parseAnswer(answer: String, guards: Seq[GuardInfo]): Either[String, Seq[Decision]] = {
    val doc = PlanCodec.mapper.readTree(answer)
    val error = doc.get("error")
    if (error != null) return Left(PythonRules.describeError(error))
    val ds = doc.get("guards").asScala.toSeq.map { d =>
      Decision(d.get(0).asText(), d.get(1).asText(), d.get(2).asText(), d.get(3).asLong())
    }
    val unknown = ds.map(_.decision).filterNot(Decisions.contains)
    if (unknown.nonEmpty) {
      return Left(s"the guard worker answered unknown decisions ${unknown.mkString(", ")}")
    }
    // Every guard must have judged: one left out would be a guard that did not run.
    val missing = guards.map(_.name).filterNot(ds.map(_.guard).contains)
    if (missing.nonEmpty) return Left(s"guards ${missing.mkString(", ")} did not judge the query")
    Right(ds)
  }
}

private[sparkext] object Guards {
  private val log = LoggerFactory.getLogger("io.sparkext.Guards")
  private val auditLog = LoggerFactory.getLogger("sparkext.audit")
  private val mapper = new ObjectMapper()

  /** The request's position: the JVM asks for a verdict, not a plan. */
  val Position = "guard"
  /** The guard name of a refusal by the guards' machinery itself (no guard could judge). */
  val GuardsItself = "sparkext.guards"
  /** After the guard worker failed to start, no new start is tried for this long. */
  val RetryMs = 10000L
  private val Decisions = Set(Decision.Allow, Decision.Refuse, Decision.Warn, Decision.Error)

  /** Guards of the context last seen (one SparkContext runs at a time in a JVM). */
  @volatile private var last: Guards = null

  def of(sc: SparkContext): Guards = {
    val g = last
    if (g != null && (g.sc eq sc)) return g
    synchronized {
      if (last == null || (last.sc ne sc)) last = new Guards(sc)
      last
    }
  }

  private object Role extends WorkerRole {
    val what = "guard worker"

    private def settings(conf: SparkConf): Option[GuardSettings] =
      try Some(Conf.guardSettings(conf)).filter(_.any) catch { case NonFatal(_) => None }

    def describe(conf: SparkConf): String = settings(conf).map { s =>
      val builtin = Seq(s.partitionFilter.map(_ => "partitionFilter"), s.maxScan.map(_ => "maxScan"),
        s.cartesian.map(_ => "cartesian")).flatten
      (Seq(s.entries).filter(_.nonEmpty).map(e => s"${Conf.Guards}=$e") ++
        builtin.map(b => s"${Conf.Guards}.$b")).mkString(", ")
    }.getOrElse("")

    /** The guards to load: the modules named, and the built-in guards with their settings. */
    def request(conf: SparkConf, config: ObjectNode): Unit = settings(conf).foreach { s =>
      config.put("guards", s.entries)
      val builtin = config.putObject("builtin_guards")
      s.partitionFilter.foreach { p =>
        val o = builtin.putObject("partition_filter").put("mode", p.mode)
        p.tables.foreach(o.withArray("tables").add(_))
        o.putArray("allow")
        p.allow.foreach(o.withArray("allow").add(_))
      }
      s.maxScan.foreach { p =>
        val o = builtin.putObject("max_scan").put("mode", p.mode)
        Seq("bytes" -> p.bytes, "files" -> p.files, "partitions" -> p.partitions).foreach {
          case (k, v) => v match { case Some(n) => o.put(k, n) case None => o.putNull(k) }
        }
      }
      s.cartesian.foreach(p => builtin.putObject("cartesian").put("mode", p.mode).put("bytes", p.bytes))
    }
  }

  private val workers = new Workers(Role, log)

  /** The pid of this JVM's guard worker, or -1 when none runs (for tests and operators). */
  def pid(): Long = workers.pid()

  /** Guard workers started by this JVM so far. */
  def starts(): Long = workers.starts()

  private def parseInfos(node: JsonNode): Seq[GuardInfo] =
    if (node == null) Nil else node.asScala.toSeq.map { g =>
      val name = g.get("name").asText()
      val needs = Option(g.get("needs")).map(_.asScala.map(_.asText()).toSet).getOrElse(Set.empty)
      needs.filterNot(RelationFacts.Needs.contains).foreach { n =>
        throw new IllegalArgumentException(s"guard '$name' needs '$n', which this jar cannot " +
          s"give (known: ${RelationFacts.Needs.mkString(", ")})")
      }
      GuardInfo(name, needs, Option(g.get("mode")).map(_.asText()).getOrElse(Decision.Refuse))
    }

  /**
   * The plans of `root`'s subqueries (nested ones too), each once. Not dynamic partition
   * pruning's: its plan is a copy of the other side of the join it prunes for, which the
   * unit holds already (counting it again would read the build side twice).
   */
  def subqueryPlans(root: LogicalPlan): Seq[LogicalPlan] = {
    val out = ArrayBuffer.empty[LogicalPlan]
    def visit(p: LogicalPlan): Unit = p.foreach(_.expressions.foreach(_.foreach {
      case _: DynamicPruningSubquery =>
      case s: SubqueryExpression if !out.contains(s.plan) =>
        out += s.plan
        visit(s.plan)
      case _ =>
    }))
    if (root.containsPattern(TreePattern.PLAN_EXPRESSION)) visit(root)
    out.toSeq
  }

  /**
   * The units judged in each query, by the planning tracker of the thread planning it (the
   * query's subqueries are planned in it too), with the refusal of each (None: let through);
   * held weakly, so a finished query leaves it. Units compare by value: the planner gets
   * clones of the plans.
   */
  /** The units of one query, each with its refusal (None: let through). */
  private type Units = java.util.HashMap[LogicalPlan, Option[SparkextQueryRefused]]

  private object Judged {
    private val byQuery = new java.util.WeakHashMap[QueryPlanningTracker, Units]()

    /** The current query's units, or null outside a query (then every unit is judged). */
    def ofCurrentQuery(): Units =
      QueryPlanningTracker.get match {
        case Some(t) => byQuery.synchronized {
          var m = byQuery.get(t)
          if (m == null) { m = new java.util.HashMap(); byQuery.put(t, m) }
          m
        }
        case None => null
      }
  }

  /**
   * Who asked and where, for the audit records of one unit: the application, the user (a
   * Spark Connect client's user, else the application's), and the query's id where Spark
   * has one (a Connect operation, an SQL execution).
   */
  private final class AuditContext(session: SparkSession) {
    private val sc = session.sparkContext
    private lazy val connect: Option[(String, String)] = sc.getJobTags().collectFirst {
      case ConnectTag(user, _, operation) => (user, operation)
    }

    def write(guard: String, decision: String, reason: String): Unit = {
      if (!auditLog.isInfoEnabled) return
      val record = mapper.createObjectNode()
      record.put("time", Instant.now().toString)
      record.put("application", sc.appName)
      record.put("application_id", sc.applicationId)
      record.put("user", connect.map(_._1).getOrElse(sc.sparkUser))
      connect.map(_._2).orElse(Option(sc.getLocalProperty(ExecutionIdKey))) match {
        case Some(id) => record.put("query_id", id)
        case None => record.putNull("query_id")
      }
      record.put("guard", guard)
      record.put("decision", decision)
      record.put("reason", reason)
      auditLog.info(mapper.writeValueAsString(record))
    }
  }

  /** Spark Connect's job tag of an operation (`ExecuteJobTag`): user, session, operation. */
  private val ConnectTag = "SparkConnect_OperationTag_User_(.*)_Session_([^_]*)_Operation_(.*)".r
  /** `SQLExecution.EXECUTION_ID_KEY`. */
  private val ExecutionIdKey = "spark.sql.execution.id"
}
