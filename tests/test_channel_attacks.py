"""A local process against the channel (issue 16, items 6-8): it must not stall the driver
(trickled handshakes, connection floods, log floods), must not learn a plan or pass off its
own answer (mutual authentication), must not exhaust the JVM's heap with a forged length,
and a dead channel is replaced by the next ``sparkext.enable``. Both transports run real
queries."""

from __future__ import annotations

import logging
import socket
import struct
import threading

import pytest
from py4j.protocol import Py4JJavaError

import sparkext
import sparkext.channel
import sparkext.session
from sparkext.channel import MAGIC, Channel
from tests.conftest import conf, rules_enabled
from tests.test_channel import (
    HandServer,
    Tagged,
    call,
    closed_by_peer,
    connect,
    raw_connect,
    record_everything,
    recv_exactly,
)


def double_filter(plan):
    """Rewrites every query it sees (an extra always-true conjunct is not needed: rebuilding
    the nodes makes a new plan), so `accepted` shows the rules ran."""
    from sparkext.testing.rules import rebuild_everything

    return rebuild_everything(plan)


def query(spark):
    return spark.range(20).filter("id % 3 = 1").selectExpr("id * 2 AS x")


def plain_rows(spark):
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        return sorted(query(spark).collect())


def accepted_after_a_query(spark) -> tuple[list, dict]:
    sparkext.reset_metrics(spark)
    rows = sorted(query(spark).collect())
    return rows, sparkext.metrics(spark)


@pytest.fixture
def process_channel(spark):
    """Installs a channel of the test's making as the process's, for ``enable`` to use;
    afterwards the built-in rules go back on the usual channel, and the test's channels
    (and any that replaced them) are closed."""
    original = sparkext.channel._channel
    made = []

    def install(c: Channel) -> Channel:
        made.append(c)
        sparkext.channel._channel = c
        return c

    yield install
    made.append(sparkext.channel._channel)
    sparkext.channel._channel = original
    sparkext.enable(spark)
    for c in made:
        if c is not original:
            c.close()


# -- the Python server ------------------------------------------------------------------------


def test_a_trickling_client_is_cut_off_at_the_whole_handshakes_deadline():
    # One byte per 50 ms would renew a per-read timeout of 300 ms forever.
    c = Channel(handshake_seconds=0.3)
    stop = threading.Event()
    try:
        with raw_connect(c.location) as s:
            def trickle():
                for b in (MAGIC + b"n" * 1000):
                    if stop.wait(0.05):
                        return
                    try:
                        s.send(bytes([b]))
                    except OSError:
                        return
            threading.Thread(target=trickle, daemon=True).start()
            assert closed_by_peer(s)  # within the socket's 10 s timeout
    finally:
        stop.set()
        c.close()


def test_connections_beyond_the_cap_are_refused_and_authenticated_ones_go_on():
    c = Channel(max_unauthenticated=2, handshake_seconds=60)
    key = c.add(tagged := Tagged("still here"))
    try:
        with connect(c) as authenticated:
            # Answered: the server is done with this one's handshake, its slot is free.
            assert call(authenticated, key, "{}")["tag"] == "still here"
            held = [raw_connect(c.location) for _ in range(2)]
            with raw_connect(c.location) as extra:
                extra.settimeout(3)  # refused at once, not at the held ones' 60 s deadline
                assert closed_by_peer(extra)
            assert call(authenticated, key, "{}")["tag"] == "still here"
            for s in held:
                s.close()
    finally:
        c.close()
    assert tagged


def test_failed_connections_are_logged_once_per_interval_with_their_count(caplog):
    c = Channel(log_seconds=3600)
    caplog.set_level(logging.WARNING, logger="sparkext")
    try:
        for _ in range(5):
            with raw_connect(c.location) as s:
                s.sendall(b"GET / HTTP/1.0\r\n\r\n" + b"x" * 100)
                assert closed_by_peer(s)
        lines = [r.getMessage() for r in caplog.records if "channel failed" in r.getMessage()]
        assert len(lines) == 1 and lines[0].startswith("sparkext: 1 connection(s)")
        c.failures.seconds = 0  # the next failure reports the ones held back
        with raw_connect(c.location) as s:
            s.sendall(b"x" * 36)
            assert closed_by_peer(s)
        lines = [r.getMessage() for r in caplog.records if "channel failed" in r.getMessage()]
        assert len(lines) == 2 and lines[1].startswith("sparkext: 5 connection(s)")
    finally:
        c.close()


def test_the_server_reads_no_more_than_the_handshake_before_it_is_authenticated():
    c = Channel()
    try:
        with raw_connect(c.location) as s:
            s.sendall(MAGIC + b"n" * 32)
            recv_exactly(s, 64)
            # A wrong proof followed by a huge frame: refused after the proof's 32 bytes.
            s.sendall(b"\0" * 32 + struct.pack(">qi", 1, 2**30))
            assert closed_by_peer(s)
    finally:
        c.close()


# -- the JVM against servers that are not what they say -----------------------------------------


def test_a_server_that_does_not_know_the_secret_gets_no_request(spark):
    server = HandServer(record_everything, secret=b"w" * 32)
    with pytest.raises(Py4JJavaError, match="does not know the channel's secret"):
        server.jvm_channel(spark).call(1, bytearray(b'{"plan": "secret plan"}'), 10_000)
    server.thread.join(10)
    assert server.received == [b""]


def test_a_forged_answer_length_costs_the_jvm_no_heap(spark):
    def huge_then_close(conn):
        recv_exactly(conn, 32)
        key, n = struct.unpack(">qi", recv_exactly(conn, 12))
        recv_exactly(conn, n)
        conn.sendall(struct.pack(">i", 2**30) + b"{}")

    runtime = spark._jvm.java.lang.Runtime.getRuntime()
    spark._jvm.java.lang.System.gc()
    before = runtime.totalMemory() - runtime.freeMemory()
    servers = [HandServer(huge_then_close) for _ in range(3)]
    for server in servers:
        with pytest.raises(Py4JJavaError, match="EOFException: Python closed the connection"):
            server.jvm_channel(spark).call(1, bytearray(b"{}"), 10_000)
    # No collection in between: a 1 GiB buffer per answer would show (or fail with OOM).
    assert runtime.totalMemory() - runtime.freeMemory() - before < 256 * 2**20


def test_a_query_whose_channel_is_an_impostor_runs_unchanged_with_a_warning(spark, monkeypatch):
    server = HandServer(record_everything, secret=b"w" * 32)

    class Impostor:
        def __init__(self, java_version=None):
            pass

        def add(self, bridge):
            self.bridge = bridge  # held, as the real channel would not: py4j needs it alive
            return 1

        def address(self, key):
            return {"address": server.address, "secret": server.secret.hex(), "key": key}

    expected = plain_rows(spark)
    with monkeypatch.context() as patched:
        patched.setattr(sparkext.session, "channel", Impostor)
        sparkext.enable(spark, [double_filter], builtin=False)
    try:
        with conf(spark, {"spark.sparkext.strict": "false"}):  # the test session is strict
            rows, m = accepted_after_a_query(spark)
    finally:
        sparkext.enable(spark)
    assert rows == expected
    assert m["python_errors"] >= 1 and m["accepted"] == 0
    assert any("does not know the channel's secret" in w for w in m["warnings"])
    server.thread.join(10)
    assert server.received == [b""]


# -- both transports, and a dead channel, in a real session ------------------------------------


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_queries_are_rewritten_over_either_transport(spark, process_channel, transport):
    c = process_channel(Channel(transport=transport))
    expected = plain_rows(spark)
    with rules_enabled(spark, [double_filter]):
        rows, m = accepted_after_a_query(spark)
    assert c.location.startswith(f"{transport}:") and c.accepted >= 1
    assert rows == expected and m["accepted"] >= 1 and m["python_errors"] == 0


def test_enable_replaces_a_dead_channel(spark, process_channel):
    dead = process_channel(Channel())
    dead.close()  # as if its thread had died: nothing accepts any more
    expected = plain_rows(spark)
    with rules_enabled(spark, [double_filter]):
        rows, m = accepted_after_a_query(spark)
        replaced = sparkext.channel._channel
    assert replaced is not dead and replaced.alive()
    assert rows == expected and m["accepted"] >= 1 and m["python_errors"] == 0


def test_a_flood_of_unauthenticated_connections_leaves_pooled_jvm_calls_working(
        spark, process_channel):
    c = process_channel(Channel(max_unauthenticated=2, handshake_seconds=60))
    expected = plain_rows(spark)
    with rules_enabled(spark, [double_filter]):
        accepted_after_a_query(spark)  # the JVM now holds an authenticated connection
        held = [raw_connect(c.location) for _ in range(2)]
        with raw_connect(c.location) as extra:
            extra.settimeout(3)
            assert closed_by_peer(extra)
        rows, m = accepted_after_a_query(spark)
        for s in held:
            s.close()
    assert rows == expected and m["accepted"] >= 1 and m["python_errors"] == 0


def test_a_server_that_never_answers_the_hello_does_not_hold_a_call_without_timeout(spark):
    # timeoutMs=0 means no limit for the call; the handshake still has its own (5 s).
    with socket.create_server(("127.0.0.1", 0)) as silent:
        address = f"tcp:127.0.0.1:{silent.getsockname()[1]}"
        jvm = spark._jvm.io.sparkext.PythonChannel.apply(address, "00" * 32)
        with pytest.raises(Py4JJavaError, match="no handshake with"):
            jvm.call(1, bytearray(b"{}"), 0)
