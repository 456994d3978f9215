"""The rule worker the driver JVM starts for ``spark.sparkext.rules`` (issue 15): rules run
with no ``sparkext.enable``, a user's rule module on the worker's path, and the ways a
worker fails (it cannot start, it dies, it hangs), each leaving the rows right.

The worker is one per SparkContext, configured by the context's conf, so every test runs
its own PySpark driver in a child process (:data:`APP`); the child reports what it saw as
one JSON line and the assertions are here. Each child compares its rows with the same
query under ``spark.sparkext.enabled=false`` (plain Spark's plan).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sparkext.rules import ELIMINATE_SORTS, PUSH_DOWN_FILTERS

ROOT = Path(__file__).resolve().parent.parent

APP = textwrap.dedent('''
    import json, os, signal, sys, threading, time
    from sparkext.testing.session import local_session
    import sparkext
    from tests.conftest import conf, jvm_nodes

    scenario, extra = sys.argv[1], json.loads(sys.argv[2])
    spark = local_session({"spark.sparkext.python": sys.executable, **extra})
    spark.conf.set("spark.sparkext.strict", "false")
    worker = spark._jvm.io.sparkext.RuleWorker
    facts = {}

    def sorted_query(session):
        # A range is sorted on id already, and g is the constant 1 after the filter: the
        # sort is redundant, and plain Spark's optimizer keeps it.
        return (session.range(1000).selectExpr("id % 3 AS g", "id AS ts")
                .where("g = 1").orderBy("g", "ts"))

    def sorts(df):
        plan = df._jdf.queryExecution().optimizedPlan()
        return sum(n.getClass().getSimpleName() == "Sort" for n in jvm_nodes(plan))

    def rows(df):
        return [tuple(r) for r in df.collect()]

    def plain(make):
        with conf(spark, {"spark.sparkext.enabled": "false"}):
            df = make()
            return sorts(df), rows(df)

    def gone(pid):
        deadline = time.monotonic() + 30
        while os.path.exists(f"/proc/{pid}") or worker.pid() != -1:
            if time.monotonic() > deadline:
                raise AssertionError(f"the worker {pid} is still there")
            threading.Event().wait(0.02)

    def failure(make):
        """The error a query raises under strict mode ('' when it raises none)."""
        with conf(spark, {"spark.sparkext.strict": "true"}):
            try:
                rows(make())
            except Exception as e:
                return str(e)
        return ""

    def metrics():
        return sparkext.metrics(spark)

    if scenario == "builtin":
        facts["plain_sorts"], expected = plain(lambda: sorted_query(spark))
        df = sorted_query(spark)
        facts["sorts"], facts["same_rows"] = sorts(df), rows(df) == expected
        facts["accepted"] = metrics()["accepted"]
        facts["pid"] = worker.pid()
        # enable() in a session wins there; the worker still serves the other sessions.
        mine = spark.newSession()
        sparkext.enable(mine, [sparkext.rule(lambda plan: plan, name="keep")], builtin=False)
        df = sorted_query(mine)
        facts["enabled_session_sorts"] = sorts(df)
        facts["enabled_session_same_rows"] = rows(df) == expected
        other = spark.newSession()
        facts["other_session_sorts"] = sorts(sorted_query(other))
        facts["starts"] = worker.starts()
        # The worker goes with the SparkContext.
        pid = worker.pid()
        spark.stop()
        gone(pid)
        facts["stopped_with_the_context"] = True

    elif scenario == "user_module":
        make = lambda: spark.range(10).where("true")
        top = lambda df: df._jdf.queryExecution().optimizedPlan().getClass().getSimpleName()
        with conf(spark, {"spark.sparkext.enabled": "false"}):
            facts["plain_top"], expected = top(make()), rows(make())
        df = make()
        facts["top"], facts["same_rows"] = top(df), rows(df) == expected
        facts["accepted"] = metrics()["accepted"]

    elif scenario == "killed":
        _, expected = plain(lambda: sorted_query(spark))
        rows(sorted_query(spark))
        first = worker.pid()
        os.kill(first, signal.SIGKILL)
        gone(first)
        sparkext.reset_metrics(spark)
        facts["after_kill_same_rows"] = rows(sorted_query(spark)) == expected
        m = metrics()
        facts["after_kill_worker_errors"], facts["after_kill_warnings"] = m["worker_errors"], m["warnings"]
        df = sorted_query(spark)
        facts["restarted_sorts"], facts["restarted_same_rows"] = sorts(df), rows(df) == expected
        second = worker.pid()
        facts["new_pid"] = second not in (-1, first)
        os.kill(second, signal.SIGKILL)
        gone(second)
        facts["strict_error"] = failure(lambda: sorted_query(spark))
        facts["starts"] = worker.starts()

    elif scenario == "cannot_start":
        make = lambda: sorted_query(spark)
        _, expected = plain(make)
        sparkext.reset_metrics(spark)
        facts["same_rows"] = rows(make()) == expected
        m = metrics()
        facts["worker_errors"], facts["warnings"] = m["worker_errors"], m["warnings"]
        facts["again_same_rows"] = rows(make()) == expected
        m = metrics()
        facts["again_worker_errors"], facts["skipped_worker"] = m["worker_errors"], m["skipped_worker"]
        facts["strict_error"] = failure(make)
        facts["starts"] = worker.starts()

    elif scenario == "hangs":
        make = lambda: sorted_query(spark)
        _, expected = plain(make)
        sparkext.reset_metrics(spark)
        facts["same_rows"] = rows(make()) == expected
        m = metrics()
        facts["timeouts"], facts["warnings"] = m["timeouts"], m["warnings"]
        facts["strict_error"] = failure(make)

    print("FACTS " + json.dumps(facts))
''')

SORTS = "sparkext.rules:BATCHES"
#: A rule list, as a user's module would name it in spark.sparkext.rules.
LISTED = [PUSH_DOWN_FILTERS, ELIMINATE_SORTS]


def run_app(tmp_path: Path, scenario: str, conf: dict, path: tuple[Path, ...] = ()) -> dict:
    app = tmp_path / "app.py"
    app.write_text(APP)
    # The worker inherits the driver JVM's environment, which inherits this one.
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(ROOT), *map(str, path)])}
    out = subprocess.run([sys.executable, str(app), scenario, json.dumps(conf)],
                         capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-6000:]
    line = next(line for line in out.stdout.splitlines() if line.startswith("FACTS "))
    return json.loads(line[len("FACTS "):])


def module(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(exist_ok=True)
    (directory / f"{name}.py").write_text(textwrap.dedent(text))
    return directory


@pytest.mark.spark  # a Spark of its own (a child process)
def test_the_worker_removes_a_redundant_sort_without_enable_and_enable_wins_in_its_session(tmp_path):
    facts = run_app(tmp_path, "builtin", {"spark.sparkext.rules": SORTS})
    assert facts["plain_sorts"] == 1 and facts["sorts"] == 0 and facts["same_rows"]
    assert facts["accepted"] > 0 and facts["pid"] > 0
    # The session that called enable() runs its own rule (which keeps the sort) ...
    assert facts["enabled_session_sorts"] == 1 and facts["enabled_session_same_rows"]
    # ... and every other session shares the one worker.
    assert facts["other_session_sorts"] == 0 and facts["starts"] == 1
    assert facts["stopped_with_the_context"]


@pytest.mark.spark  # a Spark of its own (a child process)
def test_a_user_rule_module_on_the_worker_path_rewrites_a_plan(tmp_path):
    rules = module(tmp_path / "rules", "team_rules", """
        import sparkext
        from sparkext.expressions import TRUE
        from sparkext.plan import Filter

        @sparkext.rule(matches=(Filter,))
        def drop_always_true_filters(plan):
            return plan.transform_up(
                lambda n: n.child if isinstance(n, Filter) and n.condition == TRUE else n)

        RULES = [drop_always_true_filters]
    """)
    facts = run_app(tmp_path, "user_module", {
        "spark.sparkext.rules": "team_rules:RULES",
        # Catalyst would drop the filter itself: leave it to the user's rule.
        "spark.sql.optimizer.excludedRules": "org.apache.spark.sql.catalyst.optimizer.PruneFilters",
    }, path=(rules,))
    assert facts["plain_top"] == "Filter"
    assert facts["top"] == "Range" and facts["same_rows"] and facts["accepted"] > 0


@pytest.mark.spark  # a Spark of its own (a child process)
def test_a_killed_worker_leaves_rows_right_warns_and_a_new_one_starts(tmp_path):
    facts = run_app(tmp_path, "killed", {"spark.sparkext.rules": SORTS})
    assert facts["after_kill_same_rows"] and facts["after_kill_worker_errors"] == 1
    assert any("exited" in w for w in facts["after_kill_warnings"]), facts
    assert facts["restarted_sorts"] == 0 and facts["restarted_same_rows"] and facts["new_pid"]
    assert "rule worker" in facts["strict_error"] and "exited" in facts["strict_error"]
    assert facts["starts"] == 2


@pytest.mark.spark  # a Spark of its own (a child process)
@pytest.mark.parametrize("case", ["import error", "bad interpreter"])
def test_a_worker_that_cannot_start_is_reported_once_with_its_cause(tmp_path, case):
    broken = module(tmp_path / "rules", "broken_rules", """
        raise RuntimeError("the team's rule module is broken")
    """)
    conf = {"spark.sparkext.rules": "broken_rules:RULES"}
    cause = "the team's rule module is broken"
    if case == "bad interpreter":
        conf = {"spark.sparkext.rules": SORTS, "spark.sparkext.python": str(tmp_path / "no-python")}
        cause = "no-python"
    facts = run_app(tmp_path, "cannot_start", conf, path=(broken,))
    assert facts["same_rows"] and facts["worker_errors"] == 1
    assert any("could not start" in w and cause in w for w in facts["warnings"]), facts
    # Not tried again on the next query (spark.sparkext.cooldownMs): skipped, not failed.
    assert facts["again_same_rows"] and facts["again_worker_errors"] == 1
    assert facts["skipped_worker"] > 0 and facts["starts"] == 0
    assert cause in facts["strict_error"]


@pytest.mark.spark  # a Spark of its own (a child process)
def test_a_worker_whose_rule_hangs_past_the_timeout_leaves_rows_right(tmp_path):
    rules = module(tmp_path / "rules", "slow_rules", """
        import dataclasses
        from sparkext import Batch, FixedPoint, rule

        @rule
        def spins(plan):
            # A new, equal plan every round: never a fixed point.
            return dataclasses.replace(plan)

        BATCHES = [Batch("spin", FixedPoint(10**9), (spins,))]
    """)
    facts = run_app(tmp_path, "hangs", {"spark.sparkext.rules": "slow_rules:BATCHES",
                                        "spark.sparkext.timeoutMs": "1000",
                                        "spark.sparkext.cooldownMs": "0"}, path=(rules,))
    assert facts["same_rows"] and facts["timeouts"] >= 1
    assert any("did not answer within" in w for w in facts["warnings"]), facts
    assert "did not answer within" in facts["strict_error"]


def test_rules_entries_name_batches_rules_or_lists_of_rules():
    from sparkext.rules import BATCHES
    from sparkext.worker import RulesNotFound, load_batches

    assert load_batches("sparkext.rules:BATCHES") == BATCHES
    one, *rest = load_batches("sparkext.rules:ELIMINATE_SORTS, sparkext.rules:BATCHES")
    assert one.rules == (ELIMINATE_SORTS,) and tuple(rest) == BATCHES
    # A list of rules runs as one batch, to a fixed point, as enable(spark, rules) runs it.
    (batch,) = load_batches("tests.test_worker:LISTED")
    assert batch.rules == (PUSH_DOWN_FILTERS, ELIMINATE_SORTS)
    with pytest.raises(RulesNotFound, match="is not 'module:attribute'"):
        load_batches("sparkext.rules")
    with pytest.raises(RulesNotFound, match="has no attribute 'NOPE'"):
        load_batches("sparkext.rules:NOPE")
    with pytest.raises(RulesNotFound, match="names no rules"):
        load_batches(" , ")
