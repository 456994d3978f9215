"""Top-K and global min, max and count answered from file statistics (issue 37):
``bound_top_k`` and ``answer_from_statistics`` on multi-file parquet the test writes.

Every case runs in plain Spark and with sparkext's built-in rules, and must give plain
Spark's rows: the same multiset, and for a top-K the same sequence of sort keys (the
tables' sort keys are unique after the first, so the order is determined). Where the
statistics prove a bound the rule fires (the plan holds the bound, or a LocalRelation);
where they cannot (NaN, INT96, a collation, a filter on a data column, a non-deterministic
step, a missing statistic) the plan stays plain Spark's.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from pyspark.sql import functions as F

import sparkext
from tests.conftest import conf
from tests.rows import assert_same_rows

MICROS = {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}
SCHEMA = ("id long, ts timestamp, tsn timestamp_ntz, d date, s string, m decimal(12, 3), "
          "x double, n int")


def _row(i: int):
    """Row ``i``: every column grows with ``i`` (so files written in order of ``i`` hold
    ranges), with ties every 4 rows in ``n`` and NULLs in ``n`` and ``s``."""
    base = dt.datetime(2026, 1, 1) + dt.timedelta(minutes=37 * i)
    return (i, base, base, base.date(), None if i % 11 == 0 else f"été-{i:05d}-日本",
            Decimal(i) / 8, float(i - 150) if i != 150 else -0.0,
            None if i % 7 == 0 else i // 4)


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    """300 rows in 6 files of 50, each a range of ``id``; a 7th file of NULLs only in
    ``n`` and ``s``; and a catalog table over the same files."""
    root = tmp_path_factory.mktemp("topk")
    path = str(root / "t")
    with conf(spark, MICROS):
        for f in range(6):
            rows = [_row(i) for i in range(f * 50, (f + 1) * 50)]
            spark.createDataFrame(rows, SCHEMA).coalesce(1).write.mode("append").parquet(path)
        nulls = [(1000 + i, dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 1), dt.date(2020, 1, 1),
                  None, Decimal(0), 0.0, None) for i in range(20)]
        spark.createDataFrame(nulls, SCHEMA).coalesce(1).write.mode("append").parquet(path)
    spark.sql("DROP TABLE IF EXISTS topk_t")
    spark.sql(f"CREATE TABLE topk_t USING parquet LOCATION '{path}'")
    yield path
    spark.sql("DROP TABLE IF EXISTS topk_t")


def both(spark, build):
    """Plain Spark's rows and sparkext's, and sparkext's optimized plan."""
    sparkext.enable(spark)
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        plain = build().collect()
    df = build()
    rows = df.collect()
    return plain, rows, df._jdf.queryExecution().optimizedPlan().toString()


def same(plain, rows, keys):
    assert_same_rows(plain, rows)
    assert [tuple(r[k] for k in keys) for r in plain] == [tuple(r[k] for k in keys) for r in rows]


# column, direction, k: each sorted by (column, id) so the order is determined
TOP_K = [
    ("ts", "desc", 10), ("ts", "asc", 10), ("tsn", "desc", 25), ("d", "desc", 60),
    ("s", "desc", 7), ("s", "asc_nulls_last", 7), ("s", "asc", 40),  # NULLs first: 28 + 12
    ("m", "desc", 13), ("x", "asc", 160), ("x", "desc", 5),  # -0.0 and 0.0 at the bound
    ("n", "desc", 9),  # ties at the bound (n = id // 4)
    ("n", "desc_nulls_first", 50), ("n", "asc", 30), ("n", "asc", 70),
    ("id", "desc", 1000),  # k larger than the table
]


@pytest.mark.parametrize("column,direction,k", TOP_K, ids=lambda v: str(v))
def test_a_top_k_returns_plain_sparks_rows(spark, table, column, direction, k):
    def build():
        return (spark.read.parquet(table)
                .orderBy(getattr(F.col(column), direction)(), F.asc("id")).limit(k))
    plain, rows, _ = both(spark, build)
    same(plain, rows, [column, "id"])


@pytest.mark.parametrize("source", ["path", "catalog"])
def test_a_top_k_over_ordered_files_reads_only_the_files_that_can_hold_it(spark, table, source):
    def build():
        df = spark.read.parquet(table) if source == "path" else spark.table("topk_t")
        return df.orderBy(F.desc("ts")).limit(10)
    plain, rows, plan = both(spark, build)
    same(plain, rows, ["ts"])
    assert "Filter (ts#" in plan and ">=" in plan
    scan = build()
    scan.collect()
    executed = scan._jdf.queryExecution().executedPlan().toString()
    assert "InMemoryFileIndex(1 paths)" in executed  # of 7 files
    because = str(sparkext.explain(build()))
    assert "1 of 7 files read" in because


def test_show_and_head_and_an_offset(spark, table):
    sparkext.enable(spark)
    def show(df):
        return df._jdf.showString(5, 20, False)
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        plain_show = show(spark.read.parquet(table).orderBy(F.desc("ts"), "id"))
        # (m has ties: id decides among them, so the rows are determined)
        plain_head = spark.read.parquet(table).orderBy(F.asc("m"), F.asc("id")).head(3)
        plain_offset = spark.read.parquet(table).orderBy(F.desc("id")).offset(4).limit(6).collect()
    assert show(spark.read.parquet(table).orderBy(F.desc("ts"), "id")) == plain_show
    assert spark.read.parquet(table).orderBy(F.asc("m"), F.asc("id")).head(3) == plain_head
    assert spark.read.parquet(table).orderBy(F.desc("id")).offset(4).limit(6).collect() == plain_offset


def test_fewer_rows_than_k_and_an_empty_table(spark, table, tmp_path):
    plain, rows, plan = both(spark, lambda: spark.read.parquet(table).where("id < 0")
                             .orderBy(F.desc("ts")).limit(5))
    assert plain == rows == []
    empty = str(tmp_path / "empty")
    with conf(spark, MICROS):
        spark.createDataFrame([], SCHEMA).coalesce(1).write.parquet(empty)
    plain, rows, plan = both(spark, lambda: spark.read.parquet(empty).orderBy(F.desc("ts")).limit(5))
    assert plain == rows == []
    plain, rows, plan = both(spark, lambda: spark.read.parquet(empty)
                             .agg(F.count("*"), F.max("ts"), F.min("s")))
    assert plain == rows and "LocalRelation" in plan


def test_a_partitioned_table_ordered_by_its_partition_column(spark, tmp_path):
    path = str(tmp_path / "by_day")
    with conf(spark, MICROS):
        (spark.range(400).selectExpr("id", "date_add(DATE'2026-01-01', CAST(id % 40 AS INT)) AS day",
                                     "timestamp_seconds(id * 100) AS ts")
         .write.partitionBy("day").parquet(path))
    plain, rows, plan = both(spark, lambda: spark.read.parquet(path)
                             .orderBy(F.desc("day"), F.desc("ts")).limit(25))
    same(plain, rows, ["day", "ts"])
    assert "day#" in plan and ">= 2026-02-07" in plan  # the top 25 of 10-row days: 3 days


AGGREGATES = {
    "max of a timestamp": ["max(ts)"],
    "min and count": ["min(ts)", "count(*)"],
    "count of a column with NULLs": ["count(n)", "count(1)"],
    "min and max of a multi-byte string": ["min(s)", "max(s)"],
    "decimals and dates": ["min(m)", "max(m)", "min(d)", "max(d)"],
    "integers with ties": ["min(n)", "max(n)", "max(id)"],
}


@pytest.mark.parametrize("name", list(AGGREGATES))
def test_a_global_aggregate_is_answered_from_statistics(spark, table, name):
    plain, rows, plan = both(spark, lambda: spark.read.parquet(table)
                             .agg(*map(F.expr, AGGREGATES[name])))
    assert plain == rows and "LocalRelation" in plan


def test_a_column_of_nulls_only_gives_null_and_zero(spark, tmp_path):
    path = str(tmp_path / "nulls")
    spark.createDataFrame([(i, None) for i in range(10)], "id long, n int").coalesce(2) \
        .write.parquet(path)
    plain, rows, plan = both(spark, lambda: spark.read.parquet(path)
                             .agg(F.max("n"), F.count("n"), F.count("*")))
    assert plain == rows == [(None, 0, 10)] and "LocalRelation" in plan


def test_an_appended_table_is_seen_by_the_next_query(spark, tmp_path):
    path = str(tmp_path / "grow")
    with conf(spark, MICROS):
        spark.createDataFrame([_row(i) for i in range(30)], SCHEMA).coalesce(1).write.parquet(path)
    first = both(spark, lambda: spark.read.parquet(path).agg(F.max("ts"), F.count("*")))
    with conf(spark, MICROS):
        spark.createDataFrame([_row(i) for i in range(500, 510)], SCHEMA).coalesce(1) \
            .write.mode("append").parquet(path)
    second = both(spark, lambda: spark.read.parquet(path).agg(F.max("ts"), F.count("*")))
    assert first[0] == first[1] and second[0] == second[1]
    assert second[1][0][1] == 40 and "LocalRelation" in second[2]
    top = both(spark, lambda: spark.read.parquet(path).orderBy(F.desc("ts")).limit(3))
    same(top[0], top[1], ["ts"])


# -- where the statistics cannot prove anything, the plan stays plain Spark's ---------------


def test_nothing_is_proved_from_what_is_not_exact(spark, tmp_path):
    nan = str(tmp_path / "nan")
    int96 = str(tmp_path / "int96")
    spark.createDataFrame([(float(i),) for i in range(20)] + [(float("nan"),)], "x double") \
        .coalesce(1).write.parquet(nan)
    with conf(spark, {"spark.sql.parquet.outputTimestampType": "INT96"}):
        spark.createDataFrame([_row(i) for i in range(30)], SCHEMA).coalesce(2).write.parquet(int96)
    cases = {
        "NaN": lambda: spark.read.parquet(nan).orderBy(F.desc("x")).limit(3),
        "NaN max": lambda: spark.read.parquet(nan).agg(F.max("x")),
        "INT96": lambda: spark.read.parquet(int96).orderBy(F.desc("ts")).limit(3),
        "INT96 max": lambda: spark.read.parquet(int96).agg(F.max("ts")),
        "a filter on a data column": lambda: spark.read.parquet(int96).where("n > 2")
        .orderBy(F.desc("id")).limit(3),
        "a non-deterministic column": lambda: spark.read.parquet(int96)
        .withColumn("r", F.rand(3)).orderBy(F.desc("r")).limit(3),
        "a non-deterministic filter": lambda: spark.read.parquet(int96).where(F.rand(3) > 0.5)
        .agg(F.max("id")),
        "a DISTINCT count": lambda: spark.read.parquet(int96).agg(F.countDistinct("n")),
    }
    for name, build in cases.items():
        with conf(spark, {"spark.sparkext.enabled": "false"}):
            plain_df = build()
            plain_plan = plain_df._jdf.queryExecution().optimizedPlan().toString()
            plain = plain_df.collect()
        df = build()
        plan = df._jdf.queryExecution().optimizedPlan().toString()
        if "rand" not in name:
            assert_same_rows(plain, df.collect(), ordered=True)  # (NaN equals NaN)
        assert "LocalRelation" not in plan and plan.count("Filter") == plain_plan.count("Filter"), name


def test_a_collated_string_is_not_bounded(spark, tmp_path):
    if spark.version.startswith("3."):
        pytest.skip("collations arrived in Spark 4.0")
    path = str(tmp_path / "coll")
    spark.createDataFrame([(f"W{i:03d}",) for i in range(50)], "s string").coalesce(2).write.parquet(path)
    build = lambda: spark.read.schema("s string collate UTF8_LCASE").parquet(path)  # noqa: E731
    plain, rows, plan = both(spark, lambda: build().orderBy(F.desc("s")).limit(3))
    assert [r.s for r in plain] == [r.s for r in rows] and "Filter" not in plan
    plain, rows, plan = both(spark, lambda: build().agg(F.max("s")))
    assert plain == rows and "LocalRelation" not in plan
