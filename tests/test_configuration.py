"""Configuration as Spark does it, and an ``enable`` that does what it says (issue 19
items 3 and 4).

- ``spark.sparkext.enabled=maybe`` silently turned sparkext off, ``timeoutMs=abc`` became
  10000, ``timeoutMs=-5`` and ``strict=yes`` were taken: every ``spark.sparkext.*`` key is
  now a registered SQL config entry, and Spark refuses a bad value when it is set, naming
  the key. ``SET -v`` lists them; README's table is checked against them.
- A misspelled key (``spark.sparkext.enable``) or an unknown name in ``excludedRules`` was
  ignored without a word: ``enable`` warns, once, listing the known ones.
- ``enable(spark, rules=[mine])`` silently dropped the built-in rules; ``rules=mine`` failed
  with "not iterable"; a rule taking two arguments failed at the first query.
- ``configure()`` on a builder whose session already ran without the extension returned
  that session unchanged.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pyspark.errors import IllegalArgumentException

import sparkext
from sparkext import Rule
from sparkext.plan import LogicalPlan
from sparkext.rules import builtin_batches
from tests.conftest import conf, rules_enabled
from tests.rows import assert_same_rows, collect

ROOT = Path(__file__).resolve().parent.parent

BAD_VALUES = [
    ("spark.sparkext.enabled", "1"),
    ("spark.sparkext.enabled", "yes"),
    ("spark.sparkext.enabled", "maybe"),
    ("spark.sparkext.timeoutMs", "abc"),
    ("spark.sparkext.timeoutMs", "-5"),
    ("spark.sparkext.cooldownMs", "-1"),
    ("spark.sparkext.strict", "yes"),
]


def builtin_names() -> list[str]:
    return list(dict.fromkeys(r.name for b in builtin_batches() for r in b.rules))


def entries(spark) -> list[dict]:
    return json.loads(spark._jvm.io.sparkext.Sparkext.confEntries())


@pytest.mark.parametrize(("key", "value"), BAD_VALUES)
def test_a_bad_value_is_refused_when_set_naming_the_key(spark, key, value):
    before = spark.conf.get(key)
    with pytest.raises(IllegalArgumentException, match=re.escape(key)) as raised:
        spark.conf.set(key, value)
    assert value in str(raised.value)
    with pytest.raises(IllegalArgumentException, match=re.escape(key)):
        spark.sql(f"SET {key}={value}")
    assert spark.conf.get(key) == before


@pytest.mark.parametrize(("key", "value"), [("spark.sparkext.enabled", " FALSE "),
                                            ("spark.sparkext.timeoutMs", "0"),
                                            ("spark.sparkext.cooldownMs", "0")])
def test_good_values_are_taken_as_spark_takes_them(spark, key, value):
    with conf(spark, {key: value}):
        assert spark.conf.get(key) == value


@pytest.mark.parametrize(("settings", "runs"), [
    ({"spark.sparkext.enabled": " FALSE "}, False),
    ({"spark.sparkext.enabled": "False"}, False),
    ({"spark.sparkext.enabled": "false"}, False),
    ({"spark.sparkext.enabled": " TRUE "}, True),
    ({"spark.sparkext.enabled": "true"}, True),
    ({"spark.sparkext.excludedRules": " counting , other"}, False),
    ({"spark.sparkext.excludedRules": "other,counting"}, False),
    ({"spark.sparkext.excludedRules": "other"}, True),
    ({"spark.sparkext.excludedRules": ""}, True),
])
def test_settings_act_as_spark_takes_them_on_every_query(spark, settings, runs):
    """The optimizer reads enabled and excludedRules as set, and converts only values other
    than the plain ones: any spelling Spark accepts acts as Spark reads it, and a change
    takes effect at the next query (the JVM keeps the rules active under the last values)."""
    seen: list[int] = []

    def counting(plan: LogicalPlan) -> LogicalPlan:
        seen.append(1)
        return plan

    with rules_enabled(spark, [Rule("counting", counting)]):
        for _ in range(2):  # the setting and back, twice
            seen.clear()
            with conf(spark, settings):
                spark.range(3).filter("id > 0").collect()
            assert bool(seen) is runs
            seen.clear()
            spark.range(3).filter("id > 0").collect()  # the setting unset again
            assert seen


@pytest.mark.parametrize("reference", [False, True])
def test_catalyst_exclusions_reach_the_rules_that_wait_for_them_at_the_next_query(
        spark, reference):
    """A rule declaring a Catalyst twin runs exactly in the queries during which
    spark.sql.optimizer.excludedRules names it, as Catalyst's optimizer reads the setting
    (a ${...} reference substituted), and the request names it for the rules."""
    seen: list[frozenset] = []

    def twin(plan: LogicalPlan) -> LogicalPlan:
        from sparkext.context import current
        seen.append(current().catalyst_excluded)
        return plan

    rule = Rule("twin", twin, only_when_catalyst_excludes=("ColumnPruning",))
    key = "spark.sql.optimizer.excludedRules"
    value = "org.apache.spark.sql.catalyst.optimizer.ColumnPruning"
    extra = {"sparkext.test.excluded": value} if reference else {}
    with rules_enabled(spark, [rule]):
        for _ in range(2):
            seen.clear()
            spark.range(3).select("id").collect()
            assert not seen
            with conf(spark, {**extra, key: "${sparkext.test.excluded}" if reference else value}):
                spark.range(3).select("id").collect()
            assert seen and all(s == frozenset({"ColumnPruning"}) for s in seen)


def test_set_v_lists_every_key_with_its_default_and_doc(spark):
    listed = {r["key"]: r for r in spark.sql("SET -v").collect()
              if r["key"].startswith("spark.sparkext.")}
    guards = [f"spark.sparkext.guards.{k}" for k in (
        "cartesian.bytes", "cartesian.mode", "maxScan.bytes", "maxScan.files", "maxScan.mode",
        "maxScan.partitions", "partitionFilter.allow", "partitionFilter.mode",
        "partitionFilter.tables", "timeoutMs")]
    assert sorted(listed) == sorted(e["key"] for e in entries(spark)) == [
        "spark.sparkext.cooldownMs", "spark.sparkext.enabled", "spark.sparkext.excludedRules",
        "spark.sparkext.factsTimeoutMs", "spark.sparkext.guards", *guards,
        "spark.sparkext.python", "spark.sparkext.rules", "spark.sparkext.strict",
        "spark.sparkext.timeoutMs"]
    for e in entries(spark):
        assert listed[e["key"]]["meaning"] == e["doc"] and e["doc"]


def readme_table() -> dict[str, str]:
    """README's configuration table: key -> default ("" when the cell is empty)."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(spark\.sparkext\.[^`]+)` \|([^|]*)\|", section, re.M)
    return {key: default.strip().strip("`") for key, default in rows}


def test_the_readme_table_lists_exactly_the_registered_entries_and_defaults(spark):
    assert readme_table() == {e["key"]: e["default"] for e in entries(spark)}


def test_an_unknown_key_and_an_unknown_excluded_rule_warn_once_listing_the_known(spark, caplog):
    caplog.set_level(logging.WARNING, logger="sparkext")
    settings = {"spark.sparkext.enable": "false", "spark.sparkext.excludedRules": "no_such_rule"}
    with conf(spark, settings):
        sparkext.enable(spark)
        warned = [r.getMessage() for r in caplog.records if r.name == "sparkext"]
        caplog.clear()
        sparkext.enable(spark)
        again = [r.getMessage() for r in caplog.records if r.name == "sparkext"]
    key = [w for w in warned if "spark.sparkext.enable " in w]
    assert len(key) == 1 and all(e["key"] in key[0] for e in entries(spark))
    rule = [w for w in warned if "'no_such_rule'" in w]
    assert len(rule) == 1 and all(n in rule[0] for n in builtin_names())
    assert again == []


def test_enable_runs_the_builtin_rules_then_the_users(spark, tables):
    seen: list[LogicalPlan] = []

    def mine(plan: LogicalPlan) -> LogicalPlan:
        seen.append(plan)
        return plan

    query = "SELECT id, name FROM people WHERE age > 30 ORDER BY id"
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        expected = collect(spark.sql(query))
    with rules_enabled(spark, [mine], builtin=True) as handle:
        assert [r.name for r in handle.rules] == [*builtin_names(), "mine"]
        assert_same_rows(expected, collect(spark.sql(query)), ordered=True)
    assert seen, "the user's rule never ran beside the built-in ones"


def test_rules_without_builtin_run_alone_and_rules_alone_default_to_with_builtin(spark):
    def mine(plan: LogicalPlan) -> LogicalPlan:
        return plan

    try:
        assert [r.name for r in sparkext.enable(spark, [mine], builtin=False).rules] == ["mine"]
        assert [r.name for r in sparkext.enable(spark, [mine]).rules][-1] == "mine"
        assert len(sparkext.enable(spark, [mine]).rules) == len(builtin_names()) + 1
        with pytest.raises(ValueError, match="no rules to run"):
            sparkext.enable(spark, builtin=False)
    finally:
        sparkext.enable(spark)


@pytest.mark.parametrize("single", ["function", "Rule"])
def test_a_single_rule_is_accepted_where_a_list_is(spark, single):
    def mine(plan: LogicalPlan) -> LogicalPlan:
        return plan

    given = mine if single == "function" else Rule("mine", mine)
    with rules_enabled(spark, given) as handle:
        assert [r.name for r in handle.rules] == ["mine"]


def two_arguments(plan: LogicalPlan, other: LogicalPlan) -> LogicalPlan:
    return plan


@pytest.mark.parametrize("rule", [two_arguments, lambda: None, Rule("kw", lambda plan, *, k: plan)])
def test_a_rule_that_does_not_take_one_plan_is_refused_at_enable(spark, rule):
    name = getattr(rule, "name", getattr(rule, "__name__", ""))
    with pytest.raises(TypeError, match=rf"rule '{re.escape(name)}' \(defined at "
                                        r"tests\.test_configuration:\d+\) must take exactly one"):
        sparkext.enable(spark, rule, builtin=False)
    assert sparkext.metrics(spark) is not None  # the session still runs its rules
    sparkext.enable(spark)


def test_enable_logs_one_info_line_naming_the_rules_and_positions(spark, caplog):
    def mine(plan: LogicalPlan) -> LogicalPlan:
        return plan

    late = Rule("late", mine, position="fixed_point")
    caplog.set_level(logging.INFO, logger="sparkext")
    try:
        sparkext.enable(spark, [mine, late])
    finally:
        sparkext.enable(spark)
    lines = [r.getMessage() for r in caplog.records
             if r.name == "sparkext" and r.levelno == logging.INFO]
    once = ", ".join(f"{i} {n}" for i, n in enumerate([*builtin_names(), "mine"], 1))
    assert lines[0] == (f"sparkext: enabled {len(builtin_names()) + 2} rules: once per query: "
                        f"{once}; in Catalyst's fixed-point batches: 1 late")
    assert len(lines) == 2  # one per enable() call


CONFIGURE_AFTER_A_PLAIN_SESSION = textwrap.dedent("""
    import json, sparkext
    from pyspark.sql import SparkSession

    out = {}
    builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    plain = builder.config("spark.jars", sparkext.jar_path()).getOrCreate()
    try:
        sparkext.configure(SparkSession.builder)
    except sparkext.SparkextError as e:
        out["refused"] = str(e)
    plain.stop()
    # A bad value given at start: the session refuses it at its first use, here enable().
    try:
        spark = sparkext.configure(
            SparkSession.builder.config("spark.sparkext.timeoutMs", "-5")).getOrCreate()
        sparkext.enable(spark)
    except Exception as e:
        out["bad_at_start"] = type(e).__name__ + ": " + str(e)
    print(json.dumps(out))
""")


@pytest.mark.spark  # a Spark of its own (a child process)
def test_configure_on_a_builder_whose_session_runs_without_the_extension_says_stop_it():
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", CONFIGURE_AFTER_A_PLAIN_SESSION],
                         capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-4000:]
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    assert "stop that session first (spark.stop())" in facts["refused"]
    assert facts["bad_at_start"].startswith("IllegalArgumentException")
    assert "spark.sparkext.timeoutMs" in facts["bad_at_start"]
