"""What ``enable`` refuses, and how often a broken rule is reported.

- Two different rules under one name were accepted when they sat in one position: the
  executor kept one, the JVM's tree-pattern skip used the other's ``matches``, and a plan
  the second rule should have seen was skipped. ``enable`` refuses them, naming where each
  was defined.
- A broken rule warns once per query, not once per optimizer call: a query with two
  scalar subqueries, an IN and an EXISTS makes several calls, each counted in the
  metrics, and one warning.
"""

from __future__ import annotations

import pytest

import sparkext
from sparkext import Batch, FixedPoint, Once, Rule
from sparkext.plan import Aggregate, Filter
from tests.conftest import conf, rules_enabled
from tests.rows import assert_same_rows, collect


def keep(plan):
    return plan


def also_keep(plan):
    return plan


def test_two_rules_with_one_name_and_different_matches_are_refused(spark):
    one = Rule("dup", keep, matches=(Filter,))
    other = Rule("dup", also_keep, matches=(Aggregate,))
    with pytest.raises(ValueError, match=r"named 'dup'.*test_registration:\d+.*test_registration:\d+"):
        sparkext.enable(spark, [one, other])
    with pytest.raises(ValueError, match="named 'dup'"):
        sparkext.enable(spark, batches=[Batch("a", Once(), (one,)), Batch("b", FixedPoint(3), (other,))])
    sparkext.enable(spark)


def test_one_rule_in_two_batches_is_not_a_duplicate(spark):
    rule = Rule("twice", keep, matches=(Filter,))
    with rules_enabled(spark, batches=[Batch("a", Once(), (rule,)), Batch("b", Once(), (rule,))]) as on:
        assert [r.name for r in on.rules] == ["twice"]


def raises(plan):
    raise ValueError("boom")


# scalar, IN and (correlated) EXISTS subqueries: several optimizer calls, one query
SUBQUERIES = """
    SELECT * FROM numbers
    WHERE v > (SELECT min(v) FROM numbers)
      AND v < (SELECT max(v) FROM numbers)
      AND k IN (SELECT k FROM numbers WHERE v > 2)
      AND EXISTS (SELECT 1 FROM numbers n2 WHERE n2.v = numbers.v + 1)
"""


@pytest.fixture
def jvm_warnings(spark):
    """The lines the JVM's bridge logs, captured by a log4j appender (the test session
    logs only errors, so the logger is set to WARN for the test)."""
    jvm = spark._jvm
    log4j = jvm.org.apache.logging.log4j
    name = "io.sparkext.PythonRules"
    configurator = log4j.core.config.Configurator
    context = log4j.LogManager.getContext(False)
    before = context.getLogger(name).getLevel()
    configurator.setLevel(name, log4j.Level.WARN)
    writer = jvm.java.io.StringWriter()
    appender = log4j.core.appender.WriterAppender.createAppender(
        None, None, writer, "sparkext-test-warnings", False, True)
    appender.start()
    logger = context.getConfiguration().getLoggerConfig(name)
    logger.addAppender(appender, None, None)
    context.updateLoggers()
    yield lambda: [line for line in writer.toString().splitlines() if line]
    logger.removeAppender("sparkext-test-warnings")
    appender.stop()
    configurator.setLevel(name, before)


def test_a_raising_rule_warns_once_per_query_and_counts_every_call(spark, jvm_warnings):
    spark.range(12).selectExpr("id % 3 AS k", "id AS v").createOrReplaceTempView("numbers")
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        expected = collect(spark.sql(SUBQUERIES))
    with conf(spark, {"spark.sparkext.strict": "false"}), rules_enabled(spark, [raises]):
        sparkext.reset_metrics(spark)
        assert_same_rows(expected, collect(spark.sql(SUBQUERIES)))
        m = sparkext.metrics(spark)
        assert m["python_errors"] == m["calls"] >= 4, m
        assert len(jvm_warnings()) == 1 and "boom" in jvm_warnings()[0], jvm_warnings()
        assert m["warnings"] == jvm_warnings()
        # A second query warns again.
        collect(spark.sql(SUBQUERIES))
        assert len(jvm_warnings()) == 2
