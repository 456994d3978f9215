"""The applications tests/test_guards.py runs in child processes: guards are fixed when a
SparkContext starts, so each configuration needs a context of its own, and a child keeps
them out of the test run's shared session. Each child prints one line, ``FACTS {json}``,
with what it saw; the assertions are in the test module.

    python -m tests.guards_app classic SETUP.json   # four contexts, one after another
    python -m tests.guards_app connect SETUP.json   # a Spark Connect client

``SETUP.json`` holds the data's folders, the queries and the settings
(``tests/test_guards.py``, ``setup``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

REFUSED = "SPARKEXT_QUERY_REFUSED"


def rows(df) -> list[list[Any]]:
    return [list(r) for r in df.collect()]


def outcome(run: Callable[[], Any]) -> dict:
    """``{"ok": result}``, or what the error says: its class, condition and message."""
    try:
        return {"ok": run()}
    except Exception as e:  # noqa: BLE001 - reported to the test
        from sparkext.session import error_class

        condition = error_class(e)
        parameters = dict(e.getMessageParameters()) if hasattr(e, "getMessageParameters") \
            else None  # (a dict, or py4j's map of one on Spark 3.5)
        return {"error": type(e).__name__, "condition": condition, "message": str(e),
                "parameters": parameters,
                "sql_state": e.getSqlState() if hasattr(e, "getSqlState") else None}


#: Which file formats Spark reads as DSv1 sources (every one by default).
V1_SOURCES = "spark.sql.sources.useV1SourceList"


def printed(run: Callable[[], Any]) -> str:
    """What ``run`` prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run()
    return out.getvalue()


def create_tables(spark, setup: dict) -> None:
    """The catalog tables over the data the test wrote, and the views both sides share:
    ``ev2`` reads the files of ``events`` through DSv2 (parquet off the V1 list while the
    view's plan is made; the view keeps that plan)."""
    for statement in setup["tables"]:
        spark.sql(statement)
    for statement in setup["views"]:
        spark.sql(statement)
    v1 = spark.conf.get(V1_SOURCES)
    spark.conf.set(V1_SOURCES, ",".join(f for f in v1.split(",") if f.strip() != "parquet"))
    try:
        spark.read.parquet(setup["v2_events"]).createOrReplaceTempView("ev2")
    finally:
        spark.conf.set(V1_SOURCES, v1)


def run_queries(spark, setup: dict) -> dict:
    """Each allowed query's rows, and each refused query's error."""
    return {
        "allowed": {name: outcome(lambda q=q: rows(spark.sql(q)))
                    for name, q in setup["allowed"].items()},
        "refused": {name: outcome(lambda q=q: rows(spark.sql(q)))
                    for name, q in setup["refused"].items()},
    }


# -- classic -------------------------------------------------------------------------------

def classic(setup: dict) -> dict:
    from sparkext.testing.session import local_session

    facts: dict[str, Any] = {}
    started = time.monotonic()
    base = {"spark.sparkext.python": sys.executable, "spark.sparkext.strict": "false",
            "spark.sql.warehouse.dir": setup["warehouse"]}
    # The first context's settings launch the JVM, as system properties, which every later
    # context's conf inherits: so the first is the one without guards.
    spark = local_session({**base, "spark.driver.extraJavaOptions":
                           f"-Dlog4j2.configurationFile={setup['log4j']}"})
    facts["seconds"] = {"start": time.monotonic() - started}
    for name, run in (("plain", plain_context), ("main", main_context),
                      ("broken", broken_context), ("hangs", hanging_context)):
        if name != "plain":
            spark = local_session({**base, **setup["conf"][name]})
        begun = time.monotonic()
        facts[name] = run(spark, setup)
        spark.stop()
        facts["seconds"][name] = time.monotonic() - begun
    return facts


def main_context(spark, setup: dict) -> dict:
    import sparkext

    guards = spark._jvm.io.sparkext.Guards
    create_tables(spark, setup)
    facts = run_queries(spark, setup)
    refused_query = setup["refused"]["no partition filter"]

    # DataFrame API, as well as SQL.
    events = spark.table("events")
    facts["dataframe_allowed"] = outcome(lambda: rows(events.where("p = 0").groupBy("s").count()))
    facts["dataframe_refused"] = outcome(lambda: rows(events.groupBy("s").count()))

    # A cached result needs no scan: three reads of the cached part of the table pass where
    # three reads of its files are over maxScan.files.
    part = events.where("p = 1")
    facts["uncached_union"] = outcome(lambda: rows(part.union(part).union(part)))
    facts["cache_refused"] = outcome(lambda: events.cache() and None)
    facts["cached_after_refusal"] = spark.catalog.isCached("events")
    facts["cache_allowed"] = outcome(lambda: part.cache() and None)
    facts["cached_union"] = outcome(lambda: rows(part.union(part).union(part)))
    part.unpersist()

    # Writes: the query a write or an INSERT runs is judged.
    out = setup["out"]
    facts["write_refused"] = outcome(lambda: events.write.parquet(out + "/refused"))
    facts["write_refused_left_nothing"] = not os.path.exists(out + "/refused")
    facts["write_allowed"] = outcome(
        lambda: events.where("p = 2").write.parquet(out + "/allowed"))
    facts["written_rows"] = spark.read.parquet(out + "/allowed").count()
    spark.sql("CREATE TABLE copy (id BIGINT, s STRING) USING parquet")
    facts["insert_refused"] = outcome(
        lambda: spark.sql("INSERT INTO copy SELECT id, s FROM events").collect())
    facts["insert_allowed"] = outcome(
        lambda: spark.sql("INSERT INTO copy SELECT id, s FROM events WHERE p = 3").collect())
    facts["copied_rows"] = spark.table("copy").count()

    # EXPLAIN: SQL's shows the refusal as its text; df.explain() raises it.
    facts["sql_explain_refused"] = outcome(
        lambda: rows(spark.sql(f"EXPLAIN EXTENDED {refused_query}")))
    facts["df_explain_refused"] = outcome(lambda: printed(spark.sql(refused_query).explain))
    facts["sql_explain_allowed"] = outcome(
        lambda: rows(spark.sql(f"EXPLAIN EXTENDED {setup['allowed']['partition filter']}")))
    # (a query the built-in rules cannot answer from statistics: explain runs them)
    facts["sparkext_explain_refused"] = str(
        sparkext.explain(spark.sql(setup["refused"]["a data column filter only"])))

    # The user's guards: a refusal, a guard that raises, a guard in warn mode.
    for name, q in setup["user"].items():
        facts[f"user_{name}"] = outcome(lambda q=q: rows(spark.sql(q)))

    facts["bypasses"] = bypasses(spark, refused_query, setup)

    # A killed guard worker: the next query is refused, saying so; the one after runs.
    first = guards.pid()
    os.kill(first, signal.SIGKILL)
    wait_gone(first)
    allowed = setup["allowed"]["partition filter"]
    facts["after_kill"] = outcome(lambda: rows(spark.sql(allowed)))
    facts["recovered"] = outcome(lambda: rows(spark.sql(allowed)))
    facts["new_pid"] = guards.pid() not in (-1, first)

    facts["metrics"] = sparkext.metrics(spark)
    facts["starts"] = guards.starts()
    return facts


def bypasses(spark, refused: str, setup: dict) -> dict:
    """Everything a session can set, call or start, each tried on a refused query."""
    import sparkext
    from tests.conftest import conf

    out: dict[str, Any] = {}

    def attempt(name: str, session=spark) -> None:
        out[name] = outcome(lambda: rows(session.sql(refused)))

    with conf(spark, {"spark.sparkext.enabled": "false"}):
        attempt("enabled=false")
    with conf(spark, {"spark.sparkext.excludedRules": setup["guard_names"]}):
        attempt("excludedRules")
    with conf(spark, {"spark.sql.optimizer.excludedRules": setup["sparkext_catalyst_rules"]}):
        attempt("optimizer.excludedRules")
    # With Spark's partition pruning excluded the guards prune themselves: a query that
    # reads little still passes, and one that reads much is still refused.
    with conf(spark, {"spark.sql.optimizer.excludedRules": setup["pruning_rule"]}):
        attempt("pruning excluded")
        out["pruning excluded, allowed query"] = outcome(
            lambda: rows(spark.sql(setup["allowed"]["partition filter"])))
    sparkext.enable(spark)
    sparkext.disable(spark)
    attempt("disable()")
    sparkext.enable(spark, [sparkext.rule(lambda plan: plan, name="keep")], builtin=False)
    attempt("enable(builtin=False)")
    sparkext.disable(spark)
    attempt("newSession()", spark.newSession())
    static = setup["static_key"]
    out["conf.set static"] = outcome(lambda: spark.conf.set(static, ""))
    out["conf.unset static"] = outcome(lambda: spark.conf.unset(static))
    out["SET static"] = outcome(lambda: rows(spark.sql(f"SET {static}=")))
    out["RESET static"] = outcome(lambda: rows(spark.sql(f"RESET {static}")))
    spark.sql("RESET")
    attempt("RESET")
    # Through py4j: the session's own SQLConf (no static check there) and the live
    # SparkConf. Neither reaches the guards, read once per SparkContext at its start.
    spark._jsparkSession.sessionState().conf().setConfString(static, "")
    spark.sparkContext._jsc.sc().conf().set(static, "")
    attempt("py4j: session SQLConf and SparkConf")
    return out


def wait_gone(pid: int) -> None:
    """Until the killed process is gone, or a zombie the JVM has yet to reap."""
    deadline = time.monotonic() + 30
    while alive(pid):
        if time.monotonic() > deadline:
            raise AssertionError(f"process {pid} is still there")
        threading.Event().wait(0.02)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            # (the state follows the command's closing parenthesis)
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def broken_context(spark, setup: dict) -> dict:
    """A guard module that fails to import: every query refused (a CREATE TABLE too),
    naming the error."""
    guards = spark._jvm.io.sparkext.Guards
    starts = guards.starts()
    first = outcome(lambda: rows(spark.range(3)))
    second = outcome(lambda: rows(spark.range(3)))
    return {"first": first, "second": second, "starts": guards.starts() - starts}


def hanging_context(spark, setup: dict) -> dict:
    """A guard that never returns (refused at the time-out, the worker replaced), and a
    built-in guard in warn mode."""
    guards = spark._jvm.io.sparkext.Guards
    create_tables(spark, setup)
    first = guards.starts()
    facts = {"hang": outcome(lambda: rows(spark.sql(setup["hang"])))}
    facts["after_hang"] = outcome(lambda: rows(spark.sql(setup["allowed"]["partition filter"])))
    facts["starts"] = guards.starts() - first
    facts["warned"] = outcome(lambda: rows(spark.sql(setup["over_limit"])))
    return facts


def plain_context(spark, setup: dict) -> dict:
    """Plain Spark's rows for every query the guards let through (no guards, sparkext
    off), over the same tables."""
    create_tables(spark, setup)
    spark.conf.set("spark.sparkext.enabled", "false")
    out = {name: rows(spark.sql(q)) for name, q in setup["allowed"].items()}
    out.update({name: rows(spark.sql(q)) for name, q in setup["plain"].items()})
    return out


# -- Spark Connect client ------------------------------------------------------------------

def connect(setup: dict) -> dict:
    from pyspark.sql import SparkSession

    import sparkext

    spark = SparkSession.builder.remote(setup["url"]).create()
    create_tables(spark, setup)
    facts: dict[str, Any] = run_queries(spark, {**setup, **setup["connect"]})
    refused = setup["refused"]["no partition filter"]
    out: dict[str, Any] = {}
    for key, value in (("spark.sparkext.enabled", "false"),
                       ("spark.sparkext.excludedRules", setup["guard_names"]),
                       ("spark.sql.optimizer.excludedRules", setup["sparkext_catalyst_rules"])):
        spark.conf.set(key, value)
        out[key] = outcome(lambda: rows(spark.sql(refused)))
        spark.conf.unset(key)
    static = setup["static_key"]
    out["conf.set static"] = outcome(lambda: spark.conf.set(static, ""))
    other = SparkSession.builder.remote(setup["url"]).config(static, "").create()
    out["new session"] = outcome(lambda: rows(other.sql(refused)))
    facts["bypasses"] = out
    facts["sql_explain_refused"] = outcome(lambda: rows(spark.sql(f"EXPLAIN {refused}")))
    facts["metrics"] = sparkext.metrics(spark)
    return facts


def main() -> None:
    scenario, path = sys.argv[1], sys.argv[2]
    with open(path) as f:
        setup = json.load(f)
    facts = classic(setup) if scenario == "classic" else connect(setup)
    print("FACTS " + json.dumps(facts, default=str))


if __name__ == "__main__":
    main()
