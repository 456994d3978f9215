package io.sparkext

import java.nio.charset.StandardCharsets
import java.util.concurrent.{Callable, Executors, ThreadFactory, TimeUnit}
import java.util.concurrent.atomic.{AtomicInteger, AtomicLong}

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.core.exc.StreamConstraintsException
import com.fasterxml.jackson.databind.JsonNode
import org.slf4j.LoggerFactory

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.DataType
import org.apache.spark.sql.sparkext.{SparkextConf => Conf}

import io.sparkext.shims.{ExplainShim, SparkShim}

/**
 * The Catalyst rule that hands the plan to Python: one call per invocation, never one
 * per node. Steps (docs/design.md): skip fast, encode, call, rebuild, validate. Any
 * failure leaves the input plan in place with one warning and one counter moved, unless
 * `spark.sparkext.strict=true`, which turns the warning into a [[SparkextException]].
 */
final class PythonRules(session: SparkSession, val position: Position) extends Rule[LogicalPlan] {

  override val ruleName: String = s"io.sparkext.PythonRules(${position.name})"

  override def apply(plan: LogicalPlan): LogicalPlan = {
    val known = Sparkext.stateOrNull(session)
    // `sparkext.enable` in this session wins over the driver's rule worker.
    val registered = if (known == null) null else known.registration
    if (registered == null && !RuleWorker.isConfigured(session)) return plan
    val state = if (known != null) known else Sparkext.state(session)
    val conf = SQLConf.get
    val reg = if (registered != null) registered else {
      if (!Conf.enabled(conf)) return plan  // no worker for it
      RuleWorker.registration(session, state, conf)
    }
    if (reg == null) return plan
    val rules = reg.rulesAt(position)
    if (rules.isEmpty) return plan

    val m = state.metrics
    def skip(reason: AtomicLong): LogicalPlan = {
      m.skipped.incrementAndGet()
      reason.incrementAndGet()
      plan
    }
    if (!Conf.enabled(conf)) return skip(m.skippedDisabled)
    // A rule that duplicates Catalyst rules all active in this session has nothing to add.
    val active = reg.activeAt(position, Conf.excludedRules(conf), Conf.catalystExcludedRules(conf))
    if (active.rules.isEmpty) return skip(m.skippedExcluded)
    // A fixed-point batch hands back the very plan we returned: Python's answer is known,
    // as long as nothing the rules read changed (both settings of `active` travel too).
    if (state.isMemoized(position, plan, reg.version, active)) return skip(m.skippedSamePlan)
    // Rules declare the node kinds they match; a plan with none of them cannot change.
    if (active.patterns.exists(ps => !plan.containsAnyPattern(ps: _*))) {
      return skip(m.skippedNoPattern)
    }
    // Rules may declare a JVM-side test that must hold for them to change a plan: the call
    // is made only if some rule's node kinds are in the plan and its test holds (the sort
    // rules' test says "may change" of a plan without a Sort, which their kinds exclude).
    if (active.allPrechecked && !active.rules.exists(active.mayAct(_, plan))) {
      return skip(m.skippedPrecheck)
    }

    // From the first call on, the session's extended explain has a sparkext section.
    if (!state.explainRegistered) {
      ExplainShim.register(conf)
      state.explainRegistered = true
    }
    val report = QueryReport.current()
    val call = new BridgeCall(reg, position, state, conf, active, report)
    if (reg.breaker.isOpen(call.cooldownMs, Calls.stillRunning(reg, _))) {
      m.skipped.incrementAndGet()
      report.note("Python rules were skipped: a call timed out (cool-down)")
      return PythonRules.tagged(call.skipOpenBreaker(plan), report)
    }
    val result = PythonRules.tagged(call.run(plan), report)
    state.memoize(position, result, reg.version, active)
    result
  }
}

object PythonRules {
  private[sparkext] val log = LoggerFactory.getLogger("io.sparkext.PythonRules")

  /** `plan`, carrying its query's report for the explain (see [[QueryReport]]). */
  private def tagged(plan: LogicalPlan, report: QueryReport): LogicalPlan = {
    plan.setTagValue(QueryReport.Tag, report)
    plan
  }

  /**
   * A failure that leaves the plan unchanged: counts it (every call), warns (once per
   * query: a query with subqueries makes several calls, and one broken rule fails them
   * all), or throws a [[SparkextException]] when `strict`.
   */
  private[sparkext] def report(session: SessionBridge, strict: Boolean, counter: AtomicLong,
      message: String, detail: String = ""): Unit = {
    counter.incrementAndGet()
    val first = session.firstWarningOfQuery()
    val short = if (message.length > 2000) message.substring(0, 2000) + " ..." else message
    val warning = s"sparkext: $short. The query goes on with the plan unchanged " +
      s"(${Conf.Strict}=true turns this into an error)."
    if (first) session.metrics.recordWarning(warning)
    if (strict) throw new SparkextException(s"sparkext: $message" + (if (detail.isEmpty) "" else s"\n$detail"))
    if (first) log.warn(warning)
    if (detail.nonEmpty) log.debug(detail)
  }

  /** One line from Python's error document: which rule, what it raised, where. */
  def describeError(error: JsonNode): String = {
    def field(name: String): String = {
      val v = error.get(name)
      if (v == null || v.isNull) "" else v.asText()
    }
    val who = if (field("rule").isEmpty) "the Python side" else s"rule '${field("rule")}'"
    val where = if (field("where").isEmpty) "" else s" (at ${field("where")})"
    val raised = if (field("type").isEmpty) "" else field("type") + ": "
    s"$who failed: $raised${field("message")}$where"
  }
}

/** Call ids, and cancelling a call the JVM abandoned. */
private[sparkext] object Calls {
  private val ids = new AtomicLong()
  private val pool = Executors.newCachedThreadPool(new ThreadFactory {
    private val n = new AtomicInteger()
    override def newThread(r: Runnable): Thread = {
      val t = new Thread(r, s"sparkext-cancel-${n.incrementAndGet()}")
      t.setDaemon(true)
      t
    }
  })

  /**
   * How long the optimizer waits for a cancel's answer (which rule was running). The cancel
   * itself goes on, on a thread of its own, for as long as a handshake may take: a rule
   * spinning in Python holds the GIL, and a new connection's handshake then needs several
   * of its 5 ms switch intervals, so the flag must not depend on this short wait.
   */
  val CancelAnswerMs = 200L
  private val CancelTimeoutMs = 5000L

  def nextId(): Long = ids.incrementAndGet()

  /**
   * Tells Python that call `callId` is abandoned (it stops at its next rule boundary).
   * Returns the rule it is running ("" when it has ended), or None when Python did not say
   * within [[CancelAnswerMs]].
   */
  def cancel(reg: Registration, callId: Long): Option[String] = {
    val request = s"""{"cancel":$callId}""".getBytes(StandardCharsets.UTF_8)
    try {
      val answer = pool.submit(new Callable[String] {
        def call(): String = reg.channel.call(-reg.key, request, CancelTimeoutMs)
      }).get(CancelAnswerMs, TimeUnit.MILLISECONDS)
      Some(Option(PlanCodec.mapper.readTree(answer).get("running")).map(_.asText()).getOrElse(""))
    } catch { case NonFatal(_) => None }
  }

  /**
   * Whether the abandoned call `callId` may still run in Python (a rule stuck inside
   * itself); when Python does not say in time, it may.
   */
  def stillRunning(reg: Registration, callId: Long): Boolean = cancel(reg, callId).forall(_.nonEmpty)
}

/** One optimizer invocation that reaches Python. */
private[sparkext] final class BridgeCall(
    reg: Registration,
    position: Position,
    session: SessionBridge,
    conf: SQLConf,
    active: ActiveRules,
    report: QueryReport) {

  private val m = session.metrics

  /** Catalyst's plan change log prints: ask Python for each rule's plan ([[PlanChangeLog]]). */
  private val trace = PlanChangeLog.active(conf)

  private val strict = Conf.strict(conf)

  val cooldownMs: Long = Conf.cooldownMs(conf)

  /**
   * The input plan, counted as a skip by the open breaker. No warning: the timeout that
   * opened it warned, naming the cool-down, and a warning per query skipped meanwhile
   * would flood the log (hundreds a minute on a busy driver). Strict mode still raises.
   */
  def skipOpenBreaker(plan: LogicalPlan): LogicalPlan = {
    m.skippedBreaker.incrementAndGet()
    if (strict) {
      throw new SparkextException("sparkext: Python rules were skipped: a call timed out in " +
        s"this query, or less than ${Conf.CooldownMs}=$cooldownMs ago in this session, or " +
        "its rule still runs")
    }
    plan
  }

  private final class Failed(val plan: LogicalPlan) extends Exception

  def run(plan: LogicalPlan): LogicalPlan = try attempt(plan) catch {
    case f: Failed => f.plan
    // A huge answer can exhaust the heap while it is parsed or rebuilt: not the query's fault.
    case e: OutOfMemoryError =>
      try fail(plan, m.pythonErrors, s"Python's answer did not fit in the JVM's heap ($e)")
      catch { case f: Failed => f.plan }
  }

  /** [[PythonRules.report]], then gives back the input plan; `refused` names the rules
   *  whose change this failure threw away (their figures record the refusal). */
  private def fail(plan: LogicalPlan, counter: AtomicLong, message: String, detail: String = "",
      refused: Seq[String] = Nil): Nothing = {
    refused.foreach { r =>
      m.rule(r).refuse(message)
      report.refused(r, message)
    }
    if (refused.isEmpty) report.note(message)
    PythonRules.report(session, strict, counter, message, detail)
    throw new Failed(plan)
  }

  /** Adds the answer's per-rule figures (`[index, invocations, effective, nanos]...`). */
  private def record(stats: Array[Long]): Unit = {
    var i = 0
    while (i + 3 < stats.length) {
      val index = stats(i).toInt
      if (index >= 0 && index < reg.rules.length) {
        val name = reg.rules(index).name
        val f = m.rule(name)
        f.invocations.addAndGet(stats(i + 1))
        f.effective.addAndGet(stats(i + 2))
        f.nanos.addAndGet(stats(i + 3))
        report.ran(name, stats(i + 1), stats(i + 2), stats(i + 3))
      }
      i += 4
    }
  }

  private def record(doc: JsonNode): Unit = {
    val stats = doc.get("stats")
    if (stats != null && stats.isArray) record(stats.asScala.map(_.asLong).toArray)
    val because = doc.get("because")
    if (because != null && because.isObject) {
      because.fieldNames.asScala.foreach { rule =>
        because.get(rule).asScala.foreach(reason => report.because(rule, reason.asText))
      }
    }
    // A batch that stopped at its iteration limit: its plan is used (as Catalyst's
    // RuleExecutor does), with a warning naming the rules still changing it, once per
    // query (its subqueries and later optimizer calls say the same line again).
    val unconverged = doc.get("unconverged")
    if (unconverged != null && unconverged.isArray) unconverged.asScala.foreach { line =>
      if (report.note(line.asText)) {
        val warning = s"sparkext: ${line.asText}"
        m.recordWarning(warning)
        PythonRules.log.warn(warning)
      }
    }
  }

  private def attempt(plan: LogicalPlan): LogicalPlan = {
    val timeoutMs = Conf.timeoutMs(conf)
    val callId = Calls.nextId()
    m.calls.incrementAndGet()

    val t0 = System.nanoTime()
    // The facts about the data the rules that may act on this plan declared (most: none).
    val needs = active.needsFor(plan)
    val facts = if (needs.isEmpty) null else RelationFacts.forPlan(plan, needs, conf)
    val enc = new PlanEncoder(reg.spec, facts)
    val payload = try enc.encode(plan, g => {
      g.writeNumberField("id", callId)
      g.writeStringField("pos", position.name)
      if (active.excluded.nonEmpty) {
        g.writeArrayFieldStart("excluded"); active.excluded.foreach(g.writeString); g.writeEndArray()
      }
      // Catalyst rules switched off in this session (short names): some sparkext rules do
      // work that Catalyst would otherwise do later in the optimizer.
      if (active.catalystExcluded.nonEmpty) {
        g.writeArrayFieldStart("catalyst_excluded")
        active.catalystExcluded.foreach(g.writeString)
        g.writeEndArray()
      }
      if (trace) g.writeBooleanField("trace", true)
    }) catch {
      case NonFatal(e) => fail(plan, m.encodeErrors,
        s"could not encode the plan for Python ($e); please report this with the plan", plan.treeString)
    }
    val t1 = System.nanoTime()
    m.encodeNanos.addAndGet(t1 - t0)
    m.payloadBytes.addAndGet(payload.length)

    val response = try reg.channel.call(reg.key, payload, timeoutMs) catch {
      case _: PythonChannel.Timeout =>
        reg.breaker.trip(callId, cooldownMs)
        val running = Calls.cancel(reg, callId).filter(_.nonEmpty)
        val who = running.map(r => s" (rule '$r' was running)").getOrElse("")
        val cooldown = if (cooldownMs > 0) s" and for ${Conf.CooldownMs}=$cooldownMs in this session" else ""
        fail(plan, m.timeouts, s"Python rules did not answer within ${Conf.TimeoutMs}=$timeoutMs$who; " +
          s"they are skipped for the rest of this query$cooldown", refused = running.toSeq)
      case NonFatal(e) =>
        fail(plan, m.pythonErrors, s"the call to Python failed: $e (is the Python driver alive?)")
    } finally {
      m.pythonNanos.addAndGet(System.nanoTime() - t1)
    }

    // The common answer, read without Jackson: parsing even this much JSON with it cost
    // 0.1 ms inside the optimizer (docs/performance.md).
    val unchangedStats = BridgeCall.unchangedStats(response)
    if (unchangedStats != null) {
      record(unchangedStats)
      m.unchanged.incrementAndGet()
      return plan
    }
    val doc = try PlanCodec.mapper.readTree(response) catch {
      case e: StreamConstraintsException => fail(plan, m.pythonErrors,
        s"Python's answer is over one of the JVM's JSON parsing limits: ${e.getMessage}")
      case NonFatal(e) => fail(plan, m.pythonErrors, s"Python answered with malformed JSON: $e")
    }
    record(doc)
    val error = doc.get("error")
    if (error != null) {
      val rule = text(error, "rule")
      val kind = text(error, "kind")
      fail(plan, m.pythonErrors, PythonRules.describeError(error), text(error, "traceback"),
        refused = if (rule.nonEmpty && kind != "cancelled") rule.split(", ").toSeq else Nil)
    }
    if (doc.has("unchanged")) {
      m.unchanged.incrementAndGet()
      return plan
    }
    val changedBy = Option(doc.get("rules")).map(_.asScala.map(_.asText()).toSeq).getOrElse(Nil)
    val by = if (changedBy.isEmpty) "Python rules" else changedBy.mkString("rule(s) ", ", ", "")

    val t2 = System.nanoTime()
    val rebuilt = try {
      val types = PlanRebuilder.types(doc.get("types"))
      if (trace) logSteps(plan, doc.get("trace"), enc.call, types)
      OrderFacts.record(doc.get("facts"), new PlanRebuilder(reg.spec, enc.call, types).plan)
      new PlanRebuilder(reg.spec, enc.call, types).plan(doc.get("plan"))
    } catch {
      case NonFatal(e) => fail(plan, m.rejected, s"the plan returned by $by cannot be built: ${e.getMessage}",
        refused = changedBy)
    } finally {
      m.rebuildNanos.addAndGet(System.nanoTime() - t2)
    }
    if (rebuilt eq plan) {
      m.unchanged.incrementAndGet()
      return plan
    }

    val t3 = System.nanoTime()
    val problem = try BridgeCall.validate(plan, rebuilt) catch {
      case NonFatal(e) => Some(e.toString)
    } finally {
      m.validateNanos.addAndGet(System.nanoTime() - t3)
    }
    problem.foreach(p => fail(plan, m.rejected, s"the plan returned by $by was rejected: $p",
      refused = changedBy))
    m.accepted.incrementAndGet()
    rebuilt
  }

  /** Each rule's change in Catalyst's plan change log; a step that cannot be rebuilt on its
   *  own (the log is a diagnostic) ends the log of this call, never the call. */
  private def logSteps(input: LogicalPlan, steps: JsonNode, call: EncodedCall,
      types: IndexedSeq[DataType]): Unit = {
    if (steps == null || !steps.isArray) return
    val rebuilt = steps.asScala.toSeq.flatMap { s =>
      try Some(s.get("rule").asText() -> new PlanRebuilder(reg.spec, call, types).plan(s.get("plan")))
      catch { case NonFatal(_) => None }
    }
    PlanChangeLog.log(input, rebuilt)
  }

  private def text(j: JsonNode, field: String): String = {
    val v = j.get(field)
    if (v == null || v.isNull) "" else v.asText()
  }
}

private[sparkext] object BridgeCall {

  /** Python's answer when no rule changed the plan (sparkext/wire.py `UNCHANGED_ANSWER`). */
  val Unchanged = "{\"unchanged\":true}"
  /** The same with the rules' figures, read by this prefix (`UNCHANGED_WITH_STATS`; the
   *  handshake compares the two sides'). */
  val UnchangedWithStats = "{\"unchanged\":true,\"stats\":["

  /**
   * The figures of an unchanged answer (`{"unchanged":true,"stats":[1,2,...]}`,
   * sparkext/wire.py `unchanged_answer`), read without a JSON parser; null for any other.
   */
  def unchangedStats(answer: String): Array[Long] = {
    if (answer == Unchanged) return Array.emptyLongArray
    if (!answer.startsWith(UnchangedWithStats) || !answer.endsWith("]}")) return null
    val numbers = answer.substring(UnchangedWithStats.length, answer.length - 2)
    if (numbers.isEmpty) return Array.emptyLongArray
    try numbers.split(',').map(_.toLong) catch { case _: NumberFormatException => null }
  }

  /**
   * Accepts a rewrite only when it is resolved, has exactly the input's output attributes
   * (ids, names, types, order), passes the analyzer's checks on its new nodes
   * ([[PlanChecks]]) and Catalyst's own `LogicalPlanIntegrity` checks.
   */
  def validate(before: LogicalPlan, after: LogicalPlan): Option[String] = {
    if (!after.resolved) return Some("the plan is not resolved:\n" + after.treeString)
    val (a, b) = (before.output, after.output)
    val same = a.length == b.length && a.zip(b).forall { case (x, y) =>
      x.exprId == y.exprId && x.name == y.name && DataTypeUtils.sameType(x.dataType, y.dataType)
    }
    if (!same) {
      return Some(s"the output changed from [${a.mkString(", ")}] to [${b.mkString(", ")}]")
    }
    PlanChecks.problem(before, after).orElse(SparkShim.validateIntegrity(before, after))
  }
}

