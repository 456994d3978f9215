package io.sparkext

import java.io.{BufferedReader, InputStream, InputStreamReader}
import java.nio.charset.StandardCharsets
import java.security.SecureRandom
import java.util.concurrent.{LinkedBlockingQueue, TimeUnit}
import java.util.concurrent.atomic.AtomicLong

import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.ObjectNode
import org.slf4j.Logger

import org.apache.spark.{SparkConf, SparkContext}
import org.apache.spark.scheduler.{SparkListener, SparkListenerApplicationEnd}
import org.apache.spark.sql.sparkext.{SparkextConf => Conf}

/**
 * What one kind of Python worker does differently: the rule worker ([[RuleWorker]],
 * `spark.sparkext.rules`) and the guard worker ([[Guards]], `spark.sparkext.guards`) are
 * started, stopped and watched the same way ([[Workers]]); they differ in what they are
 * asked to serve.
 */
private[sparkext] trait WorkerRole {
  /** "rule worker", "guard worker": for messages. */
  def what: String
  /** What the context's launch configuration asks the worker to serve, for messages; "" when
   *  it asks for no worker. */
  def describe(conf: SparkConf): String
  /** Adds what the worker is to serve to the JSON line its stdin gets. */
  def request(conf: SparkConf, config: ObjectNode): Unit
}

/** A worker process serving one registration ([[Sparkext.compile]] of what it printed). */
private[sparkext] final class WorkerProcess(val process: Process, val pid: Long,
    val registration: Registration, val spec: JsonNode, private[sparkext] val stderr: WorkerLog) {
  def stop(): Unit = {
    // Closing stdin is the worker's signal to stop; it removes its socket on the way out.
    try process.getOutputStream.close() catch { case NonFatal(_) => }
    if (!process.waitFor(2, TimeUnit.SECONDS)) process.destroyForcibly()
  }
}

/** What asking for a worker gave. */
private[sparkext] sealed trait Acquired
private[sparkext] object Acquired {
  /** A live worker; `fresh` when this request started it. */
  final case class Running(worker: WorkerProcess, fresh: Boolean = false) extends Acquired
  /** The worker was found dead (reported once: the next request starts a new one). */
  final case class Died(message: String) extends Acquired
  /** It could not start; `fresh` when this request tried (else a cool-down is running). */
  final case class CannotStart(message: String, fresh: Boolean) extends Acquired
  /** The SparkContext stopped, or it asks for no worker. */
  case object Absent extends Acquired
}

/**
 * Python workers of one [[WorkerRole]] that the driver JVM starts for itself: one process
 * per SparkContext, started at the first request and stopped with the context (and, through
 * its stdin, when this JVM exits). The secret goes to it on its stdin, with what it is to
 * serve; it answers on its stdout with its registration, which the calls then use over a
 * [[PythonChannel]] (`sparkext/worker.py`; docs/design.md, "Rule worker").
 */
private[sparkext] final class Workers(role: WorkerRole, log: Logger) {
  private val mapper = new ObjectMapper()
  private val random = new SecureRandom()
  private val started = new AtomicLong()

  /** What one SparkContext's conf says about the worker; read once per context. */
  private final class Driver(val sc: SparkContext) {
    val conf: SparkConf = sc.getConf
    val wanted: String = role.describe(conf)
    val python: String = Seq(Conf.Python, "spark.pyspark.driver.python", "spark.pyspark.python")
      .flatMap(conf.getOption).map(_.trim).find(_.nonEmpty)
      .orElse(Option(System.getenv("PYSPARK_PYTHON")).map(_.trim).filter(_.nonEmpty))
      .getOrElse("python3")
    /**
     * Path entries for the `--py-files` on this machine, where the worker's modules may
     * have been sent: a zip or egg itself, the folder of a `.py` file.
     */
    val pyFiles: Seq[String] = conf.get("spark.submit.pyFiles", "").split(",").toSeq
      .map(_.trim.stripPrefix("file://").stripPrefix("file:")).filter(_.nonEmpty)
      .map(f => if (f.endsWith(".py")) new java.io.File(f).getAbsoluteFile.getParent else f)
      .distinct
    @volatile var worker: WorkerProcess = null
    /** Why the last start failed, and until when (`System.nanoTime`) no start is tried. */
    @volatile var failure: String = null
    @volatile var retryAt = 0L
    @volatile var stopped = false
  }

  @volatile private var driver: Driver = null

  private def driverOf(sc: SparkContext): Driver = {
    val d = driver
    if (d != null && (d.sc eq sc)) return d
    synchronized {
      if (driver == null || (driver.sc ne sc)) {
        val fresh = new Driver(sc)
        if (fresh.wanted.nonEmpty) {
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

  /** Whether the context's launch configuration asks for a worker (read once per context). */
  def isConfigured(sc: SparkContext): Boolean = driverOf(sc).wanted.nonEmpty

  /**
   * The context's worker, started when there is none. A dead one is reported once (the next
   * request starts a new one); after a failed start none is tried for `retryMs`, and the
   * failure, `retryNote` appended, is what those requests get.
   */
  def acquire(sc: SparkContext, retryMs: Long, retryNote: String): Acquired = {
    val d = driverOf(sc)
    val w = d.worker
    if (w != null && w.process.isAlive) return Acquired.Running(w)
    d.synchronized {
      val current = d.worker
      if (current != null && current.process.isAlive) return Acquired.Running(current)
      if (d.stopped || d.wanted.isEmpty) return Acquired.Absent
      if (current != null) {
        d.worker = null
        return Acquired.Died(s"the ${role.what} (pid ${current.pid}) exited with code " +
          s"${current.process.exitValue()}${current.stderr.describe}")
      }
      if (d.failure != null && System.nanoTime() - d.retryAt < 0) {
        return Acquired.CannotStart(d.failure, fresh = false)
      }
      try {
        d.worker = start(d)
        d.failure = null
        Acquired.Running(d.worker, fresh = true)
      } catch {
        case NonFatal(e) =>
          d.failure = s"the ${role.what} for ${d.wanted} could not start: ${e.getMessage}$retryNote"
          d.retryAt = System.nanoTime() + retryMs * 1000000L
          Acquired.CannotStart(d.failure, fresh = true)
      }
    }
  }

  /**
   * Kills `w` if it is still the context's worker, so that the next request starts a new
   * one with no report of its death (a worker stuck in a call that cannot be cancelled).
   */
  def discard(sc: SparkContext, w: WorkerProcess): Unit = {
    val d = driverOf(sc)
    d.synchronized {
      if (d.worker eq w) d.worker = null
    }
    w.process.destroyForcibly()
  }

  /** The pid of this JVM's worker, or -1 when none runs (for tests and operators). */
  def pid(): Long = {
    val d = driver
    val w = if (d == null) null else d.worker
    if (w == null || !w.process.isAlive) -1L else w.pid
  }

  /** Workers started by this JVM so far. */
  def starts(): Long = started.get()

  private class StartFailed(message: String) extends Exception(message)

  private def start(d: Driver): WorkerProcess = {
    val builder = new ProcessBuilder(d.python, "-m", "sparkext.worker")
    if (d.pyFiles.nonEmpty) {
      val path = (d.pyFiles ++ Option(System.getenv("PYTHONPATH")).filter(_.nonEmpty))
      builder.environment().put("PYTHONPATH", path.mkString(java.io.File.pathSeparator))
    }
    val process = try builder.start() catch {
      case e: java.io.IOException => throw new StartFailed(s"cannot run '${d.python}' (${e.getMessage}); " +
        s"set ${Conf.Python} to a Python interpreter that has sparkext installed")
    }
    val stderr = new WorkerLog(process.getErrorStream, log)
    try {
      val secret = new Array[Byte](32)
      random.nextBytes(secret)
      val hex = secret.map(b => f"${b & 0xff}%02x").mkString
      val config = mapper.createObjectNode()
      config.put("secret", hex)
      role.request(d.conf, config)
      config.put("spark_version", d.sc.version)
      // The JVM can connect to AF_UNIX sockets from Java 16 on.
      if (!javaHasUnixSockets) config.put("transport", "tcp")
      val stdin = process.getOutputStream
      stdin.write((mapper.writeValueAsString(config) + "\n").getBytes(StandardCharsets.UTF_8))
      stdin.flush()

      val line = firstLine(process.getInputStream, Workers.StartTimeoutMs) match {
        case Some(null) => throw new StartFailed(s"'${d.python} -m sparkext.worker' did not " +
          s"report its address within ${Workers.StartTimeoutMs} ms" + stderr.describe)
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
      log.info(s"sparkext: started the ${role.what} (pid $pid) for ${d.wanted}")
      new WorkerProcess(process, pid, registration, spec, stderr)
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
    Workers.daemon("sparkext-worker-stdout") {
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
    }, s"sparkext-${role.what.replace(' ', '-')}-shutdown"))
}

private[sparkext] object Workers {
  /** How long a worker may take to import its modules and report its address. */
  val StartTimeoutMs = 60000L

  def daemon(name: String)(body: => Unit): Thread = {
    val t = new Thread(new Runnable { def run(): Unit = body }, name)
    t.setDaemon(true)
    t.start()
    t
  }
}

/** A worker's stderr, logged line by line; its last lines name the cause of a failure. */
private[sparkext] final class WorkerLog(in: InputStream, log: Logger) {
  private val lines = new java.util.ArrayDeque[String]()
  private val MaxLines = 20

  private val reader = Workers.daemon("sparkext-worker-stderr") {
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
