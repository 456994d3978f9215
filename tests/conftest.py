"""Shared fixtures: one local SparkSession for the whole run (from the sparkext pytest
plugin), the corpus tables, TPC-H data, and helpers to run rules through the bridge."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sparkext import codec
from sparkext.optimizer import CHECK_FACTS_ENV
from sparkext.testing.session import check_order_facts

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache"
TPCH_SCALE = "0.01"
TPCH_TABLES = ("lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region")


def pytest_configure(config):
    # Before any session exists: each registration's executors read it. The facts are
    # checked after each test (order_facts_hold).
    os.environ.setdefault(CHECK_FACTS_ENV, "1")


@pytest.fixture(autouse=True)
def order_facts_hold(request):
    """After every test that ran Spark, each fact the ordering rules relied on to remove a
    sort or drop a sort key is checked on the rows of that sort's input
    (``sparkext.testing.session.check_order_facts``): a wrong analysis fails here even
    where the query's rows came out in order by luck."""
    yield
    callspec = getattr(request.node, "callspec", None)
    if "spark" not in request.fixturenames or "spark" in getattr(callspec, "params", {}):
        return  # no session (or a test's parameter named "spark": tests/test_jars.py)
    failures = check_order_facts(request.getfixturevalue("spark"))
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)


#: The fixtures that start Spark: the session, tests/test_guards.py's application runs,
#: tests/test_connect.py's Connect servers, tests/compat/test_standalone.py's cluster.
SPARK_FIXTURES = frozenset({"spark", "runs", "servers", "cluster"})


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run suites marked slow (make test-all)")


def pytest_collection_modifyitems(config, items):
    # A test that uses a fixture that starts Spark (SPARK_FIXTURES, directly or through
    # another fixture) is marked ``spark``; a test that starts one itself (a child process)
    # says so with ``@pytest.mark.spark``. So ``pytest -m "not spark"`` runs the
    # pure-Python tests, in seconds.
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if SPARK_FIXTURES.intersection(getattr(item, "fixturenames", ())) - set(params):
            item.add_marker(pytest.mark.spark)
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow (make test-all)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def tables(spark):
    from tests.corpus.tables import register

    return register(spark)


def tpch_dir(scale: str = TPCH_SCALE) -> Path:
    """Generates TPC-H parquet data once per checkout (tpchgen-cli) and returns its folder."""
    out = CACHE / f"tpch-sf{scale}"
    CACHE.mkdir(parents=True, exist_ok=True)
    # A lock: make test's two processes (pytest-xdist) may both ask first. Written aside
    # and renamed: a run killed midway leaves no folder that looks complete.
    with open(CACHE / f"tpch-sf{scale}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not all((out / f"{t}.parquet").exists() for t in TPCH_TABLES):
            partial = CACHE / f"tpch-sf{scale}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
            exe = Path(sys.executable).parent / "tpchgen-cli"
            subprocess.run([str(exe), "parquet", "-s", scale, f"--output-dir={partial}"],
                           check=True, stdout=subprocess.DEVNULL)
            shutil.rmtree(out, ignore_errors=True)
            partial.rename(out)
    return out


@pytest.fixture(scope="session")
def tpch(spark):
    """TPC-H tables as temp views; returns {query name: SQL text}."""
    data = tpch_dir()
    for t in TPCH_TABLES:
        spark.read.parquet(str(data / f"{t}.parquet")).createOrReplaceTempView(t)
    queries = ROOT / "tests" / "tpch" / "queries"
    return {p.stem: p.read_text() for p in sorted(queries.glob("q*.sql"))}


def without_facts(batches):
    """``batches`` without the rules that read relation facts (``Rule.needs``): for a test
    rule that runs rules on the plan it is given, which comes without facts."""
    from sparkext.optimizer import Batch

    return tuple(Batch(b.name, b.strategy, tuple(r for r in b.rules if not r.needs))
                 for b in batches)


@contextlib.contextmanager
def rules_enabled(spark, rules=None, **kw):
    """Runs ``rules`` in the session for the duration of the block (only them, unless
    ``builtin=True`` is given), then restores the built-in rules (what the ``spark``
    fixture runs)."""
    import sparkext

    kw.setdefault("builtin", rules is None)
    handle = sparkext.enable(spark, rules, **kw)
    try:
        yield handle
    finally:
        sparkext.enable(spark)


@contextlib.contextmanager
def conf(spark, settings: dict):
    """Sets session confs for the duration of the block."""
    old = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


_REPORTS = pytest.StashKey[list]()


def report(request, lines) -> None:
    """Prints a summary to the terminal, past pytest's output capture. Under pytest-xdist
    (whose workers' output goes nowhere) the lines go to the controller, which prints them
    at the end of the run."""
    config = request.config
    if hasattr(config, "workerinput"):
        config.stash.setdefault(_REPORTS, []).extend(["", *lines])
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        for line in lines:
            reporter.write_line(line)


def pytest_sessionfinish(session):
    out = getattr(session.config, "workeroutput", None)
    if out is not None:
        out["sparkext_reports"] = session.config.stash.get(_REPORTS, [])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    node.config.stash.setdefault(_REPORTS, []).extend(
        getattr(node, "workeroutput", {}).get("sparkext_reports", []))


def pytest_terminal_summary(terminalreporter, config):
    for line in config.stash.get(_REPORTS, []):
        terminalreporter.write_line(line)


def jvm_seq(seq):
    """The items of a JVM (Scala) collection, through py4j."""
    it = seq.iterator()
    while it.hasNext():
        yield it.next()


def jvm_nodes(plan):
    """Every node of a JVM plan, depth first (subqueries not included)."""
    stack = [plan]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(jvm_seq(node.children()))


def registry(spark):
    return spark._jvm.io.sparkext.Sparkext


def apply_rules(spark, jplan, position="once"):
    """Runs the session's registered rules on a JVM LogicalPlan, as the optimizer would."""
    return registry(spark).applyRules(spark._jsparkSession, jplan, position)


def request_document(spark, jplan) -> dict:
    """The request the bridge would send for a JVM plan, header and body as one dict."""
    return codec.request_document(registry(spark).encodePlan(spark._jsparkSession, jplan))


def dataframe_of(spark, jplan):
    """A DataFrame that runs a given JVM logical plan (it is analyzed and optimized again)."""
    from pyspark.sql import DataFrame

    jdf = spark._jvm.org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, jplan)
    return DataFrame(jdf, spark)
