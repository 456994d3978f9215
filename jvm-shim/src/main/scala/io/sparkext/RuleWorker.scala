package io.sparkext

import com.fasterxml.jackson.databind.node.ObjectNode
import org.slf4j.LoggerFactory

import org.apache.spark.SparkConf
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.sparkext.{SparkextConf => Conf}

/**
 * The rule worker: a Python process the driver JVM starts for itself when
 * `spark.sparkext.rules` is set, so that `spark-sql`, the Thrift server, a Spark Connect
 * server or a Scala application runs Python rules with no PySpark driver
 * (`sparkext/worker.py`; docs/design.md, "Rule worker"). Started and watched by
 * [[Workers]]; its registration is the one `sparkext.enable` would send through py4j,
 * compiled the same way ([[Sparkext.compile]]). A session whose PySpark driver called
 * `sparkext.enable` keeps its own registration.
 *
 * Failures leave plans unchanged, like any failed call: a worker that cannot start is
 * reported once, with the cause (its stderr's tail), and not started again for
 * `spark.sparkext.cooldownMs`; a worker that died is reported, and the next call starts a
 * new one.
 */
object RuleWorker {
  /** Comma-separated `module:attribute` entries: rules, rule lists or batches. */
  val RulesKey: String = Conf.Rules
  /** The worker's interpreter (else PySpark's settings, else `PYSPARK_PYTHON`, else `python3`). */
  val PythonKey: String = Conf.Python

  private val log = LoggerFactory.getLogger("io.sparkext.RuleWorker")

  private object Role extends WorkerRole {
    val what = "rule worker"
    def describe(conf: SparkConf): String = {
      val rules = conf.get(RulesKey, "").trim
      if (rules.isEmpty) "" else s"$RulesKey=$rules"
    }
    def request(conf: SparkConf, config: ObjectNode): Unit = config.put("rules", conf.get(RulesKey, "").trim)
  }

  private val workers = new Workers(Role, log)

  /** Whether the session's driver names rules for a worker (cheap: read once per context). */
  def isConfigured(session: SparkSession): Boolean = workers.isConfigured(session.sparkContext)

  /**
   * The worker's registration, starting the worker when there is none; null (the plan stays
   * as it is) when it cannot start or has died, after reporting that to `state` (a warning
   * and `worker_errors`, or a [[SparkextException]] under `spark.sparkext.strict`).
   */
  def registration(session: SparkSession, state: SessionBridge, conf: SQLConf): Registration = {
    val strict = Conf.strict(conf)
    val m = state.metrics
    val cooldownMs = Conf.cooldownMs(conf)
    workers.acquire(session.sparkContext, cooldownMs,
        s"; it is tried again after ${Conf.CooldownMs}=$cooldownMs ms") match {
      case Acquired.Running(w, fresh) =>
        if (fresh) Conf.check(conf.getAllConfs, w.registration.rules.map(_.name)).foreach(x => log.warn(x))
        w.registration
      case Acquired.Died(message) =>
        PythonRules.report(state, strict, m.workerErrors,
          s"$message; the next optimizer call starts a new one")
        null
      case Acquired.CannotStart(message, true) =>
        PythonRules.report(state, strict, m.workerErrors, message)
        null
      case Acquired.CannotStart(message, false) =>
        m.skipped.incrementAndGet()
        m.skippedWorker.incrementAndGet()
        if (strict) throw new SparkextException(s"sparkext: $message")
        null
      case Acquired.Absent => null
    }
  }

  /** The pid of this JVM's rule worker, or -1 when none runs (for tests and operators). */
  def pid(): Long = workers.pid()

  /** Workers started by this JVM so far. */
  def starts(): Long = workers.starts()
}
