"""The JVM's "ordering" pre-check (jvm-shim ``Prechecks.scala``) against the sort rules.

``simplify_sort_keys`` and ``eliminate_sorts`` declare ``jvm_precheck="ordering"``: the JVM
skips the call for a plan whose one Sort neither can change (nothing below it makes an
order but Windows, whose order its first key is not; no key can be constant or follow a
unique key). The pre-check must never skip a
plan the rules would change. Checked here on TPC-H, the TPC-DS queries of the
plan-stability suite and the corpus: the optimized plan with the pre-check is the plan
with the same rules declaring none (every plan with a Sort then goes to Python). And, on
small plans, each way the analysis can change a sort makes the JVM call, while a sort
nothing can change makes no call.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

import sparkext
from sparkext.optimizer import Batch, Rule
from sparkext.rules import builtin_batches
from sparkext.testing.catalog import create_empty_tables
from tests.conftest import conf
from tests.corpus.pipelines import PIPELINES
from tests.tpch import QUERY_NAMES

TPCDS_DIR = Path(__file__).parent / "tpcds"
TPCDS_QUERIES = sorted(p.stem for p in (TPCDS_DIR / "queries").glob("q*.sql"))
ONTOP = {"spark.sparkext.enabled": "true", "spark.sql.optimizer.excludedRules": ""}


def without_prechecks(batches: tuple[Batch, ...]) -> tuple[Batch, ...]:
    return tuple(Batch(b.name, b.strategy,
                       tuple(dataclasses.replace(r, jvm_precheck=None) for r in b.rules))
                 for b in batches)


def normalized(plan: str) -> str:
    """The plan's text with expression ids (and the counters of names Spark generates:
    ``_common_expr_3``, lambda variables' ``x_30``) numbered by first appearance: two
    analyses of one query number them apart."""
    ids: dict[str, int] = {}
    return re.sub(r"(#|_common_expr_|lambda [A-Za-z]+_)(\d+)",
                  lambda m: f"{m.group(1)}{ids.setdefault(m.group(0), len(ids))}", plan)


def optimized(spark: SparkSession, df: Callable[[], DataFrame]) -> tuple[str, dict]:
    with conf(spark, ONTOP):
        sparkext.reset_metrics(spark)
        plan = df()._jdf.queryExecution().optimizedPlan().toString()
        return normalized(plan), sparkext.metrics(spark)


def assert_precheck_agrees(spark: SparkSession, df: Callable[[], DataFrame]) -> dict:
    """The plan with the pre-check is the plan without it; returns the pre-checked run's
    metrics."""
    try:
        sparkext.enable(spark)
        checked, m = optimized(spark, df)
        sparkext.enable(spark, batches=without_prechecks(builtin_batches()), builtin=False)
        everything, _ = optimized(spark, df)
    finally:
        sparkext.enable(spark)
    assert checked == everything, (
        f"the pre-check skipped a plan the sort rules change:\n--- with it:\n{checked}"
        f"\n--- without it:\n{everything}")
    return m


@pytest.fixture(scope="module")
def tpcds(spark):
    if not TPCDS_QUERIES:
        pytest.skip("no TPC-DS queries")
    from tests.tpcds.stats import STATS
    session = spark.newSession()
    create_empty_tables(session, (TPCDS_DIR / "schema.sql").read_text(), "tpcds_prechecks",
                        STATS)
    session.catalog.setCurrentDatabase("tpcds_prechecks")
    return session


@pytest.mark.parametrize("name", QUERY_NAMES)
def test_tpch_the_precheck_skips_no_plan_the_sort_rules_change(spark, tpch, name):
    assert_precheck_agrees(spark, lambda: spark.sql(tpch[name]))


@pytest.mark.parametrize("name", TPCDS_QUERIES)
def test_tpcds_the_precheck_skips_no_plan_the_sort_rules_change(tpcds, name):
    sql = (TPCDS_DIR / "queries" / f"{name}.sql").read_text()
    assert_precheck_agrees(tpcds, lambda: tpcds.sql(sql))


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_corpus_the_precheck_skips_no_plan_the_sort_rules_change(spark, tables, name):
    assert_precheck_agrees(spark, lambda: PIPELINES[name](spark))


def test_the_precheck_skips_tpc_queries_whose_sort_nothing_can_change(spark, tpch, tpcds):
    # TPC-H q01 orders by its two grouping keys: neither is constant, the unique key is
    # covered only by both. TPC-DS q03 orders by d_year, sum_agg, brand_id after grouping
    # by d_year, brand, brand_id: no constant, no unique key covered before the last key.
    # TPC-DS q63 orders by i_manager_id, the partition key of a Window below, under LIMIT
    # 100: a top-K's sort takes no order from below.
    for session, sql in ((spark, tpch["q01"]),
                         (tpcds, (TPCDS_DIR / "queries" / "q03.sql").read_text()),
                         (tpcds, (TPCDS_DIR / "queries" / "q63.sql").read_text())):
        m = assert_precheck_agrees(session, lambda s=session, q=sql: s.sql(q))
        assert m["calls"] == 0 and m["skipped_precheck"] >= 1, m


# -- small plans: each way a sort can change makes the call ----------------------------------

@pytest.fixture(scope="module")
def sales(spark):
    rows = [(k % 4, k % 3, float(k), None if k % 5 == 0 else k) for k in range(40)]
    df = spark.createDataFrame(rows, "k int, j int, v double, n int")
    df.createOrReplaceTempView("precheck_sales")
    return lambda: spark.table("precheck_sales")


def calls(spark: SparkSession, df: DataFrame) -> dict:
    sparkext.enable(spark)
    with conf(spark, ONTOP):
        sparkext.reset_metrics(spark)
        rows = df.collect()
        m = sparkext.metrics(spark)
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        assert rows == df.collect()  # every case here orders its rows totally
    return m


def test_a_sort_no_rule_can_change_makes_no_call(spark, sales):
    by_total = sales().groupBy("k").agg(F.sum("v").alias("s")).orderBy("s", "k")
    m = calls(spark, by_total)
    assert m["calls"] == 0 and m["skipped_precheck"] >= 1, m
    # an aggregate's result that reads no column is no constant (count(1))
    by_count = sales().groupBy("k", "j").count().orderBy("count", "k", "j")
    m = calls(spark, by_count)
    assert m["calls"] == 0 and m["skipped_precheck"] >= 1, m
    # a Window below orders by k, then v, within partitions: not the order asked for
    by_other = sales().withColumn("r", F.rank().over(Window.partitionBy("k").orderBy("v"))) \
        .orderBy("j", "v", "k")
    m = calls(spark, by_other)
    assert m["calls"] == 0 and m["skipped_precheck"] >= 1, m


def test_under_a_limit_no_order_from_below_makes_the_call(spark, sales):
    """A top-K's sort stays whatever order its input has (eliminate_sorts removes it only
    when every key is constant, simplify_sort_keys reads no order): the order a Window
    below makes, which makes the call without the limit (case window_below), does not."""
    def top_k():
        return sales().withColumn("r", F.rank().over(Window.partitionBy("k").orderBy("v"))) \
            .orderBy("k", "v", "j", "n").limit(10)
    m = assert_precheck_agrees(spark, top_k)
    assert m["calls"] == 0 and m["skipped_precheck"] >= 1, m
    m = calls(spark, top_k())
    assert m["calls"] == 0 and m["skipped_precheck"] >= 1, m


@pytest.mark.parametrize("case", [
    # a key made constant by a filter
    "constant_key",
    # a key known equal to an earlier one (a join's equality)
    "equal_keys",
    # keys after a unique key (the grouping keys)
    "after_unique_key",
    # a key that is a function of an earlier one
    "function_of_earlier",
    # an order from below (a window's)
    "window_below",
    # an order from below: a window function that never decreases along its window's order
    "window_function_below",
    # keys after a unique key that row_number makes with the partition keys
    "after_row_number",
    # a sort under another sort
    "two_sorts",
    # a sort the root reaches through a join
    "under_a_join",
    # IS NULL makes a key constant
    "is_null",
    # a key tested against a literal made by a projection
    "literal_alias",
])
def test_a_sort_a_rule_may_change_makes_the_call(spark, sales, case):
    s = sales()
    df = {
        "constant_key": lambda: s.where("k = 1").groupBy("k", "j").agg(F.sum("v").alias("t"))
        .orderBy("k", "t", "j"),
        "equal_keys": lambda: s.alias("a").join(s.select(F.col("k").alias("k2"), "j").distinct(),
                                                F.col("a.k") == F.col("k2"))
        .groupBy("a.k", "k2", "a.j").agg(F.sum("v").alias("t")).orderBy("t", "k", "k2", "a.j"),
        "after_unique_key": lambda: s.groupBy("k").agg(F.sum("v").alias("t"))
        .orderBy("k", "t"),
        "function_of_earlier": lambda: s.groupBy("k", "j").agg(F.sum("v").alias("t"))
        .select("k", "j", "t", (F.col("k") + 1).alias("k1")).orderBy("k", "k1", "t", "j"),
        "window_below": lambda: s.withColumn("r", F.rank().over(Window.partitionBy("k")
                                                               .orderBy("v")))
        .orderBy("k", "v", "j", "n"),
        "window_function_below": lambda: s.withColumn("r", F.row_number().over(
            Window.orderBy("v"))).select(F.col("r").alias("r2"), "k").orderBy("r2", "k"),
        # not ordered first (j), but k and its row_number are a unique key: n may go
        "after_row_number": lambda: s.withColumn("r", F.row_number().over(
            Window.partitionBy("k").orderBy("v"))).orderBy("j", "k", "r", "n"),
        "two_sorts": lambda: s.orderBy("v").limit(30).orderBy("k", "v"),
        "under_a_join": lambda: s.join(s.orderBy("j").select(F.col("k").alias("k3")).distinct(),
                                       F.col("k") == F.col("k3")).orderBy("v", "j", "k3"),
        "is_null": lambda: s.where("n is null").groupBy("n", "k").agg(F.sum("v").alias("t"))
        .orderBy("n", "t", "k"),
        "literal_alias": lambda: s.groupBy("k").agg(F.sum("v").alias("t"))
        .select(F.lit(7).alias("seven"), "k", "t").orderBy("seven", "t", "k"),
    }[case]()
    m = calls(spark, df)
    assert m["calls"] >= 1 and m["skipped_precheck"] == 0, m


def test_a_rule_declares_only_a_known_precheck():
    with pytest.raises(ValueError, match="jvm_precheck"):
        Rule("r", lambda p: p, jvm_precheck="ordering_please")
