"""sparkext for Spark Connect clients, on real Connect servers (issue 15).

Each server configuration is one server for the module (they start in parallel, ~20-40 s):

- ``plain``: Spark as it comes, no jar: the rows to compare with, and the advice a client
  gets from a server without sparkext;
- ``with_rules``: started with ``python -m sparkext server-conf --rules team_rules:BATCHES``
  (the built-in rules and a team's module, shipped with ``--py-files``);
- ``broken``: the same, with a rule module that fails to import.

A client is ``SparkSession.builder.remote("sc://127.0.0.1:PORT").create()``: gRPC, no py4j,
no JVM of its own. What it can change is per session SQL configuration, which is how the
tests switch sparkext off, set the timeout or strict mode.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import warnings

import pytest

import sparkext
from sparkext.catalyst import excluded_rules_conf
from tests.conftest import ROOT, conf
from tests.servers import ConnectServer

pytest.importorskip("grpc", reason="Spark Connect's client needs grpcio (requirements-dev.txt)")

SERVER_ENV = {"PYTHONPATH": str(ROOT)}
HANG = "sparkext-test-hang"

# A team's rule module, shipped to the server's driver with --py-files: the quickstart's toy
# rule, and a rule that spins for ever on a query that asks for it (the timeout's test).
TEAM_RULES = f"""
import dataclasses

from examples.toy_rules import swap_filter_below_project
from sparkext import Batch, FixedPoint, rule
from sparkext.expressions import Literal
from sparkext.plan import Filter


def asks_to_hang(node):
    return isinstance(node, Filter) and node.condition.exists(
        lambda e: isinstance(e, Literal) and e.value == {HANG!r})


@rule(matches=(Filter,))
def spins_when_asked(plan):
    # A new, equal plan every round: never a fixed point (the executor can cancel it).
    return dataclasses.replace(plan) if plan.exists(asks_to_hang) else plan


BATCHES = [Batch("team", FixedPoint(100), (swap_filter_below_project,)),
           Batch("spin when asked", FixedPoint(10**9), (spins_when_asked,))]
"""
BROKEN_RULES = """raise RuntimeError("the team's rule module is broken")\n"""
# pyspark marks the whole process as a Connect client when it creates a Connect session;
# pyspark.sql.functions then build Connect columns, which a classic session cannot use.
CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"


@pytest.fixture(scope="module", autouse=True)
def connect_mode():
    """This module's process is a Connect client; the test files after it run classic
    sessions, so the mark goes when the module ends."""
    before = os.environ.get(CONNECT_MODE)
    os.environ[CONNECT_MODE] = "1"
    yield
    if before is None:
        os.environ.pop(CONNECT_MODE, None)
    else:
        os.environ[CONNECT_MODE] = before


def server_conf_args(*extra: str) -> list[str]:
    """The arguments ``python -m sparkext server-conf`` prints, as a user pastes them."""
    out = subprocess.run([sys.executable, "-m", "sparkext", "server-conf", *extra],
                         capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, **SERVER_ENV})
    return [word for line in out.stdout.splitlines() for word in line.split(" ", 1)]


@pytest.fixture(scope="module", autouse=True)
def servers(tmp_path_factory):
    """Every server of the module, launched at once when the module starts; each fixture
    below waits for its own."""
    modules = tmp_path_factory.mktemp("rule-modules")
    (modules / "team_rules.py").write_text(TEAM_RULES)
    (modules / "broken_rules.py").write_text(BROKEN_RULES)

    def with_sparkext(name, rules):
        args = [*server_conf_args("--rules", f"{rules}"),
                "--py-files", str(modules / f"{rules.split(':')[0]}.py")]
        return ConnectServer(args=args, env=SERVER_ENV, name=name, log_dir=modules).launch()

    started = {
        "plain": ConnectServer(name="connect-plain", log_dir=modules).launch(),
        "with_rules": with_sparkext("connect-sparkext", "team_rules:BATCHES"),
        "broken": with_sparkext("connect-broken-rules", "broken_rules:RULES"),
    }
    yield started
    for server in started.values():
        server.terminate()  # all at once: each takes seconds to shut down
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


@pytest.fixture(scope="module")
def broken(servers):
    yield from client(servers["broken"])


def sorted_data(spark):
    """Data cached in ``ts`` order (plain Spark's plan for it, whatever the server runs):
    ``g`` is ``ts % 3``."""
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        df = spark.range(1000).selectExpr("id % 3 AS g", "id AS ts").orderBy("ts").cache()
        df.count()
    return df


def filtered_and_sorted(cached):
    # g is the constant 1 after the filter: sorting on (g, ts) is sorting on ts, which the
    # cached data already is. Catalyst keeps the sort.
    return cached.where("g = 1").orderBy("g", "ts")


def optimized_plan(df) -> str:
    """The optimized logical plan as a Connect client sees it (``df.explain(True)``)."""
    text = df._explain_string(extended=True)
    return text.split("== Optimized Logical Plan ==")[1].split("== Physical Plan ==")[0]


def plain_plan(df) -> str:
    spark = df.sparkSession
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        return optimized_plan(df)


def rows(df) -> list[tuple]:
    return [tuple(r) for r in df.collect()]


def worker_of(server: ConnectServer) -> list[int]:
    return server.processes("sparkext.worker")


def wait_gone(pid: int, seconds: float = 30.0) -> None:
    """Until ``pid`` has exited (a zombie has: only its parent's wait is missing)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return
        if state == "Z":
            return
        assert time.monotonic() < deadline, f"process {pid} is still there"
        threading.Event().wait(0.02)


def strict_error(spark, df) -> str:
    """The error collecting ``df`` raises under strict mode ('' when it raises none)."""
    with conf(spark, {"spark.sparkext.strict": "true"}):
        try:
            df.collect()
        except Exception as e:  # the server's error, as the client re-raises it
            return str(e)
    return ""


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


def test_a_connect_client_reads_and_resets_the_counters(with_rules):
    for bound in (3, 4, 5):
        with_rules.range(10).where(f"id > {bound}").orderBy("id").collect()
    before = sparkext.metrics(with_rules)
    sparkext.reset_metrics(with_rules)
    after = sparkext.metrics(with_rules)
    assert before["calls"] > 1 and before["python_nanos"] > 0, before
    # What counts after the reset is the reset query's own optimization.
    assert after["calls"] < before["calls"] and after["accepted"] == 0, after
    assert after["warnings"] == [], after


# -- the rules run on the server, for a client with no py4j -------------------------------

def test_a_connect_client_gets_its_redundant_sort_removed_and_plain_sparks_rows(
        with_rules, plain):
    expected = rows(filtered_and_sorted(sorted_data(plain)))
    cached = sorted_data(with_rules)
    sparkext.reset_metrics(with_rules)
    df = filtered_and_sorted(cached)
    before, after = plain_plan(df), optimized_plan(df)
    # The cached relation prints its own (physical) sort: count against the plain plan.
    assert after.count("Sort [") == before.count("Sort [") - 1, f"{before}\n{after}"
    assert rows(df) == expected  # in order: ts ascending, as plain Spark returns them
    assert sparkext.metrics(with_rules)["accepted"] > 0
    cached.unpersist()


def test_a_connect_clients_query_gets_the_statistics_rules_which_read_the_files(
        with_rules, plain, tmp_path):
    # The rule worker answers for the server: the facts (files, footers' statistics) reach
    # it in the same requests as in a classic session.
    from pyspark.sql import functions as F

    path = str(tmp_path / "events")
    (plain.range(0, 4000, 1, 4).selectExpr("id", "id % 7 AS g")
     .write.option("parquet.block.row.count.limit", "500").parquet(path))
    extremes = with_rules.read.parquet(path).agg(F.max("id"), F.min("g"), F.count("*"))
    assert "LocalRelation" in optimized_plan(extremes), optimized_plan(extremes)
    assert rows(extremes) == rows(plain.read.parquet(path).agg(F.max("id"), F.min("g"),
                                                                 F.count("*")))
    top = with_rules.read.parquet(path).orderBy(F.desc("id")).limit(5)
    assert re.search(r"\(id#\d+L >= \d+\)", optimized_plan(top)), optimized_plan(top)
    assert rows(top) == rows(plain.read.parquet(path).orderBy(F.desc("id")).limit(5))


def test_a_team_rule_module_shipped_with_py_files_rewrites_a_plan(with_rules, plain):
    def query(spark):
        return spark.range(100).selectExpr("id", "id * 2 AS twice").where("id > 90")

    # Catalyst's pushdown and sparkext's own are off: only the team's rule moves the filter.
    off = {**excluded_rules_conf(), "spark.sparkext.excludedRules": "push_down_filters"}
    with conf(with_rules, off):
        df = query(with_rules)
        before, after = plain_plan(df), optimized_plan(df)
        got = rows(df)
    assert before.index("Filter") < before.index("Project"), before
    assert after.index("Project") < after.index("Filter"), after
    assert sorted(got) == sorted(rows(query(plain)))


def test_a_rule_module_that_fails_to_import_leaves_rows_right_and_says_why(broken, plain):
    expected = rows(filtered_and_sorted(sorted_data(plain)))
    sparkext.reset_metrics(broken)
    df = filtered_and_sorted(sorted_data(broken))
    assert rows(df) == expected
    m = sparkext.metrics(broken)
    assert m["worker_errors"] == 1, m
    assert any("the team's rule module is broken" in w for w in m["warnings"]), m
    assert "the team's rule module is broken" in strict_error(broken, df)


def test_a_rule_that_hangs_past_the_timeout_leaves_rows_right(with_rules, plain):
    def query(spark):
        return spark.range(50).where(f"cast(id AS string) <> '{HANG}'")

    expected = sorted(rows(query(plain)))
    limits = {"spark.sparkext.timeoutMs": "1000", "spark.sparkext.cooldownMs": "0"}
    with conf(with_rules, limits):
        sparkext.reset_metrics(with_rules)
        assert sorted(rows(query(with_rules))) == expected
        m = sparkext.metrics(with_rules)
        error = strict_error(with_rules, query(with_rules))
    assert m["timeouts"] >= 1 and any("did not answer within" in w for w in m["warnings"]), m
    assert "did not answer within" in error


def test_a_killed_worker_leaves_rows_right_and_the_next_query_starts_a_new_one(
        servers, with_rules, plain):
    server = servers["with_rules"]
    expected = rows(filtered_and_sorted(sorted_data(plain)))
    cached = sorted_data(with_rules)
    rows(filtered_and_sorted(cached))  # the worker runs
    [first] = worker_of(server)
    os.kill(first, signal.SIGKILL)
    wait_gone(first)
    sparkext.reset_metrics(with_rules)
    assert rows(filtered_and_sorted(cached)) == expected
    m = sparkext.metrics(with_rules)
    assert m["worker_errors"] == 1 and any("exited" in w for w in m["warnings"]), m
    # The next query starts a new worker, and the sort goes again.
    df = filtered_and_sorted(cached)
    assert optimized_plan(df).count("Sort [") == plain_plan(df).count("Sort [") - 1
    assert rows(df) == expected
    [second] = worker_of(server)
    assert second != first
    os.kill(second, signal.SIGKILL)
    wait_gone(second)
    assert "exited" in strict_error(with_rules, filtered_and_sorted(cached))
    cached.unpersist()
