"""sparkext for Spark Connect clients, on real Connect servers (issue 15).

Each server configuration is one server for the module (they start in parallel, ~20-40 s):

- ``plain``: Spark as it comes, no jar: the rows to compare with, and the advice a client
  gets from a server without sparkext;
- ``with_rules``: started with ``python -m sparkext server-conf`` (the built-in rules) plus
  a user rule module on the rule worker's path.

A client is ``SparkSession.builder.remote("sc://127.0.0.1:PORT").create()``: no py4j, no
JVM in this process. What it can change is per session SQL configuration, which is how the
tests switch sparkext off, set the timeout or strict mode.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest

import sparkext
from tests.conftest import ROOT, conf
from tests.rows import assert_same_rows, collect
from tests.servers import ConnectServer

pytest.importorskip("grpc", reason="Spark Connect's client needs grpcio (requirements-dev.txt)")

SERVER_ENV = {"PYTHONPATH": str(ROOT)}
# pyspark marks the whole process as a Connect client when it creates a Connect session;
# pyspark.sql.functions then build Connect columns, which a classic session cannot use.
CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"


@pytest.fixture(scope="module", autouse=True)
def classic_mode_after_the_module():
    """The test files after this one run classic sessions: leave the process as it was."""
    before = os.environ.get(CONNECT_MODE)
    yield
    if before is None:
        os.environ.pop(CONNECT_MODE, None)
    else:
        os.environ[CONNECT_MODE] = before


@pytest.fixture(autouse=True)
def api_mode(request, monkeypatch):
    """Connect mode for the tests of Connect clients, classic mode for the others. (The
    classic tests come first in this file: the session-wide classic ``spark`` fixture must
    be created before any Connect session marks the process.)"""
    if "spark" in request.fixturenames:
        monkeypatch.delenv(CONNECT_MODE, raising=False)
    else:
        monkeypatch.setenv(CONNECT_MODE, "1")


def server_conf_args(*extra: str) -> list[str]:
    """The arguments ``python -m sparkext server-conf`` prints, as a user pastes them."""
    out = subprocess.run([sys.executable, "-m", "sparkext", "server-conf", *extra],
                         capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, **SERVER_ENV})
    return [word for line in out.stdout.splitlines() for word in line.split(" ", 1)]


@pytest.fixture(scope="module", autouse=True)
def servers():
    """Every server of the module, launched at once when the module starts; each fixture
    below waits for its own."""
    started = {
        "plain": ConnectServer(name="connect-plain").launch(),
        "with_rules": ConnectServer(args=server_conf_args(), env=SERVER_ENV,
                                    name="connect-sparkext").launch(),
    }
    yield started
    for server in started.values():
        server.stop()


def client(server: ConnectServer):
    """A Connect session of its own (``create``: never a session another test holds)."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(server.wait_ready().url).create()
    yield spark
    spark.stop()


@pytest.fixture(scope="module")
def plain(servers):
    yield from client(servers["plain"])


@pytest.fixture(scope="module")
def with_rules(servers):
    yield from client(servers["with_rules"])


# -- metrics through the table function ---------------------------------------------------

def test_the_metrics_table_function_gives_the_py4j_counters(spark, tables):
    """In a classic session both ways are there: the same counters, the same names."""
    sparkext.enable(spark)
    spark.table("events").where("amount > 0").orderBy("ts").collect()
    # Read first through py4j: the table function reads when its query is analysed,
    # before that query's own optimizer calls count.
    py4j = sparkext.metrics(spark)
    row = spark.sql("SELECT * FROM sparkext_metrics()").collect()[0].asDict()
    assert row["calls"] > 0, row
    assert {k: py4j[k] for k in row} == row | {"warnings": py4j["warnings"]}
    assert list(row) == [k for k in py4j if not k.endswith("_ms")]


def test_reset_through_the_table_function_zeroes_the_counters(spark, tables):
    sparkext.enable(spark)
    spark.table("events").where("amount > 0").collect()
    before = spark.sql("SELECT calls FROM sparkext_reset_metrics()").collect()[0]["calls"]
    after = sparkext.metrics(spark)
    # What counts after the reset is the reset query's own optimization (analysis, where
    # the reset happens, comes first).
    assert before > 1 and after["calls"] <= 1, (before, after)


# -- python -m sparkext server-conf, configure() ------------------------------------------

def test_server_conf_prints_what_connect_server_args_gives():
    args = server_conf_args("--rules", "mycompany.rules:RULES")
    assert args == sparkext.connect_server_args(["mycompany.rules:RULES"])
    assert args[:2] == ["--jars", sparkext.jar_path()]
    assert "spark.sparkext.rules=sparkext.rules:BATCHES,mycompany.rules:RULES" in args


def test_configure_does_not_touch_a_connect_builder_and_says_what_to_do(servers, plain):
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.remote(servers["plain"].url)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        configured = sparkext.configure(builder)
        session = configured.create()
        session.stop()
    # Setting spark.jars and spark.sql.extensions from a client only draws pyspark's
    # CANNOT_MODIFY_CONFIG warnings: the server's JVM is long started.
    assert "spark.sql.extensions" not in configured._options
    assert "spark.jars" not in configured._options
    messages = [str(w.message) for w in caught]
    assert not [m for m in messages if "CANNOT_MODIFY" in m], messages
    ours = [m for m in messages if "sparkext" in m]
    assert len(ours) == 1 and "python -m sparkext server-conf" in ours[0], messages


# -- what a client gets from a server without sparkext ------------------------------------

def test_metrics_from_a_server_without_sparkext_say_how_to_start_one(plain):
    with pytest.raises(sparkext.SparkextError, match="server-conf"):
        sparkext.metrics(plain)


def test_enable_on_a_connect_session_names_the_server_side_setting(plain):
    with pytest.raises(sparkext.SparkextError, match="spark.sparkext.rules"):
        sparkext.enable(plain)


def test_a_connect_client_reads_the_counters_with_metrics(with_rules):
    sparkext.reset_metrics(with_rules)
    m = sparkext.metrics(with_rules)
    assert m["calls"] == 0 and m["accepted"] == 0 and m["warnings"] == [], m
    assert m["python_ms"] == 0.0
