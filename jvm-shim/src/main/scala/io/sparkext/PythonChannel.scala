package io.sparkext

import java.io.{BufferedInputStream, BufferedOutputStream, DataInputStream, DataOutputStream}
import java.net.{InetAddress, InetSocketAddress, Socket, SocketTimeoutException}
import java.nio.charset.StandardCharsets
import java.util.concurrent.{ConcurrentHashMap, ConcurrentLinkedDeque}

import scala.util.control.NonFatal

/**
 * The JVM end of `sparkext/channel.py`: the optimizer's own thread writes a request to the
 * Python process over a loopback socket and reads the answer, the read bounded by
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
   * back. Throws [[PythonChannel.Timeout]] when no answer came within `timeoutMs` (0 or
   * less: no limit), an `IOException` when Python cannot be reached or hung up.
   */
  def call(key: Long, request: Array[Byte], timeoutMs: Long): String = {
    val c = Option(idle.pollFirst()).getOrElse(open())
    var reusable = false
    try {
      c.setTimeout(if (timeoutMs <= 0) 0 else math.min(timeoutMs, Int.MaxValue).toInt)
      c.out.writeLong(key)
      c.out.writeInt(request.length)
      c.out.write(request)
      c.out.flush()
      val answer = new Array[Byte](c.in.readInt())
      c.in.readFully(answer)
      reusable = true
      new String(answer, StandardCharsets.UTF_8)
    } catch {
      case _: SocketTimeoutException => throw new Timeout
    } finally {
      if (reusable) idle.offerFirst(c) else c.close()
    }
  }

  private def open(): Connection = {
    val socket = new Socket()
    try {
      socket.connect(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port), ConnectTimeoutMs)
      socket.setTcpNoDelay(true)
      val c = new Connection(socket)
      val t = token.getBytes(StandardCharsets.US_ASCII)
      c.out.writeInt(t.length)
      c.out.write(t)
      c.out.flush()
      c
    } catch {
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

  final class Timeout extends Exception

  private final class Connection(val socket: Socket) {
    val out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream, 1 << 16))
    val in = new DataInputStream(new BufferedInputStream(socket.getInputStream, 1 << 16))
    private var timeoutMs = -1

    def setTimeout(ms: Int): Unit = if (ms != timeoutMs) {
      socket.setSoTimeout(ms)
      timeoutMs = ms
    }

    def close(): Unit = try socket.close() catch { case NonFatal(_) => }
  }
}
