"""The socket the JVM sends its optimizer calls over (docs/wire-format.md, "Transport").

Why not a py4j callback: a py4j callback from inside Catalyst costs a round trip through
py4j's command protocol, and the timeout (``spark.sparkext.timeoutMs``) needed a second
JVM thread to wait on, one more hand-over each way. On this channel the optimizer's own
thread writes the request and reads the answer, its reads bounded by the timeout; measured in
docs/performance.md.

Python always listens and the JVM always connects; who made the secret differs. In a
PySpark driver, the first :func:`sparkext.enable` starts the process's channel and hands its
address and secret to the JVM through py4j (itself authenticated). A rule worker started by
the JVM (:mod:`sparkext.worker`) takes the secret from the JVM over a private pipe (its
stdin) and answers with its address: :class:`Channel` accepts the secret for that reason.
Either way the same :class:`Channel` serves the same bridges
(:func:`sparkext.bridge.registration`); only who starts the process differs.

Where the platform has ``AF_UNIX``, the channel is a Unix domain socket in a fresh 0700
directory, which no other user can even connect to; else loopback TCP. Each connection is
served by its own daemon thread, so queries optimized at once on several JVM threads are
answered at once (as far as the GIL allows). A connection first runs a challenge-response
on the secret in both directions (:func:`proof`), the server proving itself first, so the
JVM sends no plan to a process that merely holds the address, and neither side ever sends
the secret. The whole handshake must end within :attr:`Channel.handshake_seconds`, at most
:attr:`Channel.max_unauthenticated` connections may be in it at once (more are closed at
accept), and failures are logged at most once per ``log_seconds``, with a count. Before
authentication only the handshake's fixed-size frames are read; requests are read in
chunks, so an announced length costs memory only as its bytes arrive. Then, any number of
times:

  request  ``key`` (int64, big-endian), ``n`` (int32), ``n`` bytes of UTF-8 request
  answer   ``n`` (int32), ``n`` bytes of UTF-8 answer

``key`` names the :class:`~sparkext.bridge.RuleBridge` of one ``sparkext.enable``; a
negative ``key`` carries a cancel for the bridge ``-key`` (below). The
server holds bridges weakly: py4j keeps each alive while the JVM's registration refers to
it, so a replaced registration takes its bridge with it. A call that the JVM abandons at
its timeout has its connection closed by the JVM; the answer, when it comes, goes nowhere.
Before closing it, the JVM sends ``{"cancel": <call id>}`` under ``-key`` on another
connection (an idle one, usually): the call stops at its next rule boundary, and the
answer names the rule it was running, for the JVM's warning.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import itertools
import logging
import os
import secrets
import shutil
import socket
import struct
import tempfile
import threading
import time
import weakref

from sparkext.errors import error_document
from sparkext.threads import start_thread
from sparkext.wire import MAX_ANSWER_BYTES

log = logging.getLogger("sparkext")

_HEAD = struct.Struct(">qi")
_LENGTH = struct.Struct(">i")
#: What a client's handshake opens with: the transport's name and version.
MAGIC = b"SPX1"
NONCE_BYTES = 32
_PROOF_BYTES = hashlib.sha256().digest_size
SERVER_LABEL = b"sparkext server"
CLIENT_LABEL = b"sparkext client"
#: Requests are read in pieces of this size, so memory grows only as bytes arrive.
_CHUNK = 1 << 16

#: How long a new connection may take over the whole handshake (the JVM needs one round trip).
HANDSHAKE_SECONDS = 5.0
#: Connections still in their handshake, at most: each holds an fd and a thread.
MAX_UNAUTHENTICATED = 64
#: At most one log line per this many seconds about connections that failed.
LOG_SECONDS = 60.0
#: ``unix``, ``tcp`` or ``auto`` (``unix`` where the platform has it); for the process's
#: channel, ``SPARKEXT_CHANNEL`` in the environment chooses.
TRANSPORTS = ("auto", "unix", "tcp")
# An answer larger than MAX_ANSWER_BYTES (the JVM's limit, ``PythonChannel.MaxAnswerBytes``)
# is replaced here by an error document: the JVM would refuse it, retry the call on a new
# connection, and refuse it again.


def proof(secret: bytes, label: bytes, client_nonce: bytes, server_nonce: bytes) -> bytes:
    """What proves knowledge of ``secret`` for one handshake. The label keeps one side's
    proof from serving as the other's; both nonces keep it from serving in another
    handshake."""
    return hmac.new(secret, label + client_nonce + server_nonce, hashlib.sha256).digest()


class _Refused(Exception):
    """A connection that did not complete the handshake (the message says how)."""


class _FailureLog:
    """Logs failed connections: the first at once, then one line per ``seconds`` with the
    count since the last line, so a flood of bad connections cannot flood the log."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._lock = threading.Lock()
        self._since = 0
        self._last: float | None = None

    def note(self, reason: str) -> None:
        with self._lock:
            self._since += 1
            now = time.monotonic()
            if self._last is not None and now - self._last < self.seconds:
                return
            count, self._since, self._last = self._since, 0, now
        log.warning("sparkext: %d connection(s) to the channel failed since the last report "
                    "(the latest: %s)", count, reason)


class Channel:
    """The listening socket and the bridges it serves."""

    def __init__(self, secret: bytes | None = None, *, transport: str = "auto",
                 handshake_seconds: float = HANDSHAKE_SECONDS,
                 max_unauthenticated: int = MAX_UNAUTHENTICATED,
                 log_seconds: float = LOG_SECONDS):
        if transport not in TRANSPORTS:
            raise ValueError(f"unknown channel transport {transport!r}; expected one of "
                             f"{', '.join(TRANSPORTS)}")
        self.secret = secret if secret is not None else secrets.token_bytes(32)
        self.handshake_seconds = handshake_seconds
        self.max_unauthenticated = max_unauthenticated
        self.failures = _FailureLog(log_seconds)
        self._bridges: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self._keys = itertools.count(1)
        self._pending = threading.BoundedSemaphore(max_unauthenticated)
        #: connections accepted so far (the JVM keeps its connections and reuses them)
        self.accepted = 0
        #: where the JVM connects: ``unix:<path>`` or ``tcp:127.0.0.1:<port>``
        self._server, self.location = _listen(transport)
        self._inode = _inode(self.location)
        # The socket file and its directory go when the server is closed or the process
        # exits, whichever comes first (not when a forked child exits: the file is ours).
        self._cleanup = weakref.finalize(self, _remove, self.location, os.getpid())
        self._thread = threading.Thread(target=self._accept, name="sparkext-channel",
                                        daemon=True)
        start_thread(self._thread)

    def add(self, bridge) -> int:
        """Serves ``bridge`` from now on; returns the key the JVM sends with its calls."""
        key = next(self._keys)
        self._bridges[key] = bridge
        return key

    def address(self, key: int) -> dict:
        """What the JVM needs to call the bridge registered under ``key``. It holds the
        secret: hand it over privately (py4j, a pipe), never on a command line or in a file
        others can read."""
        return {"address": self.location, "secret": self.secret.hex(), "key": key}

    def alive(self) -> bool:
        """Whether new connections can still reach this channel: its listening socket is
        open, its accept thread runs, and (AF_UNIX) its socket file is still the one it
        made (a /tmp cleaner may have removed it)."""
        return (self._server.fileno() != -1 and self._thread.is_alive()
                and _inode(self.location) == self._inode)

    def close(self) -> None:
        """Stops accepting connections and removes the socket file; connections already
        authenticated are served until the JVM closes them."""
        self._server.close()
        self._cleanup()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError as e:
                if self._server.fileno() == -1 or e.errno in (errno.EBADF, errno.EINVAL):
                    return  # closed
                # Out of file descriptors, or a connection reset while queued: the channel
                # must outlive it, or every later call would wait for its timeout.
                self.failures.note(f"accept failed: {e}")
                time.sleep(0.1)
                continue
            self.accepted += 1
            # Refused at once rather than queued: a queued connection still holds an fd.
            if not self._pending.acquire(blocking=False):
                self.failures.note(f"more than {self.max_unauthenticated} connections "
                                   "in their handshake at once")
                conn.close()
                continue
            try:
                start_thread(threading.Thread(target=self._serve, args=(conn,), daemon=True,
                                              name=f"sparkext-call-{self.accepted}"))
            except Exception as e:  # noqa: BLE001 - no thread: refuse this connection only
                self._pending.release()
                self.failures.note(f"no thread to serve a connection: {e}")
                conn.close()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                self._handshake(conn)
            except (OSError, _Refused) as e:
                self.failures.note(f"handshake failed: {str(e) or type(e).__name__}")
                return
            finally:
                self._pending.release()
            conn.settimeout(None)
            while True:
                try:
                    head = _read(conn, _HEAD.size)
                    if head is None:
                        return  # the JVM closed the connection
                    key, n = _HEAD.unpack(head)
                    request = _read(conn, n)
                    if request is None:
                        return
                    conn.sendall(_frame(self._answer(key, request)))
                except OSError:
                    return  # abandoned at its timeout: the JVM closed the connection

    def _handshake(self, conn: socket.socket) -> None:
        """Mutual challenge-response (docs/wire-format.md, "Transport"), bounded as a whole
        by the deadline and in size by fixed frames."""
        if conn.family != getattr(socket, "AF_UNIX", None):
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        deadline = time.monotonic() + self.handshake_seconds
        hello = _read(conn, len(MAGIC) + NONCE_BYTES, deadline)
        if hello is None:
            raise _Refused("the client hung up during the handshake")
        if not hello.startswith(MAGIC):
            raise _Refused("not a sparkext channel client (or another version)")
        client_nonce = hello[len(MAGIC):]
        server_nonce = secrets.token_bytes(NONCE_BYTES)
        conn.sendall(server_nonce
                     + proof(self.secret, SERVER_LABEL, client_nonce, server_nonce))
        answer = _read(conn, _PROOF_BYTES, deadline)
        expected = proof(self.secret, CLIENT_LABEL, client_nonce, server_nonce)
        if answer is None or not hmac.compare_digest(answer, expected):
            raise _Refused("the client does not know the secret")

    def _answer(self, key: int, request: bytes) -> str:
        bridge = self._bridges.get(abs(key))
        if bridge is None:
            return error_document("channel", None,
                                  f"no Python rules are registered under key {abs(key)} any more")
        try:
            if key < 0:
                return bridge.cancel(request.decode("utf-8"))
            return bridge.apply(request.decode("utf-8"))
        except BaseException as e:  # noqa: BLE001 - the bridge answers its own errors;
            # this is the last line, so that the JVM always gets an answer
            return error_document("channel", None,
                                  f"the Python side failed: {type(e).__name__}: {e}", e)


def _read(conn: socket.socket, n: int, deadline: float | None = None) -> bytes | None:
    """``n`` bytes, or None when the peer closes first. Received in pieces, so a large
    announced ``n`` costs memory only as its bytes arrive; each wait is bounded by what is
    left until ``deadline`` (``time.monotonic``), so a trickle cannot extend it."""
    parts, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Refused("the handshake took too long")
            conn.settimeout(left)
        part = conn.recv(min(n - got, _CHUNK))
        if not part:
            return None
        parts.append(part)
        got += len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _listen(transport: str) -> tuple[socket.socket, str]:
    """The listening socket and its address as the JVM reads it: ``unix:<path>`` or
    ``tcp:127.0.0.1:<port>``."""
    if transport != "tcp" and hasattr(socket, "AF_UNIX"):
        directory = tempfile.mkdtemp(prefix="sparkext-")  # 0700: only this user gets in
        path = os.path.join(directory, "channel")
        try:
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(path)
            server.listen(128)
            return server, f"unix:{path}"
        except OSError:
            # A path too long for sun_path (a deep TMPDIR): loopback TCP instead.
            shutil.rmtree(directory, ignore_errors=True)
            if transport == "unix":
                raise
    elif transport == "unix":
        raise OSError("this platform has no AF_UNIX sockets; use transport='tcp'")
    server = socket.create_server(("127.0.0.1", 0))
    return server, f"tcp:127.0.0.1:{server.getsockname()[1]}"


def _inode(address: str) -> int | None:
    if not address.startswith("unix:"):
        return None
    try:
        return os.stat(address[len("unix:"):]).st_ino
    except OSError:
        return -1


def _remove(address: str, pid: int) -> None:
    if address.startswith("unix:") and os.getpid() == pid:
        shutil.rmtree(os.path.dirname(address[len("unix:"):]), ignore_errors=True)


def _frame(answer) -> bytes:
    """The answer as a frame; an answer that cannot be sent becomes an error document."""
    try:
        body = answer.encode("utf-8")
        if len(body) > MAX_ANSWER_BYTES:
            raise ValueError(f"the answer has {len(body)} bytes, more than the JVM accepts "
                             f"({MAX_ANSWER_BYTES})")
    except Exception as e:  # noqa: BLE001 - not a str, or too big: say so to the JVM
        body = error_document("channel", None, f"the answer cannot be sent: {e}").encode()
    return _LENGTH.pack(len(body)) + body


_lock = threading.Lock()
_channel: Channel | None = None


def transport_for(java_version: str | None) -> str:
    """The transport of the process's channel: ``SPARKEXT_CHANNEL`` when set, else ``tcp``
    for a JVM older than Java 16 (it cannot connect to Unix domain sockets: Spark 3.5 runs
    on Java 8 and 11), else ``auto``. ``java_version`` is the JVM's
    ``java.specification.version`` ("1.8", "11", "17"), or None when unknown."""
    chosen = os.environ.get("SPARKEXT_CHANNEL", "auto")
    if chosen != "auto" or not java_version:
        return chosen
    major = java_version.split(".")[1] if java_version.startswith("1.") else java_version
    return "tcp" if major.isdigit() and int(major) < 16 else "auto"


def channel(java_version: str | None = None) -> Channel:
    """The process's channel, started on first use, and started anew when it died (its
    socket closed or its thread gone): sessions that enable after that reach the new one.
    ``java_version`` is that of the JVM that will connect (see :func:`transport_for`)."""
    global _channel
    with _lock:
        if _channel is None or not _channel.alive():
            if _channel is not None:
                log.warning("sparkext: the channel at %s stopped; starting a new one",
                            _channel.location)
                _channel.close()
            _channel = Channel(transport=transport_for(java_version))
        return _channel
