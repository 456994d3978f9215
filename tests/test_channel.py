"""The Python end of the channel, spoken to over a real socket as the JVM speaks to it
(the JVM end is exercised by every query of the other suites)."""

from __future__ import annotations

import json
import socket
import struct

import pytest

from sparkext.channel import Channel


class Echo:
    def apply(self, payload: str) -> str:
        return json.dumps({"echo": payload})


class Raises:
    def apply(self, payload: str) -> str:
        raise KeyboardInterrupt  # not an Exception: still answered


@pytest.fixture(scope="module")
def channel():
    return Channel()


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


def test_calls_on_one_connection_reach_the_bridge_of_their_key(channel):
    first, second = Echo(), Echo()
    k1, k2 = channel.add(first), channel.add(second)
    assert k1 != k2
    with connect(channel) as s:
        assert call(s, k1, "é" * 3) == {"echo": "é" * 3}
        assert call(s, k2, "x" * 100_000) == {"echo": "x" * 100_000}


def test_a_connection_without_the_token_is_closed_unanswered(channel):
    key = channel.add(keep := Echo())
    with connect(channel, token="0" * len(channel.token)) as s:
        body = b"{}"
        s.sendall(struct.pack(">qi", key, len(body)) + body)
        assert s.recv(1) == b""
    assert keep


def test_an_unknown_key_and_a_failing_bridge_are_answered_with_an_error(channel):
    key = channel.add(raising := Raises())
    with connect(channel) as s:
        assert "no Python rules are registered under key" in call(s, 10**9, "{}")["error"]["message"]
        assert "KeyboardInterrupt" in call(s, key, "{}")["error"]["message"]
    assert raising


def test_a_bridge_nothing_else_holds_is_let_go(channel):
    key = channel.add(Echo())
    with connect(channel) as s:
        assert "error" in call(s, key, "{}")
