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

import io.sparkext.shims.SparkShim

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
      if (!PythonRules.flag(conf, Conf.Enabled, default = true)) return plan  // no worker for it
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
    if (!PythonRules.flag(conf, Conf.Enabled, default = true)) return skip(m.skippedDisabled)
    val excludedConf = conf.getConfString(Conf.ExcludedRules, "").trim
    val excluded = excludedConf.split(",").map(_.trim).filter(_.nonEmpty).toSet
    // A rule that duplicates Catalyst rules all active in this session has nothing to add.
    lazy val catalystExcluded = PythonRules.catalystExcluded(conf).toSet
    val active = rules.filter(r => !excluded.contains(r.name) && r.activeWith(catalystExcluded))
    if (active.isEmpty) return skip(m.skippedExcluded)
    // A fixed-point batch hands back the very plan we returned: Python's answer is known,
    // as long as nothing the rules read changed (Catalyst's excluded rules travel too).
    val memoKey = excludedConf + "\u0000" + conf.getConfString(SQLConf.OPTIMIZER_EXCLUDED_RULES.key, "")
    if (state.isMemoized(position, plan, reg.version, memoKey)) return skip(m.skippedSamePlan)
    // Rules declare the node kinds they match; a plan with none of them cannot change.
    if (active.forall(_.patterns.nonEmpty) &&
        !plan.containsAnyPattern(active.flatMap(_.patterns).distinct: _*)) {
      return skip(m.skippedNoPattern)
    }

    val call = new BridgeCall(reg, position, state, conf, excluded)
    if (reg.breaker.isOpen(call.cooldownMs, Calls.stillRunning(reg, _))) {
      m.skipped.incrementAndGet()
      return call.skipOpenBreaker(plan)
    }
    val result = call.run(plan)
    state.memoize(position, result, reg.version, memoKey)
    result
  }
}

object PythonRules {
  private[sparkext] val log = LoggerFactory.getLogger("io.sparkext.PythonRules")

  /** The short names of the Catalyst rules in `spark.sql.optimizer.excludedRules`. */
  def catalystExcluded(conf: SQLConf): Seq[String] =
    conf.optimizerExcludedRules.toSeq
      .flatMap(_.split(",")).map(_.trim).filter(_.nonEmpty).map(_.split('.').last)

  def flag(conf: SQLConf, key: String, default: Boolean): Boolean =
    conf.getConfString(key, default.toString).trim.equalsIgnoreCase("true")

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
    excluded: Set[String]) {

  private val m = session.metrics

  private val strict = PythonRules.flag(conf, Conf.Strict, default = false)

  val cooldownMs: Long = Conf.millis(conf, Conf.CooldownMs, Conf.DefaultCooldownMs)

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

  /** [[PythonRules.report]], then gives back the input plan. */
  private def fail(plan: LogicalPlan, counter: AtomicLong, message: String, detail: String = ""): Nothing = {
    PythonRules.report(session, strict, counter, message, detail)
    throw new Failed(plan)
  }

  private def attempt(plan: LogicalPlan): LogicalPlan = {
    val timeoutMs = Conf.millis(conf, Conf.TimeoutMs, Conf.DefaultTimeoutMs)
    val callId = Calls.nextId()
    m.calls.incrementAndGet()

    val t0 = System.nanoTime()
    val enc = new PlanEncoder(reg.spec)
    val payload = try enc.encode(plan, g => {
      g.writeNumberField("id", callId)
      g.writeStringField("pos", position.name)
      if (excluded.nonEmpty) {
        g.writeArrayFieldStart("excluded"); excluded.foreach(g.writeString); g.writeEndArray()
      }
      // Catalyst rules switched off in this session (short names): some sparkext rules do
      // work that Catalyst would otherwise do later in the optimizer.
      val catalystExcluded = PythonRules.catalystExcluded(conf)
      if (catalystExcluded.nonEmpty) {
        g.writeArrayFieldStart("catalyst_excluded")
        catalystExcluded.foreach(g.writeString)
        g.writeEndArray()
      }
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
        val who = Calls.cancel(reg, callId).filter(_.nonEmpty).map(r => s" (rule '$r' was running)").getOrElse("")
        val cooldown = if (cooldownMs > 0) s" and for ${Conf.CooldownMs}=$cooldownMs in this session" else ""
        fail(plan, m.timeouts, s"Python rules did not answer within ${Conf.TimeoutMs}=$timeoutMs$who; " +
          s"they are skipped for the rest of this query$cooldown")
      case NonFatal(e) =>
        fail(plan, m.pythonErrors, s"the call to Python failed: $e (is the Python driver alive?)")
    } finally {
      m.pythonNanos.addAndGet(System.nanoTime() - t1)
    }

    // The common answer, compared as text: parsing even this much JSON with Jackson cost
    // 0.1 ms inside the optimizer (docs/performance.md).
    if (response == BridgeCall.Unchanged) {
      m.unchanged.incrementAndGet()
      return plan
    }
    val doc = try PlanCodec.mapper.readTree(response) catch {
      case e: StreamConstraintsException => fail(plan, m.pythonErrors,
        s"Python's answer is over one of the JVM's JSON parsing limits: ${e.getMessage}")
      case NonFatal(e) => fail(plan, m.pythonErrors, s"Python answered with malformed JSON: $e")
    }
    val error = doc.get("error")
    if (error != null) {
      fail(plan, m.pythonErrors, PythonRules.describeError(error), text(error, "traceback"))
    }
    if (doc.has("unchanged")) {
      m.unchanged.incrementAndGet()
      return plan
    }
    val by = doc.get("rules") match {
      case null => "Python rules"
      case rs => rs.asScala.map(_.asText()).mkString("rule(s) ", ", ", "")
    }

    val t2 = System.nanoTime()
    val rebuilt = try {
      new PlanRebuilder(reg.spec, enc.call, PlanRebuilder.types(doc.get("types"))).plan(doc.get("plan"))
    } catch {
      case NonFatal(e) => fail(plan, m.rejected, s"the plan returned by $by cannot be built: ${e.getMessage}")
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
    problem.foreach(p => fail(plan, m.rejected, s"the plan returned by $by was rejected: $p"))
    m.accepted.incrementAndGet()
    rebuilt
  }

  private def text(j: JsonNode, field: String): String = {
    val v = j.get(field)
    if (v == null || v.isNull) "" else v.asText()
  }
}

private[sparkext] object BridgeCall {

  /** Python's answer when no rule changed the plan, exactly as sparkext/bridge.py writes it. */
  val Unchanged = "{\"unchanged\":true}"

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

