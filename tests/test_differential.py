"""Differential runs: every corpus pipeline and TPC-H query returns the same rows with
sparkext's rules standing in for Catalyst's; the rules leave Catalyst's own optimized
plans alone; and together with Catalyst's rules they converge.

  N  plain Spark
  S  Catalyst's pushdown/pruning/sort rules excluded, sparkext's built-in rules on
  B  both: sparkext on, nothing excluded
"""

from __future__ import annotations

import pytest

import sparkext
from sparkext.catalyst import excluded_rules_conf
from sparkext.optimizer import Rule, RuleExecutor
from sparkext.rules import builtin_batches
from tests.conftest import conf, rules_enabled, without_facts
from tests.corpus.pipelines import PIPELINES
from tests.rows import assert_same_rows, collect
from tests.tpch import QUERY_NAMES

N = {"spark.sparkext.enabled": "false"}
S = {"spark.sparkext.enabled": "true", **excluded_rules_conf()}
B = {"spark.sparkext.enabled": "true"}
CASES = sorted(PIPELINES) + [f"tpch_{q}" for q in QUERY_NAMES]


@pytest.fixture(scope="module")
def frame(spark, tables, tpch):
    sparkext.enable(spark)

    def build(name: str):
        if name.startswith("tpch_"):
            return spark.sql(tpch[name[len("tpch_"):]])
        return PIPELINES[name](spark)
    return build


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_rows_are_the_same_with_sparkexts_rules_instead_of_catalysts(spark, frame, name):
    with conf(spark, N):
        expected = collect(frame(name))
    with conf(spark, S):
        sparkext.reset_metrics(spark)
        actual = collect(frame(name))
        m = sparkext.metrics(spark)
    assert_same_rows(expected, actual)
    assert m["rejected"] == 0 and m["python_errors"] == 0 and m["timeouts"] == 0, m


def observer(seen: list):
    """A rule that runs the built-in rules on the plan it is given, records what they would
    do, and hands the plan back untouched. (Not the statistics rules: they read facts the
    plan is given without, and answer from the files what Catalyst never does.)"""
    executor = RuleExecutor(without_facts(builtin_batches()))

    def observe(plan):
        result = executor.execute(plan)
        seen.append((plan, result))
        return plan
    return Rule("observe", observe)


@pytest.mark.parametrize("name", CASES)
def test_the_rules_change_nothing_in_a_plan_catalyst_optimized(spark, frame, name):
    # The plan Catalyst's own rules produced, where sparkext runs (once per query, before
    # cost-based optimization). Later batches rewrite subqueries into joins and extract
    # Python UDFs; sparkext never sees those, so they are not its fixed points to reach.
    seen: list = []
    with conf(spark, N), rules_enabled(spark, [observer(seen)]):
        spark.conf.set("spark.sparkext.enabled", "true")
        frame(name)._jdf.queryExecution().optimizedPlan()
    assert seen, "the built-in rules were never given the plan"
    for plan, result in seen:
        assert result.plan is plan, (
            f"{result.changed_by} changed Catalyst's plan:\n{plan.tree_string()}\n---\n"
            f"{result.plan.tree_string()}")


@pytest.mark.parametrize("name", CASES)
def test_no_catalyst_batch_runs_out_of_iterations_with_both_rule_sets(spark, frame, name):
    # planChangeValidation is on in the test session: an invalid plan would raise here.
    with conf(spark, B):
        df = frame(name)
        qe = df._jdf.queryExecution()
        qe.optimizedPlan()
        rules = qe.tracker().rules()
        worst, invocations = "", 0
        it = rules.iterator()
        while it.hasNext():
            entry = it.next()
            n = entry._2().numInvocations()
            if n > invocations:
                worst, invocations = entry._1(), n
    # A fixed-point batch stops at spark.sql.optimizer.maxIterations (100) rounds; a rule
    # in three such batches that converge in a few rounds each is invoked far fewer times.
    assert invocations < 100, f"{worst} was invoked {invocations} times"


# Where Catalyst 4.3's own filter inference loses rows, sparkext's must not. Plain Spark
# returns no row here: from `a = b` it restates `CAST(a AS STRING) = '-0.0'` on b, false
# for b = 0.0 although -0.0 = 0.0. The right answer is what Spark returns with
# InferFiltersFromConstraints excluded.
def test_no_rows_lost_restating_predicates_across_floating_point_equalities(spark, frame):
    def query():
        return spark.createDataFrame([(-0.0, 0.0), (1.0, 2.0)], "a double, b double") \
            .where("a = b AND CAST(a AS STRING) = '-0.0'")
    no_inference = {"spark.sparkext.enabled": "false",
                    "spark.sql.optimizer.excludedRules":
                        "org.apache.spark.sql.catalyst.optimizer.InferFiltersFromConstraints"}
    with conf(spark, no_inference):
        expected = collect(query())
    with conf(spark, N):
        plain = collect(query())
    with conf(spark, S):
        sparkext.reset_metrics(spark)
        actual = collect(query())
        accepted = sparkext.metrics(spark)["accepted"]
    assert accepted > 0, "the built-in rules did not rewrite the query"
    assert len(expected) == 1
    assert_same_rows(expected, actual)
    print(f"plain Spark returns {len(plain)} of the {len(expected)} row(s)")
