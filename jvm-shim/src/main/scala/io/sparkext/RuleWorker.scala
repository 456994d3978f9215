package io.sparkext

import java.io.{BufferedReader, InputStream, InputStreamReader}
import java.nio.charset.StandardCharsets
import java.security.SecureRandom
import java.util.concurrent.{LinkedBlockingQueue, TimeUnit}
import java.util.concurrent.atomic.AtomicLong

import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.ObjectMapper
import com.fasterxml.jackson.databind.node.ObjectNode
import org.slf4j.LoggerFactory

import org.apache.spark.SparkContext
import org.apache.spark.scheduler.{SparkListener, SparkListenerApplicationEnd}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.sparkext.{SparkextConf => Conf}

/**
 * The rule worker: a Python process the driver JVM starts for itself when
 * `spark.sparkext.rules` is set, so that `spark-sql`, the Thrift server, a Spark Connect
 * server or a Scala application runs Python rules with no PySpark driver
 * (`sparkext/worker.py`; docs/design.md, "Rule worker").
 *
 * One process per SparkContext, shared by every session, started at the first optimizer
 * call that needs it and stopped with the SparkContext (and, through its stdin, when this
 * JVM exits). The secret goes to it on its stdin; it answers on its stdout with the
 * registration `sparkext.enable` would send through py4j, which is compiled the same way
 * ([[Sparkext.compile]]); the calls then go over the same [[PythonChannel]]. A session
 * whose PySpark driver called `sparkext.enable` keeps its own registration.
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
  /** How long a worker may take to import its rules and report its address. */
  val StartTimeoutMs = 60000L

  private val log = LoggerFactory.getLogger("io.sparkext.RuleWorker")
  private val mapper = new ObjectMapper()
  private val random = new SecureRandom()
  private val started = new AtomicLong()

  /** What one SparkContext's conf says about the worker; read once per context. */
  private final class Driver(val sc: SparkContext) {
    private val conf = sc.getConf
    val rules: String = conf.get(RulesKey, "").trim
    val python: String = Seq(PythonKey, "spark.pyspark.driver.python", "spark.pyspark.python")
      .flatMap(conf.getOption).map(_.trim).find(_.nonEmpty)
      .orElse(Option(System.getenv("PYSPARK_PYTHON")).map(_.trim).filter(_.nonEmpty))
      .getOrElse("python3")
    /**
     * Path entries for the `--py-files` on this machine, where rule modules may have been
     * sent: a zip or egg itself, the folder of a `.py` file.
     */
    val pyFiles: Seq[String] = conf.get("spark.submit.pyFiles", "").split(",").toSeq
      .map(_.trim.stripPrefix("file://").stripPrefix("file:")).filter(_.nonEmpty)
      .map(f => if (f.endsWith(".py")) new java.io.File(f).getAbsoluteFile.getParent else f)
      .distinct
    @volatile var worker: Worker = null
    /** Why the last start failed, and until when (`System.nanoTime`) no start is tried. */
    @volatile var failure: String = null
    @volatile var retryAt = 0L
    @volatile var stopped = false
  }

  private final class Worker(val process: Process, val pid: Long, val registration: Registration,
      val stderr: Tail) {
    def stop(): Unit = {
      // Closing stdin is the worker's signal to stop; it removes its socket on the way out.
      try process.getOutputStream.close() catch { case NonFatal(_) => }
      if (!process.waitFor(2, TimeUnit.SECONDS)) process.destroyForcibly()
    }
  }

  @volatile private var driver: Driver = null

  private def driverOf(session: SparkSession): Driver = {
    val sc = session.sparkContext
    val d = driver
    if (d != null && (d.sc eq sc)) return d
    synchronized {
      if (driver == null || (driver.sc ne sc)) {
        val fresh = new Driver(sc)
        if (fresh.rules.nonEmpty) {
          sc.addSparkListener(new SparkListener {
            override def onApplicationEnd(end: SparkListenerApplicationEnd): Unit = stop(fresh)
          })
          shutdownHook
        }
        driver = fresh
      }
      driver
    }
  }

  /** Whether the session's driver names rules for a worker (cheap: read once per context). */
  def isConfigured(session: SparkSession): Boolean = driverOf(session).rules.nonEmpty

  /**
   * The worker's registration, starting the worker when there is none; null (the plan stays
   * as it is) when it cannot start or has died, after reporting that to `state` (a warning
   * and `worker_errors`, or a [[SparkextException]] under `spark.sparkext.strict`).
   */
  def registration(session: SparkSession, state: SessionBridge, conf: SQLConf): Registration = {
    val d = driverOf(session)
    val w = d.worker
    if (w != null && w.process.isAlive) return w.registration
    val strict = Conf.strict(conf)
    val m = state.metrics
    d.synchronized {
      val current = d.worker
      if (current != null && current.process.isAlive) return current.registration
      if (d.stopped) return null
      if (current != null) {
        d.worker = null
        PythonRules.report(state, strict, m.workerErrors,
          s"the rule worker (pid ${current.pid}) exited with code ${current.process.exitValue()}" +
            current.stderr.describe + "; the next optimizer call starts a new one")
        return null
      }
      if (d.failure != null && System.nanoTime() - d.retryAt < 0) {
        m.skipped.incrementAndGet()
        m.skippedWorker.incrementAndGet()
        if (strict) throw new SparkextException(s"sparkext: ${d.failure}")
        return null
      }
      try {
        d.worker = start(d)
        d.failure = null
        val names = d.worker.registration.rules.map(_.name)
        Conf.check(conf.getAllConfs, names).foreach(w => log.warn(w))
        d.worker.registration
      } catch {
        case NonFatal(e) =>
          val cooldownMs = Conf.cooldownMs(conf)
          d.failure = s"the rule worker for $RulesKey=${d.rules} could not start: ${e.getMessage}; " +
            s"it is tried again after ${Conf.CooldownMs}=$cooldownMs ms"
          d.retryAt = System.nanoTime() + cooldownMs * 1000000L
          PythonRules.report(state, strict, m.workerErrors, d.failure)
          null
      }
    }
  }

  /** The pid of this JVM's rule worker, or -1 when none runs (for tests and operators). */
  def pid(): Long = {
    val d = driver
    val w = if (d == null) null else d.worker
    if (w == null || !w.process.isAlive) -1L else w.pid
  }

  /** Workers started by this JVM so far. */
  def starts(): Long = started.get()

  private class StartFailed(message: String) extends Exception(message)

  private def start(d: Driver): Worker = {
    val builder = new ProcessBuilder(d.python, "-m", "sparkext.worker")
    if (d.pyFiles.nonEmpty) {
      val path = (d.pyFiles ++ Option(System.getenv("PYTHONPATH")).filter(_.nonEmpty))
      builder.environment().put("PYTHONPATH", path.mkString(java.io.File.pathSeparator))
    }
    val process = try builder.start() catch {
      case e: java.io.IOException => throw new StartFailed(s"cannot run '${d.python}' (${e.getMessage}); " +
        s"set $PythonKey to a Python interpreter that has sparkext installed")
    }
    val stderr = new Tail(process.getErrorStream)
    try {
      val secret = new Array[Byte](32)
      random.nextBytes(secret)
      val hex = secret.map(b => f"${b & 0xff}%02x").mkString
      val config = mapper.createObjectNode()
      config.put("secret", hex)
      config.put("rules", d.rules)
      config.put("spark_version", d.sc.version)
      // The JVM can connect to AF_UNIX sockets from Java 16 on.
      if (!javaHasUnixSockets) config.put("transport", "tcp")
      val stdin = process.getOutputStream
      stdin.write((mapper.writeValueAsString(config) + "\n").getBytes(StandardCharsets.UTF_8))
      stdin.flush()

      val line = firstLine(process.getInputStream, StartTimeoutMs) match {
        case Some(null) => throw new StartFailed(s"'${d.python} -m sparkext.worker' did not " +
          s"report its address within $StartTimeoutMs ms" + stderr.describe)
        case None =>
          val code = if (process.waitFor(5, TimeUnit.SECONDS)) s" with code ${process.exitValue()}" else ""
          throw new StartFailed(s"'${d.python} -m sparkext.worker' exited$code" + stderr.describe)
        case Some(l) => l
      }
      val spec = mapper.readTree(line)
      spec.get("channel").asInstanceOf[ObjectNode].put("secret", hex)
      val (registration, dropped) = Sparkext.compile(spec, null)
      if (dropped.nonEmpty) {
        log.warn("sparkext: these Catalyst classes differ in this Spark and travel as opaque " +
          "nodes: " + dropped.map { case (name, why) => s"$name: $why" }.mkString("; "))
      }
      val pid = Option(spec.get("pid")).map(_.asLong()).getOrElse(-1L)
      started.incrementAndGet()
      log.info(s"sparkext: started the rule worker (pid $pid) for $RulesKey=${d.rules}")
      new Worker(process, pid, registration, stderr)
    } catch {
      case t: Throwable =>
        process.destroyForcibly()
        t match {
          case _: StartFailed => throw t
          case NonFatal(e) => throw new StartFailed(s"$e${stderr.describe}")
          case _ => throw t
        }
    }
  }

  /**
   * The first line of `in`; None when it ends first, `Some(null)` when `timeoutMs` passes
   * first.
   */
  private def firstLine(in: InputStream, timeoutMs: Long): Option[String] = {
    val lines = new LinkedBlockingQueue[Option[String]]()
    daemon("sparkext-worker-stdout") {
      val reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))
      try {
        lines.put(Option(reader.readLine()))
        // The worker writes nothing more here; read on so that it could never block on it.
        while (reader.readLine() != null) {}
      } catch { case NonFatal(_) => lines.put(None) }
    }
    val line = lines.poll(timeoutMs, TimeUnit.MILLISECONDS)
    if (line == null) Some(null) else line
  }

  /** The worker's stderr, logged line by line; its last lines name the cause of a failure. */
  private final class Tail(in: InputStream) {
    private val lines = new java.util.ArrayDeque[String]()
    private val MaxLines = 20

    private val reader = daemon("sparkext-worker-stderr") {
      val reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))
      try {
        var line = reader.readLine()
        while (line != null) {
          log.info(s"sparkext worker: $line")
          lines.synchronized {
            if (lines.size == MaxLines) lines.removeFirst()
            lines.addLast(line)
          }
          line = reader.readLine()
        }
      } catch { case NonFatal(_) => }
    }

    /** ": <the last lines of stderr>", or "" when it printed nothing. */
    def describe: String = {
      // When the process has ended, its last words are read once the pipe's end is.
      reader.join(1000)
      val text = lines.synchronized(String.join("\n", lines)).trim
      if (text.isEmpty) "" else s"; its stderr ends with:\n$text"
    }
  }

  private def daemon(name: String)(body: => Unit): Thread = {
    val t = new Thread(new Runnable { def run(): Unit = body }, name)
    t.setDaemon(true)
    t.start()
    t
  }

  private lazy val javaHasUnixSockets: Boolean =
    try Class.forName("java.net.UnixDomainSocketAddress") != null
    catch { case _: ClassNotFoundException => false }

  private def stop(d: Driver): Unit = d.synchronized {
    d.stopped = true
    val w = d.worker
    d.worker = null
    if (w != null) w.stop()
  }

  private lazy val shutdownHook: Unit = Runtime.getRuntime.addShutdownHook(
    new Thread(new Runnable {
      def run(): Unit = { val d = driver; if (d != null) stop(d) }
    }, "sparkext-worker-shutdown"))
}
