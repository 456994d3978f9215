package io.sparkext

import java.io.{BufferedInputStream, BufferedOutputStream, DataOutputStream, EOFException, IOException, InputStream}
import java.net.{InetAddress, InetSocketAddress, Socket, SocketTimeoutException}
import java.nio.charset.StandardCharsets
import java.util.concurrent.{ConcurrentHashMap, ConcurrentLinkedDeque}

import scala.util.control.NonFatal

/**
 * The JVM end of `sparkext/channel.py`: the optimizer's own thread writes a request to the
 * Python process over a loopback socket and reads the answer, the wait bounded by
 * `spark.sparkext.timeoutMs`. Frames, the token and why not a py4j callback:
 * docs/wire-format.md ("Transport").
 *
 * One channel per Python process (its port and token), shared by every registration of that
 * process: each call names its registration's key, so a new `sparkext.enable` keeps the
 * connections. They are pooled: a thread takes an idle one (or opens one) for a call and
 * gives it back afterwards, so threads optimizing at once each have their own. A connection
 * whose call failed or timed out is closed, never reused: Python may still write its answer.
 */
final class PythonChannel private (port: Int, token: String) {
  import PythonChannel._

  private val idle = new ConcurrentLinkedDeque[Connection]()

  /**
   * One call to the bridge registered under `key`: the request (UTF-8 JSON) out, the answer
   * back. Throws [[PythonChannel.Timeout]] when the answer has not arrived `timeoutMs` after
   * the call began (0 or less: no limit), an `IOException` when Python cannot be reached or
   * hung up. Writing the request is not bounded: it fits in the socket's buffers unless the
   * plan is megabytes of JSON.
   */
  def call(key: Long, request: Array[Byte], timeoutMs: Long): String = {
    val deadline = deadlineAfter(timeoutMs)
    val pooled = idle.pollFirst()
    if (pooled != null) {
      try return attempt(pooled, key, request, deadline) catch {
        // Idle connections outlive a Python process that went away: drop them all and
        // try once on a new connection (rules are pure, so a repeated call is harmless).
        case _: IOException if !timedOut(deadline) => dropIdle()
      }
    }
    attempt(open(deadline), key, request, deadline)
  }

  private def attempt(c: Connection, key: Long, request: Array[Byte], deadline: Long): String = {
    var reusable = false
    try {
      c.out.writeLong(key)
      c.out.writeInt(request.length)
      c.out.write(request)
      c.out.flush()
      val n = c.readInt(deadline)
      if (n < 0 || n > MaxAnswerBytes) throw new IOException(s"Python announced an answer of $n bytes")
      val answer = new Array[Byte](n)
      c.readFully(answer, deadline)
      reusable = true
      new String(answer, StandardCharsets.UTF_8)
    } finally {
      if (reusable && idle.size < MaxIdle) idle.offerFirst(c) else c.close()
    }
  }

  private def dropIdle(): Unit = {
    var c = idle.pollFirst()
    while (c != null) {
      c.close()
      c = idle.pollFirst()
    }
  }

  private def open(deadline: Long): Connection = {
    val socket = new Socket()
    try {
      val wait = if (deadline == 0) ConnectTimeoutMs else math.min(ConnectTimeoutMs, remainingMs(deadline))
      socket.connect(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port), wait)
      socket.setTcpNoDelay(true)
      val c = new Connection(socket)
      val t = token.getBytes(StandardCharsets.US_ASCII)
      c.out.writeInt(t.length)
      c.out.write(t)
      c.out.flush()
      c
    } catch {
      case e: SocketTimeoutException =>
        socket.close()
        if (timedOut(deadline)) throw new Timeout else throw e
      case NonFatal(e) =>
        socket.close()
        throw e
    }
  }
}

object PythonChannel {
  private val channels = new ConcurrentHashMap[(Int, String), PythonChannel]()

  /** The channel to the Python process listening on `port` with `token`. */
  def apply(port: Int, token: String): PythonChannel =
    channels.computeIfAbsent((port, token), _ => new PythonChannel(port, token))

  /** Python's listening socket is on this machine: a connect that takes longer is dead. */
  private val ConnectTimeoutMs = 5000
  /** Idle connections kept per channel (each holds a Python thread); more are closed. */
  private val MaxIdle = 16
  /**
   * No answer is this big; a length beyond it means the stream is not what we think.
   * Python checks its answers against the same bound (`MAX_ANSWER_BYTES` in
   * `sparkext/wire.py`; the handshake at registration compares the two).
   */
  val MaxAnswerBytes: Int = 1 << 30
  /** Longer timeouts are this one (30 days), so that the deadline cannot overflow. */
  private val MaxTimeoutMs = 30L * 24 * 3600 * 1000

  final class Timeout extends Exception

  /** `timeoutMs` from now in `System.nanoTime` terms; 0 means no limit. */
  private def deadlineAfter(timeoutMs: Long): Long = {
    if (timeoutMs <= 0) return 0L
    val d = System.nanoTime() + math.min(timeoutMs, MaxTimeoutMs) * 1000000L
    if (d == 0) 1L else d
  }

  // Differences, not comparisons: nanoTime may wrap.
  private def timedOut(deadline: Long): Boolean = deadline != 0 && deadline - System.nanoTime() <= 0

  /** Milliseconds left until `deadline` (at least 1: 0 would mean "no limit" to a socket). */
  private def remainingMs(deadline: Long): Int =
    math.max(1L, math.min((deadline - System.nanoTime()) / 1000000L, Int.MaxValue)).toInt

  private final class Connection(socket: Socket) {
    val out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream, 1 << 16))
    private val in: InputStream = new BufferedInputStream(socket.getInputStream, 1 << 16)
    private var soTimeout = -1

    def readInt(deadline: Long): Int = {
      val b = new Array[Byte](4)
      readFully(b, deadline)
      ((b(0) & 0xff) << 24) | ((b(1) & 0xff) << 16) | ((b(2) & 0xff) << 8) | (b(3) & 0xff)
    }

    /** Reads `b` whole, each read bounded by the time left until `deadline` (0: none). */
    def readFully(b: Array[Byte], deadline: Long): Unit = {
      var off = 0
      while (off < b.length) {
        if (timedOut(deadline)) throw new Timeout
        setTimeout(if (deadline == 0) 0 else remainingMs(deadline))
        val n = try in.read(b, off, b.length - off) catch {
          case _: SocketTimeoutException => throw new Timeout
        }
        if (n < 0) throw new EOFException("Python closed the connection")
        off += n
      }
    }

    private def setTimeout(ms: Int): Unit = if (ms != soTimeout) {
      socket.setSoTimeout(ms)
      soTimeout = ms
    }

    def close(): Unit = try socket.close() catch { case NonFatal(_) => }
  }
}
