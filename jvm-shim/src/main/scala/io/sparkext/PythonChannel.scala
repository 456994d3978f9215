package io.sparkext

import java.io.{EOFException, IOException}
import java.net.{InetAddress, InetSocketAddress, SocketAddress, StandardSocketOptions}
import java.nio.ByteBuffer
import java.nio.channels.{SelectionKey, Selector, SocketChannel}
import java.nio.charset.StandardCharsets
import java.security.{MessageDigest, SecureRandom}
import java.util.Arrays
import java.util.concurrent.{ConcurrentHashMap, ConcurrentLinkedDeque}
import javax.crypto.Mac
import javax.crypto.spec.SecretKeySpec

import scala.util.control.NonFatal

import io.sparkext.shims.NetShim

/**
 * The JVM end of `sparkext/channel.py`: the optimizer's own thread writes a request to the
 * Python process over a local socket (AF_UNIX, or loopback TCP) and reads the answer, the
 * wait bounded by `spark.sparkext.timeoutMs`. Frames, the handshake and why not a py4j
 * callback: docs/wire-format.md ("Transport").
 *
 * One channel per Python server (its address and secret), shared by every registration of
 * that process: each call names its registration's key, so a new `sparkext.enable` keeps the
 * connections. They are pooled: a thread takes an idle one (or opens one) for a call and
 * gives it back afterwards, so threads optimizing at once each have their own. A new
 * connection first makes the server prove it knows the secret, and sends nothing else
 * before it has: whoever else holds the address gets no plan. A connection whose call
 * failed or timed out is closed, never reused: Python may still write its answer.
 */
final class PythonChannel private (address: SocketAddress, secret: Array[Byte]) {
  import PythonChannel._

  private val idle = new ConcurrentLinkedDeque[Connection]()

  /**
   * One call to the bridge registered under `key`: the request (UTF-8 JSON) out, the answer
   * back. Throws [[PythonChannel.Timeout]] when the answer has not arrived `timeoutMs` after
   * the call began (0 or less: no limit), an `IOException` when Python cannot be reached,
   * does not prove it knows the secret, hung up, or sent an answer the heap cannot hold.
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
      c.send(key, request, deadline)
      val answer = new String(c.receive(deadline), StandardCharsets.UTF_8)
      reusable = true
      answer
    } catch {
      // Reads grow only as bytes arrive, so only an answer that really is this large can
      // exhaust the heap; the query must still go on, with its plan unchanged.
      case e: OutOfMemoryError => throw new IOException(s"Python's answer does not fit in the JVM's heap ($e)")
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

  /** A new connection, authenticated both ways. */
  private def open(callDeadline: Long): Connection = {
    // Bounded even when the call is not (timeoutMs <= 0): the server is on this machine.
    val handshakeDeadline = deadlineAfter(HandshakeTimeoutMs)
    val deadline = if (callDeadline != 0 && callDeadline - handshakeDeadline < 0) callDeadline else handshakeDeadline
    try authenticate(Connection.open(address, deadline), deadline) catch {
      case _: Timeout if !timedOut(callDeadline) =>
        throw new IOException(s"no handshake with $address within $HandshakeTimeoutMs ms")
    }
  }

  /** `c`, once the server has proved it knows the secret and we have; else closed. */
  private def authenticate(c: Connection, deadline: Long): Connection = try {
    val clientNonce = new Array[Byte](NonceBytes)
    random.nextBytes(clientNonce)
    c.send(Magic ++ clientNonce, deadline)
    val reply = c.readExactly(NonceBytes + ProofBytes, deadline)
    val serverNonce = Arrays.copyOf(reply, NonceBytes)
    val serverProof = Arrays.copyOfRange(reply, NonceBytes, reply.length)
    if (!MessageDigest.isEqual(serverProof, proof(ServerLabel, clientNonce, serverNonce))) {
      throw new IOException(s"the process listening at $address does not know the channel's " +
        "secret; nothing was sent to it")
    }
    c.send(proof(ClientLabel, clientNonce, serverNonce), deadline)
    c
  } catch {
    case t: Throwable =>
      c.close()
      throw t
  }

  /** HMAC-SHA256(secret, label || client nonce || server nonce), as `proof` in channel.py. */
  private def proof(label: Array[Byte], clientNonce: Array[Byte], serverNonce: Array[Byte]): Array[Byte] = {
    val mac = Mac.getInstance("HmacSHA256")
    mac.init(new SecretKeySpec(secret, "HmacSHA256"))
    mac.update(label)
    mac.update(clientNonce)
    mac.doFinal(serverNonce)
  }
}

object PythonChannel {
  private val channels = new ConcurrentHashMap[(String, String), PythonChannel]()

  /**
   * The channel to the Python server at `address` (`unix:<path>` or
   * `tcp:127.0.0.1:<port>`), which knows `secret` (hex).
   */
  def apply(address: String, secret: String): PythonChannel =
    channels.computeIfAbsent((address, secret), _ => new PythonChannel(parse(address), parseHex(secret)))

  /** HexFormat.parseHex, which Java 8 (the Spark 3.5 jars' target) does not have. */
  private def parseHex(hex: String): Array[Byte] = {
    def digit(c: Char): Int = {
      val d = Character.digit(c, 16)
      if (d < 0) throw new IllegalArgumentException(s"not a hexadecimal digit: $c")
      d
    }
    if (hex.length % 2 != 0) throw new IllegalArgumentException("an odd number of hexadecimal digits")
    Array.tabulate(hex.length / 2)(i => (digit(hex(2 * i)) << 4 | digit(hex(2 * i + 1))).toByte)
  }

  private def parse(address: String): SocketAddress = {
    if (address.startsWith("unix:")) return NetShim.unixAddress(address.stripPrefix("unix:"))
    val hostPort = address.stripPrefix("tcp:")
    val colon = hostPort.lastIndexOf(':')
    val host = if (colon > 0 && address.startsWith("tcp:")) InetAddress.getByName(hostPort.substring(0, colon)) else null
    // The channel never leaves the machine: a plan is not sent across a network.
    if (host == null || !host.isLoopbackAddress) {
      throw new IllegalArgumentException(s"not a sparkext channel address: '$address' " +
        "(expected unix:<path> or tcp:127.0.0.1:<port>)")
    }
    new InetSocketAddress(host, hostPort.substring(colon + 1).toInt)
  }

  /** Connecting and authenticating, on this machine: slower means the server is not there. */
  private val HandshakeTimeoutMs = 5000L
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
  /** Bytes per socket read or write, and the most an answer's buffer is ahead of its bytes. */
  private val Chunk = 1 << 16

  // The handshake, as in channel.py.
  private val Magic = "SPX1".getBytes(StandardCharsets.US_ASCII)
  private val NonceBytes = 32
  private val ProofBytes = 32
  private val ServerLabel = "sparkext server".getBytes(StandardCharsets.US_ASCII)
  private val ClientLabel = "sparkext client".getBytes(StandardCharsets.US_ASCII)
  private val random = new SecureRandom()

  final class Timeout extends Exception

  /** `timeoutMs` from now in `System.nanoTime` terms; 0 means no limit. */
  private def deadlineAfter(timeoutMs: Long): Long = {
    if (timeoutMs <= 0) return 0L
    val d = System.nanoTime() + math.min(timeoutMs, MaxTimeoutMs) * 1000000L
    if (d == 0) 1L else d
  }

  // Differences, not comparisons: nanoTime may wrap.
  private def timedOut(deadline: Long): Boolean = deadline != 0 && deadline - System.nanoTime() <= 0

  /** Milliseconds left until `deadline` (at least 1: 0 would mean "no limit" to a selector). */
  private def remainingMs(deadline: Long): Long =
    math.max(1L, (deadline - System.nanoTime()) / 1000000L)

  private object Connection {
    def open(address: SocketAddress, deadline: Long): Connection = {
      val unix = NetShim.isUnix(address)
      val ch = NetShim.open(unix)
      val c = try new Connection(ch) catch {
        case t: Throwable =>
          ch.close()
          throw t
      }
      try {
        if (!unix) ch.setOption[java.lang.Boolean](StandardSocketOptions.TCP_NODELAY, true)
        if (!ch.connect(address)) {
          while (!ch.finishConnect()) c.await(SelectionKey.OP_CONNECT, deadline)
        }
        c
      } catch {
        case t: Throwable =>
          c.close()  // the selector too: it holds file descriptors of its own
          throw t
      }
    }
  }

  /**
   * A non-blocking socket and a selector of its own: the only way to bound reads on an
   * AF_UNIX channel (it has no SO_TIMEOUT), and the same code for TCP.
   */
  private final class Connection(ch: SocketChannel) {
    ch.configureBlocking(false)
    private val selector = Selector.open()
    private val key = ch.register(selector, SelectionKey.OP_READ)
    private val out = ByteBuffer.allocateDirect(Chunk)
    /** Bytes received and not yet taken, between position and limit. */
    private val in: ByteBuffer = ByteBuffer.allocateDirect(Chunk)
    in.limit(0) // Java 8's Buffer.limit returns a Buffer

    /** The call's frame: key, length, request, written through one buffer in chunks. */
    def send(callKey: Long, request: Array[Byte], deadline: Long): Unit = {
      out.clear()
      out.putLong(callKey).putInt(request.length)
      write(request, deadline)
    }

    def send(bytes: Array[Byte], deadline: Long): Unit = {
      out.clear()
      write(bytes, deadline)
    }

    private def write(bytes: Array[Byte], deadline: Long): Unit = {
      var off = 0
      while (off < bytes.length || out.position() > 0) {
        val m = math.min(out.remaining, bytes.length - off)
        out.put(bytes, off, m)
        off += m
        out.flip()
        while (out.hasRemaining) {
          if (ch.write(out) == 0) await(SelectionKey.OP_WRITE, deadline)
        }
        out.clear()
      }
    }

    /**
     * One answer: its length, then its bytes, in a buffer grown as they arrive (never ahead
     * of them by more than itself or [[Chunk]]): an announced length is not trusted.
     */
    def receive(deadline: Long): Array[Byte] = {
      val n = ByteBuffer.wrap(readExactly(4, deadline)).getInt
      if (n < 0 || n > MaxAnswerBytes) throw new IOException(s"Python announced an answer of $n bytes")
      var answer = new Array[Byte](math.min(n, Chunk))
      var got = 0
      while (got < n) {
        if (got == answer.length) answer = Arrays.copyOf(answer, math.min(n.toLong, 2L * got).toInt)
        take(answer, got, answer.length - got, deadline)
        got = answer.length
      }
      // Python answers once per request; more bytes mean the stream is not what we think.
      if (in.hasRemaining) throw new IOException("Python sent more than its answer")
      answer
    }

    def readExactly(n: Int, deadline: Long): Array[Byte] = {
      val b = new Array[Byte](n)
      take(b, 0, n, deadline)
      b
    }

    private def take(dst: Array[Byte], off: Int, len: Int, deadline: Long): Unit = {
      var done = 0
      while (done < len) {
        if (!in.hasRemaining) fill(deadline)
        val m = math.min(in.remaining, len - done)
        in.get(dst, off + done, m)
        done += m
      }
    }

    /** Receives at least one byte into `in`, waiting no longer than `deadline` (0: no limit). */
    private def fill(deadline: Long): Unit = {
      in.clear()
      var n = ch.read(in)
      while (n == 0) {
        await(SelectionKey.OP_READ, deadline)
        n = ch.read(in)
      }
      in.flip()
      if (n < 0) throw new EOFException("Python closed the connection")
    }

    def await(op: Int, deadline: Long): Unit = {
      if (timedOut(deadline)) throw new Timeout
      if (key.interestOps() != op) key.interestOps(op)
      selector.select(if (deadline == 0) 0L else remainingMs(deadline))
      selector.selectedKeys().clear()
    }

    def close(): Unit = {
      try selector.close() catch { case NonFatal(_) => }
      try ch.close() catch { case NonFatal(_) => }
    }
  }
}
