"""sparkext beside Delta Lake (issue 14, item 6): pyspark 4.2.0 + delta-spark 4.4.0, the
Delta jars from Maven Central through ``spark.jars.packages`` (Ivy cache outside the tree).

Three applications run (eco_delta_app.py): Delta alone, and Delta with sparkext with the
two extension classes in each order, built through ``sparkext.configure()`` and Delta's
``configure_spark_with_delta_pip`` nested both ways. Each writes a Delta table, MERGEs and
UPDATEs it, reads it, and runs two sorted queries that sparkext's ordering rules rewrite.
The hazards: configure() losing Delta's extension or jars (or Delta's helper losing
sparkext's), sparkext's rules breaking Delta's own plans (strict mode raises), sparkext's
rules not reaching a plan over a Delta table, and other rows than Delta alone gives.

Runs in a venv with delta-spark (the compat environment table); elsewhere it skips.
"""

from __future__ import annotations

import pytest

pytest.importorskip("delta", reason="needs delta-spark (make test-compat's Delta venv)")

from tests.compat.eco_runs import (  # noqa: E402
    KEYS,
    assert_plain,
    assert_rewritten,
    extension_orders,
    run_modes,
)

DELTA = "io.delta.sql.DeltaSparkSessionExtension"
WITH_SPARKEXT = extension_orders("delta-first", DELTA)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return run_modes("eco_delta_app.py", ["plain", *WITH_SPARKEXT],
                     tmp_path_factory.mktemp("delta"))


@pytest.mark.parametrize("query", KEYS)
def test_plain_delta_keeps_both_sorts(runs, query):
    assert_plain(runs["plain"], query, DELTA)


@pytest.mark.parametrize("mode", WITH_SPARKEXT)
def test_both_extensions_reach_the_session_in_the_order_given(runs, mode):
    assert runs[mode]["extensions"] == WITH_SPARKEXT[mode]


@pytest.mark.parametrize("mode", WITH_SPARKEXT)
def test_delta_merge_and_update_work_beside_sparkext(runs, mode):
    # DESCRIBE HISTORY is Delta's parser extension; UPDATE on a Delta path needs Delta's
    # analysis rules. sparkext's rules ran over the MERGE's and UPDATE's own plans.
    assert runs[mode]["history"] == ["WRITE", "MERGE", "UPDATE"]
    assert runs[mode]["table"] == runs["plain"]["table"]


@pytest.mark.parametrize("query", KEYS)
@pytest.mark.parametrize("mode", WITH_SPARKEXT)
def test_sorted_query_over_delta_rewritten_with_the_same_rows(runs, mode, query):
    assert_rewritten(runs[mode], runs["plain"], query)


# -- files and exact statistics from Delta's log (needs=("files",)) --------------------------
# In this pytest process, after the applications above have exited: one session with Delta
# and sparkext (``spark`` here overrides the plugin's, for this module only).

import datetime as dt  # noqa: E402

from pyspark.sql import functions as F  # noqa: E402

from sparkext import rule  # noqa: E402
from sparkext.facts import Format, TableId  # noqa: E402
from sparkext.plan import Relation  # noqa: E402
from tests.compat.eco_app import IVY_DIR  # noqa: E402
from tests.conftest import conf, rules_enabled  # noqa: E402
from tests.test_relation_facts import jvm_leaf, local, same_value  # noqa: E402

FACTS_SCHEMA = "id long, d date, s string, ts timestamp, x double, n int, part int"
#: Integral, date and double columns: exact min and max. Strings (a prefix, the max with a
#: tie-breaker) and timestamps (milliseconds, the max + 1 ms): NULL counts only.
EXACT, COUNTED = ("id", "d", "x", "n"), ("s", "ts")


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    import sparkext
    from sparkext.testing.session import TEST_CONF

    builder = SparkSession.builder
    settings = {**TEST_CONF, "spark.sql.extensions": DELTA,
                "spark.sql.catalog.spark_catalog":
                    "org.apache.spark.sql.delta.catalog.DeltaCatalog",
                "spark.databricks.delta.snapshotPartitions": "2",
                "spark.sql.warehouse.dir": str(tmp_path_factory.mktemp("delta-warehouse")),
                "spark.jars.ivy": IVY_DIR,
                "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = configure_spark_with_delta_pip(sparkext.configure(builder)).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    sparkext.enable(session)
    yield session
    session.stop()


def _batches():
    """Four appends, one file per partition each: a file whose ``n`` is all NULL, NULLs in
    every column, a NaN (no bounds for ``x`` in its file), negative values."""
    t = dt.datetime
    return [
        [(1, dt.date(2024, 1, 1), "a", t(2024, 1, 1, 3, 0, 0, 123456), 1.5, 10, 1),
         (2, dt.date(2024, 3, 1), "bé", t(2024, 2, 1), -2.25, None, 1),
         (3, None, None, None, None, 30, 2)],
        [(4, dt.date(1999, 12, 31), "zz" * 30, t(1999, 1, 1, 0, 0, 0, 1), 0.0, None, 1),
         (5, dt.date(2000, 1, 1), "x", t(2030, 1, 1), 7.0, None, 1)],
        [(-6, dt.date(2024, 6, 6), "☃", t(2024, 6, 6), float("nan"), -7, 2),
         (7, None, "q", None, 3.0, 8, 3)],
        [(8, dt.date(2025, 1, 1), None, t(2025, 1, 1), 100.0, 1, 3)],
    ]


def only_facts(spark, df):
    """The Delta relation of ``df`` and its facts (tests/test_relation_facts.py's
    ``only_facts`` keeps the last plan the rule saw: Delta plans queries of its own, over
    its log's state, while ``df`` runs, and the rule sees those too)."""
    seen: list = []

    @rule(needs=("files",))
    def record(plan):
        seen.extend(n for n in plan.walk() if isinstance(n, Relation))
        return plan

    with rules_enabled(spark, [record]):
        df.collect()
    found = [(r, r.facts) for r in seen if r.facts.format is Format.DELTA]
    assert found, [r.facts.format for r in seen]
    return found[0]


def _by_name(relation, facts) -> dict:
    """Each file's facts with columns by name (expression ids differ between DataFrames)."""
    name = {a.expr_id: a.name for a in relation.output}
    return {f.path: (f.size, f.modification_time, f.row_count,
                     {name[k]: v for k, v in f.partition_values.items()},
                     {name[k]: v for k, v in f.columns.items()}) for f in facts.files}


def _per_file(df, path, columns) -> dict:
    """Each file's rows, partition value, and per column (min, max, NULL count), as Spark
    computes them from the file's rows."""
    aggs = [F.count(F.lit(1)).alias("rows"), F.first("part").alias("part")]
    for c in columns:
        aggs += [F.min(c).alias(f"{c}_min"), F.max(c).alias(f"{c}_max"),
                 F.count(F.when(F.col(c).isNull(), 1)).alias(f"{c}_nulls")]
    return {local(r.p): r for r in df.groupBy(path.alias("p")).agg(*aggs).collect()}


def _assert_files_match(spark, df, relation, facts):
    by_name = {a.name: a for a in relation.output}
    read = _per_file(df, F.col("_metadata.file_path"), EXACT + COUNTED)
    assert facts.files_unknown is None and facts.files, facts.files_unknown
    assert {local(f.path) for f in facts.files} == set(read)
    for f in facts.files:
        got = read[local(f.path)]
        assert f.row_count == got["rows"], f.path
        assert f.modification_time > 0 and f.size > 0
        assert f.partition_value(by_name["part"]) == got["part"]
        assert f.stats(by_name["part"]) is None  # a partition column: its value, not stats
        for c in EXACT + COUNTED:
            s = f.stats(by_name[c])
            assert s is not None and s.null_count == got[f"{c}_nulls"], (f.path, c, s)
            lo, hi = got[f"{c}_min"], got[f"{c}_max"]
            if c in COUNTED or (c == "x" and isinstance(hi, float) and hi != hi):
                assert s.min is None and s.max is None, (f.path, c, s)
            else:
                assert same_value(s.min, lo) and same_value(s.max, hi), (f.path, c, s, lo, hi)


def test_a_rule_sees_the_delta_files_with_exact_statistics(spark):
    spark.sql("DROP TABLE IF EXISTS lake_delta")
    for rows in _batches():
        (spark.createDataFrame(rows, FACTS_SCHEMA).repartition(1, "part").write.format("delta")
         .mode("append").partitionBy("part").saveAsTable("lake_delta"))
    try:
        df = spark.table("lake_delta")
        relation, facts = only_facts(spark, df)
        whole = relation, facts
        assert facts.format is Format.DELTA
        assert facts.table == TableId("spark_catalog", ("default",), "lake_delta")
        assert [a.name for a in facts.partition_columns] == ["part"]
        assert len(facts.files) == 6  # 4 appends over 2, 1, 2 and 1 partitions
        _assert_files_match(spark, df, relation, facts)
        # The NULL-only file of n: its NULL count is its rows, and it has no bounds.
        n = next(a for a in relation.output if a.name == "n")
        assert any(f.stats(n).null_count == f.row_count and f.stats(n).min is None
                   for f in facts.files)

        # A partition filter: Delta's matchingFiles keeps the partition's files only.
        pruned = df.where("part = 1 AND id > 0")
        relation, facts = only_facts(spark, pruned)
        part = facts.partition_columns[0]
        assert len(facts.files) == 2 and {f.partition_value(part) for f in facts.files} == {1}
        assert {local(f.path) for f in facts.files} == \
            {local(r.p) for r in pruned.select(F.col("_metadata.file_path").alias("p")).collect()}

        # Delta's PrepareDeltaScan ran before sparkext's rule (its extension comes first):
        # the index was a PreparedDeltaFileIndex. Without it (stats skipping off) the rule
        # meets the TahoeLogFileIndex, and the same files.
        def index_of(frame):
            return jvm_leaf(frame).relation().location().getClass().getSimpleName()
        assert index_of(df) == index_of(pruned) == "PreparedDeltaFileIndex"
        with conf(spark, {"spark.databricks.delta.stats.skipping": "false"}):
            # New DataFrames each time: a DataFrame keeps the plan it optimized first.
            assert index_of(spark.table("lake_delta")) == "TahoeLogFileIndex"
            for where, prepared in (("true", whole), ("part = 1 AND id > 0", (relation, facts))):
                logged = only_facts(spark, spark.table("lake_delta").where(where))
                assert _by_name(*logged) == _by_name(*prepared)
    finally:
        spark.sql("DROP TABLE lake_delta")


def test_a_delta_listing_is_kept_per_table_version(spark, tmp_path):
    """Listing a Delta table's files runs Spark jobs over its log: a table version's
    listing is kept, and a new version (an append) is listed anew, with its new file."""
    path = str(tmp_path / "kept")
    first, *later = _batches()
    spark.createDataFrame(first, FACTS_SCHEMA).coalesce(1).write.format("delta").save(path)
    made = spark._jvm.io.sparkext.TestingSupport.deltaListingsMade

    def files() -> tuple[int, int]:
        before = made()
        _, facts = only_facts(spark, spark.read.format("delta").load(path))
        return len(facts.files), made() - before

    assert files() == (1, 1)
    assert files() == (1, 0)   # the same version, read again: kept
    spark.createDataFrame(later[0], FACTS_SCHEMA).coalesce(1).write.format("delta") \
        .mode("append").save(path)
    assert files() == (2, 1)


@pytest.mark.parametrize("query, listed", [
    # bounded on a timestamp, a string: Delta's log holds no exact min/max of those
    ("top-K on a timestamp", False),
    ("max of a string", False),
    ("min of a timestamp and a count", False),
    # exact: a long, a date; a string partition column's values are the partition's
    ("top-K on a long", True),
    ("max of a long and a count", True),
    ("min of a date", True),
    ("top-K on a string partition column", True),
    ("count alone", True),
])
def test_delta_files_are_listed_only_for_statistics_the_log_keeps_exactly(spark, tmp_path,
                                                                         query, listed):
    """The statistics rules' pre-checks list a Delta table's files (a Spark job over its
    log) only where its log may bound the value exactly: not for a top-K or min/max of a
    timestamp or string (the first query of each table version would pay for nothing). The
    rows are Delta's either way."""
    path = str(tmp_path / "bounded")
    for rows in _batches():
        (spark.createDataFrame(rows, FACTS_SCHEMA).withColumn("k", F.concat(F.lit("k"), "part"))
         .repartition(1, "k").write.format("delta").partitionBy("k").mode("append").save(path))
    df = spark.read.format("delta").load(path)
    pipeline = {
        "top-K on a timestamp": lambda: df.orderBy(F.desc("ts")).limit(2),
        "max of a string": lambda: df.agg(F.max("s")),
        "min of a timestamp and a count": lambda: df.agg(F.min("ts"), F.count("*")),
        "top-K on a long": lambda: df.orderBy(F.desc("id")).limit(2),
        "max of a long and a count": lambda: df.agg(F.max("id"), F.count("*")),
        "min of a date": lambda: df.agg(F.min("d")),
        "top-K on a string partition column": lambda: df.orderBy(F.desc("k"), "id").limit(2),
        "count alone": lambda: df.agg(F.count("*")),
    }[query]
    testing = spark._jvm.io.sparkext.TestingSupport
    # (Delta answers count, min and max of some types from its log itself, before sparkext
    # sees a scan: switched off, so that every aggregate here reaches the pre-check)
    with conf(spark, {"spark.databricks.delta.optimizeMetadataQuery.enabled": "false"}):
        testing.clearFooterCache()
        before = testing.deltaListingsMade()
        rows = pipeline().collect()
        assert (testing.deltaListingsMade() > before) is listed
        with conf(spark, {"spark.sparkext.enabled": "false"}):
            assert rows == pipeline().collect()


def test_delta_column_mapping_and_deletion_vectors(spark, tmp_path):
    # Column mapping: the log keys partition values and stats by physical names (col-<uuid>),
    # not the columns' names. A deletion vector: the file's stats count deleted rows.
    path = str(tmp_path / "mapped")
    spark.sql(f"""CREATE TABLE delta.`{path}` (id long, d date, s string, ts timestamp,
                  x double, n int, part int) USING delta PARTITIONED BY (part)
                  TBLPROPERTIES ('delta.columnMapping.mode' = 'name',
                                 'delta.enableDeletionVectors' = 'true')""")
    for rows in _batches():
        (spark.createDataFrame(rows, FACTS_SCHEMA).repartition(1, "part").write.format("delta")
         .mode("append").save(path))
    df = spark.read.format("delta").load(path)
    relation, facts = only_facts(spark, df)
    assert facts.format is Format.DELTA and facts.table is None
    _assert_files_match(spark, df, relation, facts)

    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 2")
    with_dv = {r.add.path for r in spark.read.json(f"{path}/_delta_log/*.json")
               .where("add.deletionVector IS NOT NULL").select("add").collect()}
    assert len(with_dv) == 1, "the DELETE must write a deletion vector"
    df = spark.read.format("delta").load(path)
    relation, facts = only_facts(spark, df)
    unknown = [f for f in facts.files if f.row_count is None]
    assert [f.path.rsplit("/", 1)[1] for f in unknown] == [p.rsplit("/", 1)[1] for p in with_dv]
    assert unknown[0].columns == {}
    known = [f for f in facts.files if f.row_count is not None]
    assert len(known) == len(facts.files) - 1
    read = _per_file(df, F.col("_metadata.file_path"), ["id"])
    assert all(f.row_count == read[local(f.path)]["rows"] for f in known)
