"""Pruning reaches every scan: with Catalyst's ColumnPruning excluded and sparkext on, a
file scan (or a cache scan) under any node that passes its child's columns through reads
only the columns the query needs, as plain Spark's does, and the rows are plain Spark's.

Spark's scan planners (``FileSourceStrategy``, ``InMemoryScans``) narrow a scan only to
what a Project/Filter chain directly on the relation reads; a Sort, Sample, limit or
repartitioning in between leaves it reading the whole file unless ``prune_columns`` puts a
Project on the relation.

Three ways in one session, as in ``test_catalyst_parity``:
  plain    sparkext off, Catalyst's rules on (the reference);
  instead  Catalyst's pushdown and pruning rules excluded, sparkext on;
  on top   Catalyst's rules on and sparkext on: the plan Catalyst optimized, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

import sparkext
from sparkext.catalyst import excluded_rules_conf
from sparkext.testing.snapshots import normalize_plan
from sparkext.testing.scans import file_scans
from tests.conftest import conf, jvm_nodes, jvm_seq
from tests.rows import assert_same_rows, collect

MODES: dict[str, dict[str, str]] = {
    "plain": {"spark.sparkext.enabled": "false"},
    "instead": {"spark.sparkext.enabled": "true", **excluded_rules_conf()},
    "on top": {"spark.sparkext.enabled": "true"},
}

#: The file's columns; every query below needs only some of them.
ALL_COLUMNS = frozenset({"a", "b", "c", "d", "e", "arr"})

Query = Callable[[DataFrame], DataFrame]


def _rows(spark: SparkSession) -> DataFrame:
    """40 rows with NULLs in every column but ``a``, in three files (three scan splits)."""
    return spark.range(40).select(
        F.col("id").cast("int").alias("a"),
        F.when(F.col("id") % 7 != 3, (F.col("id") * 13 % 11 - 5).cast("int")).alias("b"),
        F.when(F.col("id") % 5 != 0, F.concat(F.lit("s"), (F.col("id") % 6).cast("string")))
        .alias("c"),
        F.when(F.col("id") % 9 != 4, (F.col("id") * 7 % 10).cast("int")).alias("d"),
        F.when(F.col("id") % 4 != 1, F.col("id") / 3.0).alias("e"),
        F.when(F.col("id") % 6 != 2, F.array(F.col("id").cast("int"), F.lit(1))).alias("arr"),
    ).repartition(3)


@pytest.fixture(scope="module")
def table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    sparkext.enable(spark)
    path = str(tmp_path_factory.mktemp("prune_scans") / "t.parquet")
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        _rows(spark).write.parquet(path)
    return path


def _filtered(df: DataFrame) -> DataFrame:
    return df.filter(F.col("b") > 0)


def _window(df: DataFrame) -> DataFrame:
    w = Window.partitionBy("d").orderBy("c", "a")
    return df.withColumn("rn", F.row_number().over(w)).select("a", "rn")


def _rebalance(df: DataFrame) -> DataFrame:
    df.createOrReplaceTempView("prune_scans_rebalance")
    return df.sparkSession.sql("SELECT /*+ REBALANCE(d) */ * FROM prune_scans_rebalance") \
        .select("a")


def _alias(df: DataFrame) -> DataFrame:
    df.createOrReplaceTempView("prune_scans_alias")
    return df.sparkSession.sql(
        "SELECT v.a FROM (SELECT * FROM prune_scans_alias ORDER BY d) v")


#: node kind -> (the query over a DataFrame, the columns its scan needs besides the
#: filter's ``b``). Each puts the node directly on its input, then keeps ``a`` only.
PASS_THROUGH: dict[str, tuple[Query, frozenset[str]]] = {
    "global sort": (lambda df: df.orderBy("d").select("a"), frozenset({"a", "d"})),
    "sort within partitions": (lambda df: df.sortWithinPartitions("d").select("a"),
                               frozenset({"a", "d"})),
    "sample": (lambda df: df.sample(False, 0.5, seed=7).select("a"), frozenset({"a"})),
    "sample with replacement": (lambda df: df.sample(True, 0.7, seed=3).select("a"),
                                frozenset({"a"})),
    # A limit right under the final projection is pruned by Catalyst's own
    # PushProjectionThroughLimit (not excluded): under a sort, only sparkext prunes it.
    "limit": (lambda df: df.limit(7).orderBy("d").select("a"), frozenset({"a", "d"})),
    "round-robin repartition": (lambda df: df.repartition(3).select("a"), frozenset({"a"})),
    "repartition by expression": (lambda df: df.repartition(3, "d").select("a"),
                                  frozenset({"a", "d"})),
    "repartition by range": (lambda df: df.repartitionByRange(3, "d").select("a"),
                             frozenset({"a", "d"})),
    "coalesce": (lambda df: df.coalesce(1).select("a"), frozenset({"a"})),
    "rebalance": (_rebalance, frozenset({"a", "d"})),
    # Catalyst drops the alias itself (EliminateSubqueryAliases) before sparkext runs;
    # the unit fixtures cover a SubqueryAlias on a relation.
    "sort in an aliased subquery": (_alias, frozenset({"a", "d"})),
    "window": (_window, frozenset({"a", "c", "d"})),
    "generate": (lambda df: df.select("a", F.explode("arr").alias("x")),
                 frozenset({"a", "arr"})),
    "expand": (lambda df: df.cube("d").agg(F.sum("a").alias("s")), frozenset({"a", "d"})),
    "sort over a limit over a repartition": (
        lambda df: df.repartition(2).limit(9).orderBy("d").select("a"), frozenset({"a", "d"})),
}

#: Queries whose scan must keep columns: pruning below them would change their rows.
KEEP_COLUMNS: dict[str, tuple[Query, frozenset[str]]] = {
    "distinct (dropping a column changes what is distinct)": (
        lambda df: df.distinct().orderBy("d").select("a"), ALL_COLUMNS),
    "a nondeterministic projection reads what it reads": (
        lambda df: df.select("a", "d", (F.rand(5) * F.col("e")).alias("r"))
        .orderBy("d").select("a", "r"), frozenset({"a", "d", "e"})),
    "a nondeterministic filter stays on its rows": (
        lambda df: df.filter(F.rand(5) < 0.5).orderBy("d").select("a"),
        frozenset({"a", "d"})),
}


def _run(spark: SparkSession, path: str, query: Query, mode: str
         ) -> tuple[list, list[frozenset[str]], str]:
    """Rows, the columns of each file scan, and the normalised optimized plan, in a mode."""
    with conf(spark, MODES[mode]):
        df = query(spark.read.parquet(path))
        rows = collect(df)
        scans = [frozenset(s.columns) for s in file_scans(df)]
        return rows, scans, normalize_plan(df)


def _check(spark: SparkSession, path: str, query: Query, needed: frozenset[str]) -> None:
    plain_rows, plain_scans, plain_plan = _run(spark, path, query, "plain")
    rows, scans, _ = _run(spark, path, query, "instead")
    assert plain_scans == [needed], f"plain Spark's scan reads {plain_scans}"
    assert scans == [needed], f"the scan reads {scans}, needs only {sorted(needed)}"
    assert_same_rows(plain_rows, rows)
    top_rows, top_scans, top_plan = _run(spark, path, query, "on top")
    assert top_scans == plain_scans
    assert top_plan == plain_plan, "sparkext changed a plan Catalyst had pruned"
    assert_same_rows(plain_rows, top_rows)


@pytest.mark.parametrize("kind", list(PASS_THROUGH))
def test_a_pass_through_node_on_a_file_relation_reads_only_the_needed_columns(
        spark: SparkSession, table: str, kind: str) -> None:
    query, needed = PASS_THROUGH[kind]
    _check(spark, table, query, needed)


@pytest.mark.parametrize("kind", list(PASS_THROUGH))
def test_a_pass_through_node_over_a_filter_reads_only_the_needed_columns(
        spark: SparkSession, table: str, kind: str) -> None:
    query, needed = PASS_THROUGH[kind]
    _check(spark, table, lambda df: query(_filtered(df)), needed | {"b"})


@pytest.mark.parametrize("kind", list(KEEP_COLUMNS))
def test_pruning_does_not_cross_what_needs_the_columns(
        spark: SparkSession, table: str, kind: str) -> None:
    query, needed = KEEP_COLUMNS[kind]
    _check(spark, table, query, needed)


def _cache_scan_columns(df: DataFrame) -> list[frozenset[str]]:
    """The columns each cache scan in ``df``'s physical plan reads (adaptive execution off,
    so the plan is the tree itself)."""
    plan = df._jdf.queryExecution().executedPlan()
    return [frozenset(a.name() for a in jvm_seq(node.attributes()))
            for node in jvm_nodes(plan)
            if node.getClass().getSimpleName() == "InMemoryTableScanExec"]


@pytest.mark.parametrize("filtered", [False, True], ids=["directly", "over a filter"])
def test_a_sort_on_a_cached_relation_reads_only_the_needed_columns_from_the_cache(
        spark: SparkSession, table: str, filtered: bool) -> None:
    cached = spark.read.parquet(table).cache()
    try:
        cached.count()
        results = {}
        for mode in MODES:
            with conf(spark, {**MODES[mode], "spark.sql.adaptive.enabled": "false"}):
                df = (_filtered(cached) if filtered else cached).orderBy("d").select("a")
                results[mode] = collect(df), _cache_scan_columns(df)
        needed = frozenset({"a", "d", "b"} if filtered else {"a", "d"})
        for mode, (rows, scans) in results.items():
            assert scans == [needed], f"{mode}: the cache scan reads {scans}"
            assert_same_rows(results["plain"][0], rows)
    finally:
        cached.unpersist()
