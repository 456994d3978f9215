"""The channel the JVM calls Python over: the Python end spoken to by hand over a real
socket, and the JVM end (``io.sparkext.PythonChannel``) against hand-written Python
servers that misbehave. Every query of the other suites goes over it too; the hazards of
a local process that reaches the channel are in tests/test_channel_attacks.py."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import struct
import threading
import time

import pytest
from py4j.protocol import Py4JJavaError

from sparkext.channel import CLIENT_LABEL, MAGIC, NONCE_BYTES, SERVER_LABEL, Channel, proof


class Tagged:
    def __init__(self, tag: str):
        self.tag = tag

    def apply(self, payload: str) -> str:
        return json.dumps({"tag": self.tag, "echo": payload})


class Raises:
    def apply(self, payload: str) -> str:
        raise KeyboardInterrupt  # not an Exception: still answered


class NotText:
    def apply(self, payload: str):
        return 42


@pytest.fixture(scope="module")
def channel():
    c = Channel()
    yield c
    c.close()


def raw_connect(location: str) -> socket.socket:
    """A connection to a channel's address, before any handshake."""
    kind, _, where = location.partition(":")
    if kind == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(where)
        return s
    host, _, port = where.rpartition(":")
    return socket.create_connection((host, int(port)), timeout=10)


def recv_exactly(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        part = s.recv(n - len(data))
        if not part:
            raise EOFError(f"closed after {len(data)} of {n} bytes")
        data += part
    return data


def connect(channel: Channel, secret: bytes | None = None) -> socket.socket:
    """A connection that has run the JVM's side of the handshake (with ``secret``, by
    default the channel's own)."""
    s = raw_connect(channel.location)
    client_nonce = secrets.token_bytes(NONCE_BYTES)
    s.sendall(MAGIC + client_nonce)
    reply = recv_exactly(s, NONCE_BYTES + 32)
    server_nonce, server_proof = reply[:NONCE_BYTES], reply[NONCE_BYTES:]
    assert server_proof == proof(channel.secret, SERVER_LABEL, client_nonce, server_nonce)
    key = channel.secret if secret is None else secret
    s.sendall(proof(key, CLIENT_LABEL, client_nonce, server_nonce))
    return s


def call(s: socket.socket, key: int, payload: str) -> dict:
    body = payload.encode("utf-8")
    s.sendall(struct.pack(">qi", key, len(body)) + body)
    (n,) = struct.unpack(">i", recv_exactly(s, 4))
    return json.loads(recv_exactly(s, n).decode("utf-8"))


def closed_by_peer(s: socket.socket) -> bool:
    """Whether the peer closes ``s`` (waiting at most the socket's timeout)."""
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def test_calls_on_one_connection_reach_the_bridge_of_their_key(channel):
    first, second = Tagged("first"), Tagged("second")
    k1, k2 = channel.add(first), channel.add(second)
    with connect(channel) as s:
        assert call(s, k2, "é" * 3) == {"tag": "second", "echo": "é" * 3}
        assert call(s, k1, "x" * 100_000) == {"tag": "first", "echo": "x" * 100_000}


def test_a_client_that_does_not_know_the_secret_is_closed_unanswered(channel):
    key = channel.add(tagged := Tagged("secret"))
    with connect(channel, secret=b"\0" * 32) as s:
        with contextlib.suppress(OSError):  # the server may have closed it already
            s.sendall(struct.pack(">qi", key, 2) + b"{}")
        assert closed_by_peer(s)
    assert tagged


def test_a_connection_that_never_sends_its_hello_is_closed():
    c = Channel(handshake_seconds=0.2)
    try:
        with raw_connect(c.location) as s:
            assert closed_by_peer(s)
    finally:
        c.close()


def test_unknown_keys_failing_bridges_and_bad_answers_are_answered_with_errors(channel):
    key = channel.add(raising := Raises())
    not_text = channel.add(returns_an_int := NotText())
    with connect(channel) as s:
        def error(k: int) -> str:
            return call(s, k, "{}")["error"]["message"]
        assert "no Python rules are registered under key" in error(10**9)
        assert "KeyboardInterrupt" in error(key)
        assert "cannot be sent" in error(not_text)
    assert raising and returns_an_int


def test_an_answer_bigger_than_the_jvm_accepts_becomes_an_error(channel, monkeypatch):
    import sparkext.channel

    monkeypatch.setattr(sparkext.channel, "MAX_ANSWER_BYTES", 10)
    key = channel.add(tagged := Tagged("big"))
    with connect(channel) as s:
        assert "more than the JVM accepts" in call(s, key, "x" * 20)["error"]["message"]
    assert tagged


def test_a_bridge_nothing_else_holds_is_let_go(channel):
    key = channel.add(Tagged("gone"))
    with connect(channel) as s:
        assert "error" in call(s, key, "{}")


def test_the_unix_socket_is_in_a_private_directory_removed_at_close():
    c = Channel(transport="unix")
    path = c.location.removeprefix("unix:")
    directory = os.path.dirname(path)
    assert os.stat(directory).st_mode & 0o777 == 0o700
    c.close()
    assert not os.path.exists(directory)
    assert not c.alive()


def test_tcp_listens_on_loopback_only():
    c = Channel(transport="tcp")
    try:
        assert c.location.startswith("tcp:127.0.0.1:")
        with connect(c) as s:
            assert call(s, c.add(tagged := Tagged("tcp")), "{}")["tag"] == "tcp"
        assert tagged
    finally:
        c.close()


# -- the JVM end against servers written by hand ---------------------------------------------


class HandServer:
    """A Python end that accepts connections and runs ``serve(conn)`` on each, in turn,
    after the server's side of the handshake, made with ``secret``."""

    def __init__(self, *serves, secret: bytes | None = None):
        self.secret = b"s" * 32
        self.handshake_secret = self.secret if secret is None else secret
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"tcp:127.0.0.1:{self.sock.getsockname()[1]}"
        #: what each ``serve`` returned (record_everything: what the client sent after its hello)
        self.received: list[bytes] = []
        self.thread = threading.Thread(target=self._run, args=(serves,), daemon=True)
        self.thread.start()

    def _run(self, serves):
        for serve in serves:
            conn, _ = self.sock.accept()
            with conn:
                conn.settimeout(30)
                hello = recv_exactly(conn, len(MAGIC) + NONCE_BYTES)
                client_nonce = hello[len(MAGIC):]
                server_nonce = secrets.token_bytes(NONCE_BYTES)
                conn.sendall(server_nonce + proof(self.handshake_secret, SERVER_LABEL,
                                                  client_nonce, server_nonce))
                result = serve(conn)
                if result is not None:
                    self.received.append(result)

    def jvm_channel(self, spark):
        return spark._jvm.io.sparkext.PythonChannel.apply(self.address, self.secret.hex())


def record_everything(conn) -> bytes:
    """Whatever the client sends until it closes the connection."""
    data = b""
    while part := conn.recv(65536):
        data += part
    return data


def answer_one(conn, answer: bytes = b'{"ok":1}'):
    recv_exactly(conn, 32)  # the client's proof
    key, n = struct.unpack(">qi", recv_exactly(conn, 12))
    recv_exactly(conn, n)
    conn.sendall(struct.pack(">i", len(answer)) + answer)


def trickle(conn):
    answer_one(conn, answer=b"")  # an empty answer: then a second one, byte by byte
    key, n = struct.unpack(">qi", recv_exactly(conn, 12))
    recv_exactly(conn, n)
    answer = b" " * 100
    conn.sendall(struct.pack(">i", len(answer)))
    for b in answer:
        try:
            conn.sendall(bytes([b]))
        except OSError:
            return
        time.sleep(0.05)


def test_a_pooled_connection_python_closed_is_replaced_once(spark):
    server = HandServer(answer_one, answer_one)  # each connection answers once, then closes
    jvm = server.jvm_channel(spark)
    assert jvm.call(1, bytearray(b"{}"), 10_000) == '{"ok":1}'
    assert jvm.call(1, bytearray(b"{}"), 10_000) == '{"ok":1}'  # the pooled one is dead


def test_the_timeout_bounds_the_whole_answer_not_each_read(spark):
    server = HandServer(trickle)  # 100 bytes at one per 50 ms: 5 s in all
    jvm = server.jvm_channel(spark)
    assert jvm.call(1, bytearray(b"{}"), 10_000) == ""
    with pytest.raises(Py4JJavaError, match="PythonChannel.Timeout"):
        jvm.call(1, bytearray(b"{}"), 300)


@pytest.mark.parametrize("java, env, expected", [
    ("1.8", None, "tcp"), ("11", None, "tcp"), ("16", None, "auto"), ("17", None, "auto"),
    ("25", None, "auto"), (None, None, "auto"), ("11", "unix", "unix"), ("17", "tcp", "tcp"),
])
def test_a_jvm_before_java_16_gets_tcp_unless_the_environment_chooses(monkeypatch, java, env,
                                                                       expected):
    # Spark 3.5 runs on Java 8 and 11, whose JVM cannot connect to a Unix domain socket.
    from sparkext.channel import transport_for
    if env is None:
        monkeypatch.delenv("SPARKEXT_CHANNEL", raising=False)
    else:
        monkeypatch.setenv("SPARKEXT_CHANNEL", env)
    assert transport_for(java) == expected
