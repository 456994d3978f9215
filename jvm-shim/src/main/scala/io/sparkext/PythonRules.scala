package io.sparkext

import java.util.concurrent.{Callable, ExecutionException, Executors, ThreadFactory, TimeUnit, TimeoutException}
import java.util.concurrent.atomic.{AtomicInteger, AtomicLong}

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.JsonNode
import org.slf4j.LoggerFactory

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, LogicalPlanIntegrity}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.internal.SQLConf

/**
 * The Catalyst rule that hands the plan to Python: one callback per invocation, never one
 * per node. Steps (docs/architecture.md): skip fast, encode, call, rebuild, validate. Any
 * failure leaves the input plan in place with one warning and one counter moved, unless
 * `spark.sparkext.strict=true`, which turns the warning into a [[SparkextException]].
 */
final class PythonRules(session: SparkSession, val position: Position) extends Rule[LogicalPlan] {

  override val ruleName: String = s"io.sparkext.PythonRules(${position.name})"

  override def apply(plan: LogicalPlan): LogicalPlan = {
    val state = Sparkext.stateOrNull(session)
    if (state == null) return plan
    val reg = state.registration
    if (reg == null) return plan
    val rules = reg.rulesAt(position)
    if (rules.isEmpty) return plan

    val m = state.metrics
    val conf = SQLConf.get
    def skip(reason: AtomicLong): LogicalPlan = {
      m.skipped.incrementAndGet()
      reason.incrementAndGet()
      plan
    }
    if (!PythonRules.flag(conf, Conf.Enabled, default = true)) return skip(m.skippedDisabled)
    val excludedConf = conf.getConfString(Conf.ExcludedRules, "").trim
    val excluded = excludedConf.split(",").map(_.trim).filter(_.nonEmpty).toSet
    val active = rules.filterNot(r => excluded.contains(r.name))
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

    val result = new BridgeCall(reg, position, m, conf, excluded).run(plan)
    state.memoize(position, result, reg.version, memoKey)
    result
  }
}

object PythonRules {
  private[sparkext] val log = LoggerFactory.getLogger("io.sparkext.PythonRules")

  def flag(conf: SQLConf, key: String, default: Boolean): Boolean =
    conf.getConfString(key, default.toString).trim.equalsIgnoreCase("true")

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

/** The callback runs on its own thread so that a slow rule can be abandoned at the timeout. */
private[sparkext] object Callbacks {
  private val ids = new AtomicLong()
  private val pool = Executors.newCachedThreadPool(new ThreadFactory {
    private val n = new AtomicInteger()
    override def newThread(r: Runnable): Thread = {
      val t = new Thread(r, s"sparkext-callback-${n.incrementAndGet()}")
      t.setDaemon(true)
      t
    }
  })

  def nextId(): Long = ids.incrementAndGet()

  final class Timeout(val running: String) extends Exception

  def call(bridge: RuleBridge, payload: String, timeoutMs: Long, callId: Long): String = {
    if (timeoutMs <= 0) return Transport.apply(bridge, payload)
    val f = pool.submit(new Callable[String] {
      def call(): String = Transport.apply(bridge, payload)
    })
    try f.get(timeoutMs, TimeUnit.MILLISECONDS) catch {
      case _: TimeoutException =>
        // The Python thread cannot be interrupted; its answer will be dropped when it comes.
        val running = try {
          pool.submit(new Callable[String] { def call(): String = bridge.running(callId) })
            .get(1, TimeUnit.SECONDS)
        } catch { case NonFatal(_) => "" }
        throw new Timeout(running)
      case e: ExecutionException if e.getCause != null => throw e.getCause
    }
  }
}

/**
 * py4j writes a command through an 8 KiB buffer on a socket with Nagle's algorithm on: a
 * payload over 8 KiB leaves in two writes, the second held back until the first is
 * acknowledged, and the receiver delays that acknowledgement (40 ms on Linux). Measured:
 * a 8.4 KB plan took 45 ms to reach Python, a 4.5 KB one 0.8 ms. So the connection a
 * thread uses to call Python gets TCP_NODELAY (py4j's pinned-thread mode, pyspark's
 * default, keeps one connection per thread; the first large call on a new thread still
 * pays once).
 */
private[sparkext] object Transport {
  import py4j.Py4JPythonClientPerThread

  private lazy val gatewayField = {
    val f = classOf[py4j.reflection.PythonProxyHandler].getDeclaredField("gateway")
    f.setAccessible(true)
    f
  }

  def apply(bridge: RuleBridge, payload: String): String = {
    noDelay(bridge)
    val answer = bridge.apply(payload)
    noDelay(bridge)
    answer
  }

  private def noDelay(bridge: RuleBridge): Unit = try {
    java.lang.reflect.Proxy.getInvocationHandler(bridge) match {
      case h: py4j.reflection.PythonProxyHandler =>
        gatewayField.get(h).asInstanceOf[py4j.Gateway].getCallbackClient match {
          case c: Py4JPythonClientPerThread =>
            val connection = c.getPerThreadConnection
            if (connection != null && !connection.getSocket.getTcpNoDelay) {
              connection.getSocket.setTcpNoDelay(true)
            }
          case _ =>
        }
      case _ =>
    }
  } catch { case NonFatal(_) => }
}

/** One optimizer invocation that reaches Python. */
private[sparkext] final class BridgeCall(
    reg: Registration,
    position: Position,
    m: BridgeMetrics,
    conf: SQLConf,
    excluded: Set[String]) {

  private val strict = PythonRules.flag(conf, Conf.Strict, default = false)

  private final class Failed(val plan: LogicalPlan) extends Exception

  def run(plan: LogicalPlan): LogicalPlan = try attempt(plan) catch {
    case f: Failed => f.plan
  }

  /** Counts, warns once, and gives back the input plan (or throws, in strict mode). */
  private def fail(plan: LogicalPlan, counter: AtomicLong, message: String, detail: String = ""): Nothing = {
    counter.incrementAndGet()
    val short = if (message.length > 2000) message.substring(0, 2000) + " ..." else message
    val warning = s"sparkext: $short. The query goes on with the plan unchanged " +
      s"(${Conf.Strict}=true turns this into an error)."
    m.recordWarning(warning)
    if (strict) throw new SparkextException(s"sparkext: $message" + (if (detail.isEmpty) "" else s"\n$detail"))
    PythonRules.log.warn(warning)
    if (detail.nonEmpty) PythonRules.log.debug(detail)
    throw new Failed(plan)
  }

  private def attempt(plan: LogicalPlan): LogicalPlan = {
    val timeoutMs = try conf.getConfString(Conf.TimeoutMs, Conf.DefaultTimeoutMs.toString).trim.toLong
      catch { case _: NumberFormatException => Conf.DefaultTimeoutMs }
    val callId = Callbacks.nextId()
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
      val catalystExcluded = conf.optimizerExcludedRules.toSeq
        .flatMap(_.split(",")).map(_.trim).filter(_.nonEmpty).map(_.split('.').last)
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

    val response = try Callbacks.call(reg.bridge, payload, timeoutMs, callId) catch {
      case t: Callbacks.Timeout =>
        val who = if (t.running.nonEmpty) s" (rule '${t.running}' was running)" else ""
        fail(plan, m.timeouts, s"Python rules did not answer within ${Conf.TimeoutMs}=$timeoutMs$who")
      case NonFatal(e) =>
        fail(plan, m.pythonErrors, s"the Python callback failed: $e (is the Python driver alive?)")
    } finally {
      m.pythonNanos.addAndGet(System.nanoTime() - t1)
    }

    val doc = try PlanCodec.mapper.readTree(response) catch {
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
      new PlanRebuilder(reg.spec, enc, PlanRebuilder.types(doc.get("types"))).plan(doc.get("plan"))
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

  /**
   * Accepts a rewrite only when it is resolved, has exactly the input's output attributes
   * (ids, names, types, order) and passes Catalyst's own `LogicalPlanIntegrity` checks.
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
    // validateOptimizedPlan leaves these two to Catalyst's planChangeValidation (off by
    // default): a rule's attribute that no child produces must not reach execution.
    LogicalPlanIntegrity.validateOptimizedPlan(before, after, true)
      .orElse(LogicalPlanIntegrity.validateNoDanglingReferences(after))
      .orElse(LogicalPlanIntegrity.validateAggregateExpressions(after))
  }
}

