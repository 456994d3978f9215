"""The socket the JVM sends its optimizer calls over (docs/wire-format.md, "Transport").

Why not a py4j callback: a py4j callback from inside Catalyst costs a round trip through
py4j's command protocol, and the timeout (``spark.sparkext.timeoutMs``) needed a second
JVM thread to wait on, one more hand-over each way. On this channel the optimizer's own
thread writes the request and reads the answer, its reads bounded by the timeout; measured in
docs/performance.md.

One server per Python process, on the loopback interface, started by the first
:func:`sparkext.enable`. Each JVM connection is served by its own daemon thread, so
queries optimized at once on several JVM threads are answered at once (as far as the GIL
allows). A connection first proves it knows the server's random token (the JVM learns it
through py4j at registration), within :data:`HANDSHAKE_SECONDS`; as with py4j's own token,
only the JVM proves anything. Then, any number of times:

  request  ``key`` (int64, big-endian), ``n`` (int32), ``n`` bytes of UTF-8 request
  answer   ``n`` (int32), ``n`` bytes of UTF-8 answer

``key`` names the :class:`~sparkext.bridge.RuleBridge` of one ``sparkext.enable``. The
server holds bridges weakly: py4j keeps each alive while the JVM's registration refers to
it, so a replaced registration takes its bridge with it. A call that the JVM abandons at
its timeout has its connection closed by the JVM; the answer, when it comes, goes nowhere.
"""

from __future__ import annotations

import errno
import hmac
import itertools
import logging
import secrets
import socket
import struct
import threading
import time
import weakref

from sparkext.errors import error_document
from sparkext.threads import start_thread
from sparkext.wire import MAX_ANSWER_BYTES

log = logging.getLogger("sparkext")

_HEAD = struct.Struct(">qi")
_LENGTH = struct.Struct(">i")
#: Largest token frame accepted before the token is checked.
_MAX_TOKEN_BYTES = 256
#: How long a new connection may take to send its token (the JVM sends it at once).
HANDSHAKE_SECONDS = 5.0
# An answer larger than MAX_ANSWER_BYTES (the JVM's limit, ``PythonChannel.MaxAnswerBytes``)
# is replaced here by an error document: the JVM would refuse it, retry the call on a new
# connection, and refuse it again.


class Channel:
    """The listening socket and the bridges it serves."""

    def __init__(self):
        self.token = secrets.token_hex(16)
        self._bridges: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self._keys = itertools.count(1)
        #: connections accepted so far (the JVM keeps its connections and reuses them)
        self.accepted = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        start_thread(threading.Thread(target=self._accept, name="sparkext-channel",
                                      daemon=True))

    def add(self, bridge) -> int:
        """Serves ``bridge`` from now on; returns the key the JVM sends with its calls."""
        key = next(self._keys)
        self._bridges[key] = bridge
        return key

    def address(self, key: int) -> dict:
        """What the JVM needs to call the bridge registered under ``key``."""
        return {"port": self.port, "token": self.token, "key": key}

    def close(self) -> None:
        """Stops accepting connections (for tests; the process's channel lives as long as
        the process)."""
        self._server.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError as e:
                if self._server.fileno() == -1 or e.errno in (errno.EBADF, errno.EINVAL):
                    return  # closed
                # Out of file descriptors, or a connection reset while queued: the channel
                # must outlive it, or every later call would wait for its timeout.
                log.warning("sparkext: the channel could not accept a connection: %s", e)
                time.sleep(0.1)
                continue
            self.accepted += 1
            try:
                start_thread(threading.Thread(target=self._serve, args=(conn,), daemon=True,
                                              name=f"sparkext-call-{self.accepted}"))
            except Exception as e:  # noqa: BLE001 - no thread: refuse this connection only
                log.warning("sparkext: no thread to serve a connection: %s", e)
                conn.close()

    def _serve(self, conn: socket.socket) -> None:
        # The socket closes when both it and its file are closed.
        with conn, conn.makefile("rb") as stream:
            try:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conn.settimeout(HANDSHAKE_SECONDS)
                if not self._knows_token(stream):
                    return
                conn.settimeout(None)
            except OSError:
                return  # a peer that said nothing in time, or hung up
            while True:
                try:
                    head = stream.read(_HEAD.size)
                    if len(head) < _HEAD.size:
                        return  # the JVM closed the connection
                    key, n = _HEAD.unpack(head)
                    request = stream.read(n)
                    if len(request) < n:
                        return
                    conn.sendall(_frame(self._answer(key, request)))
                except OSError:
                    return  # abandoned at its timeout: the JVM closed the connection

    def _knows_token(self, stream) -> bool:
        head = stream.read(_LENGTH.size)
        if len(head) < _LENGTH.size:
            return False
        (n,) = _LENGTH.unpack(head)
        if not 0 < n <= _MAX_TOKEN_BYTES:
            return False
        return hmac.compare_digest(stream.read(n), self.token.encode("ascii"))

    def _answer(self, key: int, request: bytes) -> str:
        bridge = self._bridges.get(key)
        if bridge is None:
            return error_document("channel", None,
                                  f"no Python rules are registered under key {key} any more")
        try:
            return bridge.apply(request.decode("utf-8"))
        except BaseException as e:  # noqa: BLE001 - the bridge answers its own errors;
            # this is the last line, so that the JVM always gets an answer
            return error_document("channel", None,
                                  f"the Python side failed: {type(e).__name__}: {e}", e)


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


def channel() -> Channel:
    """The process's channel, started on first use."""
    global _channel
    with _lock:
        if _channel is None:
            _channel = Channel()
        return _channel
