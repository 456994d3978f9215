"""The bridge in a real session: rewrites take effect, faults never break a query, and the
switches and metrics behave as documented."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import sparkext
import sparkext.bridge
from examples.toy_rules import swap_filter_below_project
from sparkext import Batch, Once, rule
from sparkext._tree import mirror_spec
from sparkext.catalyst import excluded_rules_conf
from sparkext.channel import channel
from sparkext.expressions import (
    Alias,
    AttributeReference,
    Cast,
    GreaterThan,
    IsNotNull,
    Literal,
)
from sparkext.plan import Filter, Project, Window
from sparkext.testing.rules import rebuild_everything
from sparkext.types import INT, STRING
from tests.conftest import apply_rules, conf, jvm_nodes, jvm_seq, rules_enabled
from tests.rows import assert_same_rows, collect

NOT_STRICT = {"spark.sparkext.strict": "false"}


def filtered_projection(spark):
    return (spark.table("people")
            .select("id", "name", (F.col("age") * 2).alias("age2"))
            .where("id > 2"))


def expected_rows(spark, build):
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        return collect(build(spark))


def top_two(jplan) -> tuple[str, str]:
    return jplan.getClass().getSimpleName(), jplan.children().apply(0).getClass().getSimpleName()


# -- a real rewrite ------------------------------------------------------------------------


def test_a_python_rule_changes_the_optimized_plan_and_rows_stay_right(spark, tables):
    expected = expected_rows(spark, filtered_projection)
    with conf(spark, excluded_rules_conf()):
        with rules_enabled(spark, []):
            before = filtered_projection(spark)._jdf.queryExecution().optimizedPlan()
        with rules_enabled(spark, [swap_filter_below_project]):
            sparkext.reset_metrics(spark)
            df = filtered_projection(spark)
            after = df._jdf.queryExecution().optimizedPlan()
            assert_same_rows(expected, collect(df))
            assert sparkext.metrics(spark)["accepted"] >= 1
    assert top_two(before) == ("Filter", "Project")
    assert top_two(after) == ("Project", "Filter")


def test_a_rule_at_the_fixed_point_position_interleaves_with_catalyst(spark, tables):
    swap = sparkext.Rule("swap_in_fixed_point", swap_filter_below_project.fn, (Filter,),
                         position="fixed_point")
    expected = expected_rows(spark, filtered_projection)
    with conf(spark, excluded_rules_conf()), rules_enabled(spark, [swap]):
        sparkext.reset_metrics(spark)
        df = filtered_projection(spark)
        assert top_two(df._jdf.queryExecution().optimizedPlan()) == ("Project", "Filter")
        assert_same_rows(expected, collect(df))
        assert sparkext.metrics(spark)["accepted"] >= 1


def test_the_plan_the_bridge_returned_is_not_sent_again(spark, tables):
    calls: list = []
    late = sparkext.Rule("late", counting_rule(calls).fn, position="fixed_point")
    # With Catalyst's pushdown off, the plan reaches the second operator-optimization
    # batch exactly as the bridge left it at the end of the first.
    with conf(spark, excluded_rules_conf()), rules_enabled(spark, [late]):
        sparkext.reset_metrics(spark)
        filtered_projection(spark)._jdf.queryExecution().optimizedPlan()
        m = sparkext.metrics(spark)
    assert m["skipped_same_plan"] >= 1 and len(calls) == m["calls"], m


@rule
def filters_on_a_new_column(plan):
    """Adds a computed column (a new Alias: its id comes from the JVM), filters on it and
    drops it again; the Cast to string needs a time zone, which Python does not give."""
    if not isinstance(plan, Project) or any(a.name == "ts_text" for a in plan.child.output):
        return plan
    ts = next(a for a in plan.output if a.name == "ts")
    text = Alias(Cast(ts, STRING), "ts_text")
    return Project(plan.output, Filter(IsNotNull(text.to_attribute()),
                                       Project((*plan.output, text), plan)))


def test_a_new_column_gets_a_fresh_id_from_the_jvm_and_the_session_time_zone(spark, tables):
    def query(s):
        return s.table("events").where("host = 'h1'").select("eid", "ts")
    expected = expected_rows(spark, query)
    with rules_enabled(spark, [filters_on_a_new_column]):
        sparkext.reset_metrics(spark)
        df = query(spark)
        assert_same_rows(expected, collect(df))
        assert sparkext.metrics(spark)["accepted"] >= 1
        # What the bridge itself returns (Catalyst's later batches fold the new column away).
        rebuilt = apply_rules(spark, df._jdf.queryExecution().analyzed())
    aliases = [e for node in jvm_nodes(rebuilt) for e in _named(node) if e.name() == "ts_text"]
    assert len(aliases) == 1, rebuilt.toString()
    new_id = aliases[0].exprId().id()
    taken = {a.exprId().id() for node in jvm_nodes(rebuilt) for a in jvm_seq(node.output())
             if a.name() != "ts_text"}
    assert new_id not in taken, (new_id, taken)
    cast = aliases[0].child()
    assert cast.timeZoneId().get() == spark.conf.get("spark.sql.session.timeZone")


def _named(node):
    if node.getClass().getSimpleName() != "Project":
        return []
    return [e for e in jvm_seq(node.projectList()) if e.getClass().getSimpleName() == "Alias"]


# -- faults: the query runs on, one warning, one counter ------------------------------------


@rule
def raises(plan):
    raise ValueError("boom")


@rule
def drops_a_column(plan):
    return Project(plan.output[:-1], plan) if len(plan.output) > 1 else plan


@rule
def returns_a_string(plan):
    return "not a plan"


@rule
def changes_a_type(plan):
    # Same ids and names, another type: only the JVM can see this one.
    first, *rest = plan.output
    if first.data_type == STRING:
        return plan
    return Project((Alias(Cast(first, STRING), first.name, first.expr_id), *rest), plan)


UNFIT = Literal(2**40, INT)
GHOST = AttributeReference("ghost", INT, True, None, 987654321)


@rule
def writes_an_int_that_does_not_fit(plan):
    # INT cannot hold 2**40: sent on, Spark would read another constant.
    if isinstance(plan, Filter) and UNFIT in plan.condition.children:
        return plan
    return Filter(GreaterThan(UNFIT, Literal(0, INT)), plan)


@rule
def reads_a_column_nobody_produces(plan):
    # Same output, but the filter reads an attribute no child has: only the JVM's
    # integrity check (no dangling references) can see it.
    if isinstance(plan, Filter) and GHOST.expr_id in plan.condition.references:
        return plan
    return Filter(IsNotNull(GHOST), plan)


FAULTS = [
    (raises, "python_errors", "rule 'raises' failed: ValueError: boom"),
    (drops_a_column, "python_errors", "rule 'drops_a_column' failed"),
    (returns_a_string, "python_errors", "returned str, not a plan node"),
    (writes_an_int_that_does_not_fit, "python_errors", "is not a valid integer value"),
    (changes_a_type, "rejected", "rule(s) changes_a_type was rejected"),
    (reads_a_column_nobody_produces, "rejected",
     "rule(s) reads_a_column_nobody_produces was rejected"),
]


@pytest.mark.parametrize("bad_rule,counter,message", FAULTS, ids=[f[0].name for f in FAULTS])
def test_a_broken_rule_leaves_the_plan_unchanged_with_one_warning(spark, tables, bad_rule,
                                                                  counter, message):
    expected = expected_rows(spark, filtered_projection)
    with conf(spark, NOT_STRICT), rules_enabled(spark, [bad_rule]):
        sparkext.reset_metrics(spark)
        assert_same_rows(expected, collect(filtered_projection(spark)))
        m = sparkext.metrics(spark)
    assert m[counter] == 1, m
    assert m["accepted"] == 0
    assert len(m["warnings"]) == 1 and message in m["warnings"][0], m["warnings"]


@pytest.mark.parametrize("bad_rule,counter,message", FAULTS, ids=[f[0].name for f in FAULTS])
def test_a_broken_rule_raises_a_clear_error_in_strict_mode(spark, tables, bad_rule, counter,
                                                           message):
    with rules_enabled(spark, [bad_rule]):
        with pytest.raises(Py4JJavaError) as err:
            filtered_projection(spark).collect()
    assert "SparkextException" in str(err.value) and message in str(err.value)


def blocking_rule(release: threading.Event):
    @rule
    def waits_forever(plan):
        release.wait(60)
        return plan
    return waits_forever


def test_a_rule_slower_than_the_timeout_is_abandoned(spark, tables):
    expected = expected_rows(spark, filtered_projection)
    release = threading.Event()
    try:
        with conf(spark, {**NOT_STRICT, "spark.sparkext.timeoutMs": "200"}), \
                rules_enabled(spark, [blocking_rule(release)]):
            sparkext.reset_metrics(spark)
            assert_same_rows(expected, collect(filtered_projection(spark)))
            m = sparkext.metrics(spark)
    finally:
        release.set()
    assert m["timeouts"] == 1, m
    assert "rule 'waits_forever' was running" in m["warnings"][0]


def test_a_slow_rule_raises_in_strict_mode(spark, tables):
    release = threading.Event()
    try:
        with conf(spark, {"spark.sparkext.timeoutMs": "200"}), \
                rules_enabled(spark, [blocking_rule(release)]):
            with pytest.raises(Py4JJavaError, match="did not answer within"):
                filtered_projection(spark).collect()
    finally:
        release.set()


def test_after_a_timeout_the_next_call_gets_its_own_answer(spark, tables):
    # The abandoned call's connection is closed, so its late answer cannot be read as the
    # answer to a later call.
    expected = expected_rows(spark, filtered_projection)
    release = threading.Event()
    try:
        with conf(spark, {**NOT_STRICT, **excluded_rules_conf(),
                          "spark.sparkext.timeoutMs": "200"}):
            with rules_enabled(spark, [blocking_rule(release)]):
                collect(filtered_projection(spark))
            release.set()
            # (a long timeout from here: this call must not time out, however busy the
            # machine is)
            with conf(spark, {"spark.sparkext.timeoutMs": "60000"}), \
                    rules_enabled(spark, [swap_filter_below_project]):
                sparkext.reset_metrics(spark)
                df = filtered_projection(spark)
                assert_same_rows(expected, collect(df))
                top = top_two(df._jdf.queryExecution().optimizedPlan())
                m = sparkext.metrics(spark)
    finally:
        release.set()
    assert top == ("Project", "Filter")
    assert m["accepted"] >= 1 and m["timeouts"] == 0 and m["warnings"] == [], m


def test_a_new_registration_reuses_the_connections_of_the_last(spark, tables):
    with rules_enabled(spark, [counting_rule([])]):
        filtered_projection(spark).collect()
    accepted = channel().accepted
    calls: list[list] = [[], [], []]
    for each in calls:
        with rules_enabled(spark, [counting_rule(each)]):
            filtered_projection(spark).collect()
    assert all(each for each in calls) and channel().accepted == accepted


def test_python_that_cannot_be_reached_leaves_the_plan_unchanged(spark, tables):
    # A registration whose channel leads nowhere: what the JVM sees when Python is gone.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    expected = expected_rows(spark, filtered_projection)
    spec = {"handshake": sparkext.wire.handshake(),
            "channel": {"address": f"tcp:127.0.0.1:{dead_port}", "secret": "00" * 32, "key": 1},
            "rules": [{"name": "unreachable", "position": "once", "patterns": []}],
            "mirror": mirror_spec()}
    registry = spark._jvm.io.sparkext.Sparkext
    bridge = sparkext.bridge.RuleBridge({})
    try:
        with conf(spark, NOT_STRICT):
            registry.register(spark._jsparkSession, bridge, json.dumps(spec))
            sparkext.reset_metrics(spark)
            assert_same_rows(expected, collect(filtered_projection(spark)))
            m = sparkext.metrics(spark)
        with pytest.raises(Py4JJavaError, match="is the Python driver alive"):
            filtered_projection(spark).collect()
    finally:
        sparkext.enable(spark)
    assert m["python_errors"] == 1 and m["accepted"] == 0, m
    assert len(m["warnings"]) == 1 and "is the Python driver alive" in m["warnings"][0]


# -- concurrency ----------------------------------------------------------------------------


def test_eight_threads_run_queries_through_the_bridge_at_once(spark, tables):
    queries = [
        lambda s: filtered_projection(s),
        lambda s: s.table("people").groupBy("dept_id").agg(F.count("*").alias("n")),
        lambda s: s.table("events").where("host = 'h1'").select("eid", "ts"),
        lambda s: s.table("people").join(s.table("depts"), "dept_id").where("age > 20"),
    ]
    expected = [expected_rows(spark, q) for q in queries]
    with conf(spark, excluded_rules_conf()), rules_enabled(spark, [swap_filter_below_project]):
        sparkext.reset_metrics(spark)

        def work(i: int) -> bool:
            for round_ in range(3):
                k = (i + round_) % len(queries)
                assert_same_rows(expected[k], collect(queries[k](spark)))
            return True

        with ThreadPoolExecutor(max_workers=8) as pool:
            assert all(pool.map(work, range(8)))
        m = sparkext.metrics(spark)
    assert m["calls"] + m["skipped"] == 24 and m["calls"] >= 18, m
    assert m["python_errors"] == 0 and m["rejected"] == 0 and m["accepted"] >= 1, m


# -- deep plans -----------------------------------------------------------------------------


def column_updated_in_a_loop(spark, times=120):
    # The everyday withColumn loop: once Catalyst collapses the projections, one expression
    # 3 x `times` levels deep (Python's default recursion limit stops near 250 levels).
    df = spark.table("people").select("id", F.coalesce("age", F.lit(0)).alias("v"))
    for _ in range(times):
        df = df.withColumn("v", F.col("v") * 3 % 1000 + F.col("id"))
    return df.where("v > 10")


def test_a_plan_nested_deeper_than_the_recursion_limit_is_rebuilt_and_runs(spark, tables):
    expected = expected_rows(spark, column_updated_in_a_loop)
    limit = sys.getrecursionlimit()
    with rules_enabled(spark, batches=[Batch("rebuild", Once(), (rebuild_everything,))]):
        sparkext.reset_metrics(spark)
        assert_same_rows(expected, collect(column_updated_in_a_loop(spark)))
        m = sparkext.metrics(spark)
    assert m["accepted"] >= 1 and m["python_errors"] == 0, m
    assert sys.getrecursionlimit() == limit  # raised only while the deep call ran


# -- switches -------------------------------------------------------------------------------


def counting_rule(calls: list):
    @rule
    def counts(plan):
        calls.append(1)
        return plan
    return counts


def test_the_kill_switch_turns_everything_off(spark, tables):
    calls: list = []
    with rules_enabled(spark, [counting_rule(calls)]):
        with conf(spark, {"spark.sparkext.enabled": "false"}):
            sparkext.reset_metrics(spark)
            filtered_projection(spark).collect()
            m = sparkext.metrics(spark)
        assert calls == [] and m["calls"] == 0 and m["skipped_disabled"] >= 1
        filtered_projection(spark).collect()
        assert calls


def test_excluded_rules_are_not_run(spark, tables):
    calls: list = []
    with rules_enabled(spark, [counting_rule(calls)]):
        with conf(spark, {"spark.sparkext.excludedRules": "other, counts"}):
            sparkext.reset_metrics(spark)
            filtered_projection(spark).collect()
            assert sparkext.metrics(spark)["skipped_excluded"] >= 1
    assert calls == []


def test_disable_removes_the_rules(spark, tables):
    calls: list = []
    handle = sparkext.enable(spark, [counting_rule(calls)], builtin=False)
    try:
        handle.disable()
        sparkext.reset_metrics(spark)
        filtered_projection(spark).collect()
        assert calls == [] and sparkext.metrics(spark)["calls"] == 0
    finally:
        sparkext.enable(spark)


def test_a_plan_without_the_nodes_a_rule_matches_is_not_sent(spark, tables):
    calls: list = []
    windows_only = sparkext.Rule("windows_only", counting_rule(calls).fn, (Window,))
    with rules_enabled(spark, [windows_only]):
        sparkext.reset_metrics(spark)
        filtered_projection(spark).collect()
        m = sparkext.metrics(spark)
    assert calls == [] and m["skipped_no_pattern"] >= 1 and m["calls"] == 0


# -- activation -----------------------------------------------------------------------------


def test_configure_appends_to_existing_jars_and_extensions():
    builder = SparkSession.Builder()
    builder.config("spark.jars", "/opt/delta.jar").config(
        "spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
    sparkext.configure(builder)
    assert builder._options["spark.jars"] == f"/opt/delta.jar,{sparkext.jar_path()}"
    assert builder._options["spark.sql.extensions"] == (
        "io.delta.sql.DeltaSparkSessionExtension,io.sparkext.SparkextExtensions")
    sparkext.configure(builder)  # idempotent
    assert builder._options["spark.jars"].count(os.path.basename(sparkext.jar_path())) == 1


CONFIGURE_IN_A_FRESH_PROCESS = """
import json, sparkext
from pyspark.sql import SparkSession
print(json.dumps(sparkext.configure(SparkSession.builder)._options))
"""


@pytest.mark.parametrize("submit_args,extensions,jars", [
    (None, "com.example.FromDefaults", "/opt/from-defaults.jar"),
    ("--conf spark.sql.extensions=com.example.FromArgs --jars /opt/a.jar,/opt/b.jar "
     "pyspark-shell", "com.example.FromArgs", "/opt/a.jar,/opt/b.jar"),
], ids=["spark-defaults.conf", "PYSPARK_SUBMIT_ARGS"])
def test_configure_appends_to_what_the_jvm_will_be_launched_with(tmp_path, submit_args,
                                                                  extensions, jars):
    # No JVM yet (a plain `python app.py`): the builder's values would replace these.
    (tmp_path / "spark-defaults.conf").write_text(
        "# defaults\nspark.sql.extensions  com.example.FromDefaults\n"
        "spark.jars=/opt/from-defaults.jar\n")
    env = {**os.environ, "SPARK_CONF_DIR": str(tmp_path)}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    if submit_args:
        env["PYSPARK_SUBMIT_ARGS"] = submit_args
    out = subprocess.run([sys.executable, "-c", CONFIGURE_IN_A_FRESH_PROCESS], env=env,
                         capture_output=True, text=True, check=True).stdout
    options = json.loads(out.strip().splitlines()[-1])
    assert options["spark.sql.extensions"] == f"{extensions},{sparkext.EXTENSION_CLASS}"
    assert options["spark.jars"] == f"{jars},{sparkext.jar_path()}"


def test_enable_explains_what_to_do_without_a_classic_session():
    # A real Spark Connect session gets its own advice (tests/test_connect.py).
    class NotASession:
        pass

    with pytest.raises(sparkext.SparkextError, match="classic SparkSession with a JVM driver"):
        sparkext.enable(NotASession(), [])


def test_metrics_are_readable_from_python(spark, tables):
    with rules_enabled(spark, [counting_rule([])]):
        sparkext.reset_metrics(spark)
        filtered_projection(spark).collect()
        m = sparkext.metrics(spark)
    for key in ("calls", "skipped", "accepted", "unchanged", "rejected", "python_errors",
                "timeouts", "encode_nanos", "python_nanos", "rebuild_nanos", "validate_nanos",
                "rules"):
        assert key in m
    assert m["calls"] + m["skipped"] >= 1
