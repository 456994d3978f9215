"""The channel the JVM calls Python over: the Python end spoken to by hand over a real
socket, and the JVM end (``io.sparkext.PythonChannel``) against hand-written Python
servers that misbehave. Every query of the other suites goes over it too."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time

import pytest
from py4j.protocol import Py4JJavaError

import sparkext.channel
from sparkext.channel import Channel


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


def connect(channel: Channel, token: str | None = None) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", channel.port), timeout=10)
    t = (channel.token if token is None else token).encode("ascii")
    s.sendall(struct.pack(">i", len(t)) + t)
    return s


def call(s: socket.socket, key: int, payload: str) -> dict:
    body = payload.encode("utf-8")
    s.sendall(struct.pack(">qi", key, len(body)) + body)
    stream = s.makefile("rb")
    (n,) = struct.unpack(">i", stream.read(4))
    return json.loads(stream.read(n).decode("utf-8"))


def closed_by_peer(s: socket.socket) -> bool:
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


def test_a_connection_without_the_token_is_closed_unanswered(channel):
    with connect(channel, token="0" * len(channel.token)) as s:
        assert closed_by_peer(s)


def test_a_connection_that_never_sends_its_token_is_closed(channel, monkeypatch):
    monkeypatch.setattr(sparkext.channel, "HANDSHAKE_SECONDS", 0.2)
    with socket.create_connection(("127.0.0.1", channel.port), timeout=10) as s:
        assert closed_by_peer(s)


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
    monkeypatch.setattr(sparkext.channel, "MAX_ANSWER_BYTES", 10)
    key = channel.add(tagged := Tagged("big"))
    with connect(channel) as s:
        assert "more than the JVM accepts" in call(s, key, "x" * 20)["error"]["message"]
    assert tagged


def test_a_bridge_nothing_else_holds_is_let_go(channel):
    key = channel.add(Tagged("gone"))
    with connect(channel) as s:
        assert "error" in call(s, key, "{}")


# -- the JVM end against servers written by hand ---------------------------------------------


class HandServer:
    """A Python end that accepts connections and runs ``serve(conn)`` on each, in turn."""

    def __init__(self, *serves):
        self.token = "t" * 32
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._run, args=(serves,), daemon=True)
        self.thread.start()

    def _run(self, serves):
        for serve in serves:
            conn, _ = self.sock.accept()
            with conn, conn.makefile("rb") as stream:  # the socket closes with both
                (n,) = struct.unpack(">i", stream.read(4))
                assert stream.read(n) == self.token.encode()
                serve(conn, stream)

    def jvm_channel(self, spark):
        return spark._jvm.io.sparkext.PythonChannel.apply(self.port, self.token)


def answer_one(conn, stream, answer: bytes = b'{"ok":1}'):
    key, n = struct.unpack(">qi", stream.read(12))
    stream.read(n)
    conn.sendall(struct.pack(">i", len(answer)) + answer)


def trickle(conn, stream):
    key, n = struct.unpack(">qi", stream.read(12))
    stream.read(n)
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
    with pytest.raises(Py4JJavaError, match="PythonChannel.Timeout"):
        server.jvm_channel(spark).call(1, bytearray(b"{}"), 300)
