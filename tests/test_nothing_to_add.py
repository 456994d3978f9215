"""The built-in rules that duplicate Catalyst rules have nothing to add while those are on.

Each built-in rule names the Catalyst rules it duplicates
(``Rule.only_when_catalyst_excludes``) and is skipped while all of them are active: with
nothing excluded, ``sparkext.enable(spark)`` runs only the ordering rules and the
statistics rules (which duplicate none), and the JVM skips the call for a plan none of
their pre-checks passes. The claim behind the skip is checked here on
every plan sparkext is given (subquery plans included) for TPC-H, the TPC-DS queries of
the plan-stability suite and the corpus: the skipped rules, run anyway, change nothing
the declared set does not.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

import sparkext
from sparkext.optimizer import Batch, Rule, RuleExecutor
from sparkext.plan import LogicalPlan
from sparkext.rules import BATCHES, PRUNE_SUBQUERY_INPUTS, builtin_batches
from sparkext.testing.catalog import create_empty_tables
from tests.conftest import conf, rules_enabled, without_facts
from tests.corpus.pipelines import PIPELINES
from tests.tpch import QUERY_NAMES

TPCDS_DIR = Path(__file__).parent / "tpcds"
TPCDS_QUERIES = sorted(p.stem for p in (TPCDS_DIR / "queries").glob("q*.sql"))
#: nothing excluded, sparkext on: the session a user gets from ``enable(spark)``
ONTOP = {"spark.sparkext.enabled": "true", "spark.sql.optimizer.excludedRules": ""}


def run_anyway(batches: tuple[Batch, ...]) -> tuple[Batch, ...]:
    """The batches as they ran before rules declared what they duplicate: every rule runs,
    except prune_subquery_inputs, which never ran with Catalyst's ColumnPruning on."""
    def undeclared(r: Rule) -> Rule:
        if r is PRUNE_SUBQUERY_INPUTS:
            return r
        return dataclasses.replace(r, only_when_catalyst_excludes=())
    return tuple(Batch(b.name, b.strategy, tuple(undeclared(r) for r in b.rules))
                 for b in batches)


def observer(seen: list[LogicalPlan]) -> Rule:
    """A rule that records every plan it is given and hands it back untouched."""
    def observe(plan: LogicalPlan) -> LogicalPlan:
        seen.append(plan)
        return plan
    return Rule("observe", observe)


def plans_given_to_sparkext(spark: SparkSession, df: Callable[[], DataFrame]
                            ) -> list[LogicalPlan]:
    seen: list[LogicalPlan] = []
    with conf(spark, ONTOP), rules_enabled(spark, [observer(seen)]):
        df()._jdf.queryExecution().optimizedPlan()
    assert seen, "sparkext was never given the plan"
    return seen


def assert_nothing_to_add(plans: list[LogicalPlan]) -> None:
    # The statistics rules duplicate no Catalyst rule, and read facts these plans lack.
    declared = RuleExecutor(without_facts(builtin_batches()))
    anyway = RuleExecutor(without_facts(run_anyway(BATCHES)))
    for plan in plans:
        skipped = declared.execute(plan)
        run = anyway.execute(plan)
        assert run.plan == skipped.plan, (
            f"run anyway, {run.changed_by} change Catalyst's plan:\n{plan.tree_string()}\n"
            f"--- with the rules skipped ({skipped.changed_by}):\n{skipped.plan.tree_string()}"
            f"\n--- with them run:\n{run.plan.tree_string()}")


@pytest.fixture(scope="module")
def tpcds(spark):
    """A session of its own (the TPC-H temp views would shadow TPC-DS tables)."""
    if not TPCDS_QUERIES:
        pytest.skip("no TPC-DS queries")
    from tests.tpcds.stats import STATS
    session = spark.newSession()
    sparkext.enable(session)
    create_empty_tables(session, (TPCDS_DIR / "schema.sql").read_text(),
                        "tpcds_nothing_to_add", STATS)
    session.catalog.setCurrentDatabase("tpcds_nothing_to_add")
    return session


@pytest.mark.parametrize("name", QUERY_NAMES)
def test_tpch_rules_duplicating_catalysts_have_nothing_to_add(spark, tpch, name):
    assert_nothing_to_add(plans_given_to_sparkext(spark, lambda: spark.sql(tpch[name])))


#: Where the skipped rules, run anyway, do add something to Catalyst's plan (found by this
#: test; the rules stay skipped: the calls they cost every query outweigh this, and each
#: addition is a filter the scan or join could have had earlier, never different rows).
FINDINGS = {
    # Catalyst infers no isnotnull for web_returns' join keys: its inference ran while
    # the join was still a left outer join; infer_filters adds both, push_down_filters
    # moves them to the scan.
    "q05": "infer_filters adds isnotnull(wr_item_sk), isnotnull(wr_order_number)",
    # isnotnull(ca_zip), implied by isnotnull(substring(ca_zip, 1, 5)), is added.
    "q08": "infer_filters adds isnotnull(ca_zip) under the IN list on substring(ca_zip)",
    # The ss_sales_price disjunction Catalyst derives from the join condition stays above
    # a Project and a join with store; push_down_filters moves it into store_sales' scan.
    "q48": "push_down_filters moves a derived store_sales filter below a join",
}


@pytest.mark.parametrize("name", [
    pytest.param(q, marks=pytest.mark.xfail(reason=FINDINGS[q], strict=True))
    if q in FINDINGS else q for q in TPCDS_QUERIES])
def test_tpcds_rules_duplicating_catalysts_have_nothing_to_add(spark, tpcds, name):
    sql = (TPCDS_DIR / "queries" / f"{name}.sql").read_text()
    assert_nothing_to_add(plans_given_to_sparkext(tpcds, lambda: tpcds.sql(sql)))


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_corpus_rules_duplicating_catalysts_have_nothing_to_add(spark, tables, name):
    assert_nothing_to_add(plans_given_to_sparkext(spark, lambda: PIPELINES[name](spark)))


# -- which rules run, and when the JVM makes no call --------------------------------------

def rules_run(catalyst_excluded: frozenset[str]) -> list[str]:
    return sorted({r.name for b in builtin_batches() for r in b.rules
                   if r.active_with(catalyst_excluded)})


def test_with_catalysts_rules_on_only_the_ordering_rules_run():
    # and the statistics rules, which duplicate none
    stats = ["answer_from_statistics", "bound_top_k"]
    assert rules_run(frozenset()) == stats + ["eliminate_sorts", "simplify_sort_keys"]
    # one of the Catalyst rules a rule duplicates switched off is enough to run it
    assert rules_run(frozenset({"PushPredicateThroughJoin"})) == stats + [
        "eliminate_sorts", "push_down_filters", "simplify_sort_keys"]
    assert rules_run(frozenset({"ColumnPruning"})) == stats + [
        "eliminate_sorts", "prune_columns", "prune_subquery_inputs", "simplify_sort_keys"]


def calls_for(spark: SparkSession, df: DataFrame, settings: dict[str, str]) -> dict:
    with conf(spark, settings):
        sparkext.reset_metrics(spark)
        df._jdf.queryExecution().optimizedPlan()
        return sparkext.metrics(spark)


def test_the_jvm_makes_no_call_for_a_join_without_sort_when_catalysts_rules_are_on(
        spark, tables):
    sparkext.enable(spark)
    df = spark.table("people").join(spark.table("depts"), "dept_id").where("age > 30")
    m = calls_for(spark, df, ONTOP)
    assert m["calls"] == 0 and m["skipped_no_pattern"] > 0, m
    # with an ORDER BY the ordering rules may have something to do (here: a constant key)
    assert calls_for(spark, df.orderBy("age", "name"), ONTOP)["calls"] == 0  # nothing
    assert calls_for(spark, df.where("age = 40").orderBy("age", "name"), ONTOP)["calls"] > 0


def test_the_jvm_makes_no_call_for_a_plan_with_nothing_to_push_or_prune(spark):
    from sparkext.catalyst import excluded_rules_conf
    sparkext.enable(spark)
    replace = {"spark.sparkext.enabled": "true", **excluded_rules_conf()}
    m = calls_for(spark, spark.range(10), replace)
    assert m["calls"] == 0 and m["skipped_no_pattern"] > 0, m
    assert calls_for(spark, spark.range(10).where("id > 3"), replace)["calls"] > 0
