"""Facts about the data under a relation (issue 34): what a rule that declares
``needs=("relation",)`` or ``needs=("files",)`` sees on ``Relation.facts``, checked against
Spark's own objects (read through py4j) and against the data the test wrote (each file's
min, max and NULL count computed by reading the file back).

Every relation kind a user meets: a path read, a catalog table, a table partitioned by two
columns (files after pruning), a bucketed and sorted table, a cached relation,
``spark.range``, a local relation, a temp view over a join. Statistics: NULL-only and
empty files, a file missing a column, multi-byte strings, negative zero, NaN (left out),
INT96 timestamps (left out), a float column written by another writer (left out), a
collated string (left out), and a table appended to between two queries.
"""

from __future__ import annotations

import calendar
import datetime as dt
import math
from pathlib import PurePosixPath
from urllib.parse import urlparse
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from sparkext import rule
from sparkext.facts import Bucketing, Format, TableId
from sparkext.plan import FactsNotSent, Relation
from tests.conftest import conf, jvm_nodes, jvm_seq, rules_enabled

# -- helpers ----------------------------------------------------------------------------------


def facts_of(spark, df, needs=("files",)):
    """The facts each relation of ``df``'s plan carries for a rule that ``needs`` them,
    by relation, in plan order."""
    seen: list = []

    @rule(needs=needs)
    def record(plan):
        seen.clear()
        seen.extend(n for n in plan.walk() if isinstance(n, Relation))
        return plan

    with rules_enabled(spark, [record]):
        df.collect()
    return [(r, r.facts) for r in seen]


def only_facts(spark, df, needs=("files",)):
    (relation, facts), = facts_of(spark, df, needs)
    return relation, facts


def local(uri: str) -> PurePosixPath:
    """A local file's path, whichever way its URI is spelt (file:/x, file:///x)."""
    return PurePosixPath(urlparse(uri).path)


def jvm_leaf(df):
    return next(n for n in jvm_nodes(df._jdf.queryExecution().optimizedPlan())
                if n.children().isEmpty())


def read_back(spark, path: str, columns: list[str]) -> dict:
    """min, max and NULL count of each column in one file, as Spark computes them."""
    df = spark.read.parquet(path)
    present = set(df.columns)
    aggs = []
    for c in columns:
        if c in present:
            aggs += [F.min(c).alias(f"{c}_min"), F.max(c).alias(f"{c}_max"),
                     F.count(F.when(F.col(c).isNull(), 1)).alias(f"{c}_nulls")]
    row = df.agg(F.count(F.lit(1)).alias("rows"), *aggs).first()
    out = {"rows": row["rows"]}
    for c in columns:
        out[c] = ((row[f"{c}_min"], row[f"{c}_max"], row[f"{c}_nulls"]) if c in present
                  else (None, None, row["rows"]))
    return out


def internal(v):
    """A value Spark collected, as the mirror holds it (a Literal's value): dates in days,
    timestamps in microseconds (the test session's time zone is UTC)."""
    if isinstance(v, dt.datetime):
        return calendar.timegm(v.utctimetuple()) * 1_000_000 + v.microsecond
    if isinstance(v, dt.date):
        return (v - dt.date(1970, 1, 1)).days
    return v


def same_value(a, b) -> bool:
    """``a`` (a statistic) equals ``b`` (collected) under Spark's comparison (-0.0 equals
    0.0)."""
    b = internal(b)
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def assert_stats_match_the_data(spark, relation, facts, columns):
    by_name = {a.name: a for a in relation.output}
    assert facts.files, facts.files_unknown
    for f in facts.files:
        expected = read_back(spark, f.path, columns)
        assert f.row_count == expected["rows"], f.path
        for c in columns:
            s = f.stats(by_name[c])
            lo, hi, nulls = expected[c]
            assert s is not None, (f.path, c)
            assert s.null_count == nulls, (f.path, c)
            assert same_value(s.min, lo) and same_value(s.max, hi), (f.path, c, s, expected[c])
        if f.row_groups is not None:
            assert sum(g.row_count for g in f.row_groups) == f.row_count


# -- what a relation is ---------------------------------------------------------------------


def test_a_rule_that_declares_nothing_gets_no_facts_and_says_how_to_ask(spark, tmp_path):
    spark.range(3).write.parquet(str(tmp_path / "t"))
    seen = []

    @rule()
    def look(plan):
        seen.extend(n for n in plan.walk() if isinstance(n, Relation))
        return plan

    with rules_enabled(spark, [look]):
        spark.read.parquet(str(tmp_path / "t")).collect()
    with pytest.raises(FactsNotSent, match="needs=\\('relation',\\)"):
        _ = seen[0].facts


def test_a_path_read(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(40).selectExpr("id", "CAST(id AS STRING) AS s").repartition(3).write.parquet(path)
    df = spark.read.parquet(path)
    relation, facts = only_facts(spark, df)
    leaf = jvm_leaf(df)
    assert facts.format is Format.PARQUET
    assert facts.table is None and leaf.catalogTable().isEmpty()
    assert facts.location == tuple(p.toString() for p in
                                   jvm_seq(leaf.relation().location().rootPaths()))
    assert facts.partition_columns == ()
    assert facts.size_in_bytes == int(str(leaf.stats().sizeInBytes()))
    assert len(facts.files) == 3
    assert {local(f.path) for f in facts.files} == {local(p) for p in df.inputFiles()}
    assert_stats_match_the_data(spark, relation, facts, ["id", "s"])


def test_only_what_was_asked_is_sent(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(5).write.parquet(path)
    _, facts = only_facts(spark, spark.read.parquet(path), needs=("relation",))
    assert facts.format is Format.PARQUET and facts.files is None


def test_a_catalog_table_with_properties(spark):
    spark.sql("DROP TABLE IF EXISTS facts_cat")
    spark.sql("CREATE TABLE facts_cat (k INT, v STRING) USING parquet "
              "TBLPROPERTIES ('owner.team' = 'data', 'quality' = 'gold')")
    spark.sql("INSERT INTO facts_cat VALUES (1, 'a'), (2, 'b'), (NULL, 'c')")
    try:
        df = spark.table("facts_cat")
        relation, facts = only_facts(spark, df)
        ident = jvm_leaf(df).catalogTable().get().identifier()
        assert facts.table == TableId("spark_catalog", (ident.database().get(),), ident.table())
        assert str(facts.table) == "spark_catalog.default.facts_cat"
        assert facts.properties["owner.team"] == "data" and facts.properties["quality"] == "gold"
        assert_stats_match_the_data(spark, relation, facts, ["k", "v"])
    finally:
        spark.sql("DROP TABLE facts_cat")


def test_a_table_partitioned_by_two_columns_lists_the_files_pruning_keeps(spark):
    spark.sql("DROP TABLE IF EXISTS facts_parts")
    (spark.range(120).selectExpr("id", "CAST(id % 3 AS INT) AS d", "CAST(id % 2 AS STRING) AS h")
     .write.partitionBy("d", "h").saveAsTable("facts_parts"))
    try:
        whole = spark.table("facts_parts")
        relation, facts = only_facts(spark, whole)
        assert [a.name for a in facts.partition_columns] == ["d", "h"]
        assert list(jvm_leaf(whole).relation().partitionSchema().fieldNames()) == ["d", "h"]
        assert len({tuple(f.partition_values.values()) for f in facts.files}) == 6
        pruned = whole.where("d = 1 AND h = '0' AND id > 3")
        relation, facts = only_facts(spark, pruned)
        read = {local(r.p) for r in pruned.select(F.col("_metadata.file_path").alias("p"))
                .distinct().collect()}
        assert {local(f.path) for f in facts.files} == read
        d, h = facts.partition_columns
        assert {(f.partition_value(d), f.partition_value(h)) for f in facts.files} == {(1, "0")}
        assert_stats_match_the_data(spark, relation, facts, ["id"])
    finally:
        spark.sql("DROP TABLE facts_parts")


def test_a_bucketed_and_sorted_table(spark):
    spark.sql("DROP TABLE IF EXISTS facts_buckets")
    (spark.range(50).selectExpr("id AS k", "id % 5 AS v").write.bucketBy(4, "k").sortBy("v")
     .saveAsTable("facts_buckets"))
    try:
        relation, facts = only_facts(spark, spark.table("facts_buckets"))
        k, v = relation.output
        assert facts.bucketing == Bucketing((k,), 4, (v,))
    finally:
        spark.sql("DROP TABLE facts_buckets")


def test_leaves_without_files(spark):
    _, facts = only_facts(spark, spark.range(0, 30, 3))
    assert facts.format is Format.RANGE and facts.row_count == 10 and facts.files is None
    assert "no files" in facts.files_unknown
    local = spark.sql("SELECT * FROM VALUES (1, 'a'), (2, 'b') AS t(k, s)")
    _, facts = only_facts(spark, local)
    assert facts.format is Format.LOCAL and facts.row_count == 2
    cached = spark.range(7).selectExpr("id * 2 AS x").cache()
    cached.count()
    try:
        _, facts = only_facts(spark, cached)
        assert facts.format is Format.CACHED and facts.files is None
    finally:
        cached.unpersist()


def test_a_temp_view_over_a_join_gives_each_relation_its_own(spark, tmp_path):
    spark.range(6).selectExpr("id AS k").write.parquet(str(tmp_path / "a"))
    spark.read.parquet(str(tmp_path / "a")).join(spark.range(3).withColumnRenamed("id", "k"),
                                                 "k").createOrReplaceTempView("facts_joined")
    got = facts_of(spark, spark.table("facts_joined"))
    assert sorted(f.format.value for _, f in got) == ["parquet", "range"]


# -- statistics, exactly as the data says ---------------------------------------------------


def test_statistics_of_awkward_files_equal_what_the_files_hold(spark, tmp_path):
    path = tmp_path / "awk"
    schema = "id long, s string, x double, d date, ts timestamp, m decimal(20, 4)"
    rows = [(1, "naïve ☃", -0.0, dt.date(2024, 1, 1), dt.datetime(2024, 1, 1, 3), Decimal("1.5")),
            (2, "日本語", 0.0, dt.date(1999, 12, 31), dt.datetime(2026, 11, 27, 23, 10),
             Decimal("-99999999999999.9999")),
            (3, None, 2.5, None, None, None)]
    with conf(spark, {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}):
        spark.createDataFrame(rows, schema).coalesce(1).write.parquet(str(path / "part=1"))
        spark.createDataFrame([(4, None, None, None, None, None)], schema).coalesce(1) \
            .write.parquet(str(path / "part=2"))            # a file of NULLs only
        spark.createDataFrame([], schema).coalesce(1).write.parquet(str(path / "part=3"))  # empty
        spark.createDataFrame([(5,)], "id long").write.parquet(str(path / "part=4"))  # no s, x...
    df = spark.read.schema(schema + ", part int").parquet(str(path))
    relation, facts = only_facts(spark, df)
    assert_stats_match_the_data(spark, relation, facts, ["id", "s", "x", "d", "ts", "m"])


def test_nan_int96_other_writers_floats_and_collations_are_left_out(spark, tmp_path):
    with conf(spark, {"spark.sql.parquet.outputTimestampType": "INT96"}):
        spark.createDataFrame([(1.0, dt.datetime(2024, 1, 1)), (float("nan"), dt.datetime(2025, 1, 1))],
                              "x double, ts timestamp").coalesce(1).write.parquet(str(tmp_path / "nan"))
    relation, facts = only_facts(spark, spark.read.parquet(str(tmp_path / "nan")))
    x, ts = relation.output
    (f,) = facts.files
    # NaN is above every value in Spark's order, and not in a chunk's usable max.
    assert f.stats(x) is None or not f.stats(x).has_bounds
    assert f.stats(ts) is None or not f.stats(ts).has_bounds  # INT96: no order
    # Arrow leaves NaN out of a float column's min and max: not exact for Spark.
    pq.write_table(pa.table({"x": [1.0, float("nan"), 3.0], "k": [1, 2, 3]}),
                   str(tmp_path / "arrow.parquet"))
    relation, facts = only_facts(spark, spark.read.parquet(str(tmp_path / "arrow.parquet")))
    x, k = relation.output
    (f,) = facts.files
    assert f.stats(x) is None or f.stats(x).min is None
    assert (f.stats(k).min, f.stats(k).max, f.stats(k).null_count) == (1, 3, 0)
    if not spark.version.startswith("3."):
        spark.createDataFrame([("A",), ("b",)], "s string").write.parquet(str(tmp_path / "coll"))
        collated = spark.read.schema("s string collate UTF8_LCASE").parquet(str(tmp_path / "coll"))
        relation, facts = only_facts(spark, collated)
        assert all(f.stats(relation.output[0]) is None or f.stats(relation.output[0]).min is None
                   for f in facts.files)


def test_a_table_appended_to_is_seen_anew(spark, tmp_path):
    path = str(tmp_path / "grow")
    spark.range(5).coalesce(1).write.parquet(path)
    _, before = only_facts(spark, spark.read.parquet(path))
    spark.range(100, 105).coalesce(1).write.mode("append").parquet(path)
    relation, after = only_facts(spark, spark.read.parquet(path))
    assert len(after.files) == len(before.files) + 1
    assert max(f.stats(relation.output[0]).max for f in after.files) == 104


def test_the_documented_example_rules(spark, tmp_path):
    from examples import data_rules

    spark.sql("DROP TABLE IF EXISTS facts_example")
    (spark.range(30).selectExpr("id", "CAST(id % 3 AS INT) AS d").write.partitionBy("d")
     .saveAsTable("facts_example"))
    try:
        data_rules.UNFILTERED.clear()
        with rules_enabled(spark, [data_rules.unfiltered_partitioned_scans]):
            spark.table("facts_example").where("d = 1").collect()
            assert data_rules.UNFILTERED == []
            spark.table("facts_example").where("id > 3").collect()
        assert data_rules.UNFILTERED == [("spark_catalog.default.facts_example", ("d",))]
        data_rules.RANGES.clear()
        with rules_enabled(spark, [data_rules.file_ranges]):
            spark.table("facts_example").where("d = 2").collect()
        assert sorted((lo, hi) for _, lo, hi in data_rules.RANGES["id"]) == \
            sorted((r.lo, r.hi) for r in spark.table("facts_example").where("d = 2")
                   .groupBy(F.col("_metadata.file_path")).agg(F.min("id").alias("lo"),
                                                               F.max("id").alias("hi")).collect())
    finally:
        spark.sql("DROP TABLE facts_example")
