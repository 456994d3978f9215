"""sparkext beside Apache Iceberg (issue 14, item 6): pyspark 4.1.x +
``org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0`` from Maven Central through
``spark.jars.packages`` (Ivy cache outside the tree), a Hadoop catalog in a temp folder.

Three applications run (eco_iceberg_app.py): Iceberg alone, and Iceberg with sparkext with
the two extension classes in each order: Iceberg's jar and class in ``PYSPARK_SUBMIT_ARGS``
(``--jars``, ``--conf``) with ``sparkext.configure()`` adding to them, and both named on
the builder. Each creates a table, sets its write order with Iceberg's SQL extension,
MERGEs and UPDATEs it, reads it, and runs two sorted queries that sparkext's ordering
rules rewrite. The hazards: configure() replacing Iceberg's extension or jar, or losing
its own jar to spark-submit's ``--jars``; sparkext's rules breaking Iceberg's row-level
plans or dropping the sort Iceberg asks its writes for, or not reaching a plan over an
Iceberg table; other rows than Iceberg alone gives.

Runs in a pyspark 4.1 venv (the compat environment table); elsewhere it skips.
"""

from __future__ import annotations

import pyspark
import pytest

if not pyspark.__version__.startswith("4.1."):
    pytest.skip(f"the Iceberg 1.12 runtime is built for Spark 4.1, this is pyspark "
                f"{pyspark.__version__} (make test-compat's Iceberg venv)",
                allow_module_level=True)

from tests.compat.eco_runs import (  # noqa: E402
    KEYS,
    assert_plain,
    assert_rewritten,
    extension_orders,
    run_modes,
)

ICEBERG = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
WITH_SPARKEXT = extension_orders("iceberg-first", ICEBERG)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return run_modes("eco_iceberg_app.py", ["plain", *WITH_SPARKEXT],
                     tmp_path_factory.mktemp("iceberg"))


@pytest.mark.parametrize("query", KEYS)
def test_plain_iceberg_keeps_both_sorts(runs, query):
    assert_plain(runs["plain"], query, ICEBERG)


@pytest.mark.parametrize("mode", WITH_SPARKEXT)
def test_both_extensions_reach_the_session_in_the_order_given(runs, mode):
    assert runs[mode]["extensions"] == WITH_SPARKEXT[mode]


@pytest.mark.parametrize("mode", ["plain", *WITH_SPARKEXT])
def test_iceberg_merge_and_update_work_and_keep_the_write_order(runs, mode):
    run = runs[mode]
    assert run["history"] == ["append", "overwrite", "overwrite"]
    # Sort order 1 is the one ALTER TABLE ... WRITE ORDERED BY set (Iceberg's extension);
    # the files' rows in that order mean the sort Iceberg added to each write ran.
    assert run["file sort orders"] == [1]
    assert run["files in write order"]
    assert run["table"] == runs["plain"]["table"]


@pytest.mark.parametrize("query", KEYS)
@pytest.mark.parametrize("mode", WITH_SPARKEXT)
def test_sorted_query_over_iceberg_rewritten_with_the_same_rows(runs, mode, query):
    assert_rewritten(runs[mode], runs["plain"], query)


# -- files and exact statistics from Iceberg's manifests (needs=("files",)) -------------------
# In this pytest process, after the applications above have exited: one session with Iceberg
# and sparkext (``spark`` here overrides the plugin's, for this module only).

import datetime as dt  # noqa: E402

from pyspark.sql import functions as F  # noqa: E402

from sparkext.facts import Format, TableId  # noqa: E402
from tests.compat.eco_app import IVY_DIR  # noqa: E402
from tests.conftest import conf  # noqa: E402
from tests.test_relation_facts import local, only_facts, same_value  # noqa: E402

ICEBERG_PACKAGE = "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0"
LAKE = "local.db.lake"
FACTS_SCHEMA = "id long, d date, s string, ts timestamp, x double, n int, part int"
#: Exact min and max from the manifests (timestamps too: microseconds, whole); strings are
#: truncated to 16 characters by Iceberg's default metrics mode: NULL counts only.
EXACT, COUNTED = ("id", "d", "ts", "x", "n", "part"), ("s",)
#: The table the guards judge (the session's launch settings), partitioned by days(ts), kind.
GUARDED = "local.db.guarded"


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    from pyspark.sql import SparkSession

    import sparkext
    from sparkext.testing.session import TEST_CONF

    builder = SparkSession.builder
    settings = {**TEST_CONF, "spark.sql.extensions": ICEBERG,
                "spark.jars.packages": ICEBERG_PACKAGE, "spark.jars.ivy": IVY_DIR,
                "spark.sql.catalog.local": "org.apache.iceberg.spark.SparkCatalog",
                "spark.sql.catalog.local.type": "hadoop",
                "spark.sql.catalog.local.warehouse":
                    str(tmp_path_factory.mktemp("iceberg-warehouse")),
                # (static: the guards are fixed when the context starts; only GUARDED is
                # judged for partition filters, and limit_scans only warns)
                "spark.sparkext.guards.partitionFilter.tables": GUARDED,
                "spark.sparkext.guards.maxScan.partitions": "2",
                "spark.sparkext.guards.maxScan.mode": "warn",
                "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = sparkext.configure(builder).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    sparkext.enable(session)
    yield session
    session.stop()


def _batches():
    """Four appends, one file per partition each: a file whose ``n`` is all NULL, NULLs in
    every column, a NaN (no bounds for ``x`` in its file), a string over 16 characters."""
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


def _create(spark, properties: str = "") -> None:
    spark.sql(f"DROP TABLE IF EXISTS {LAKE}")
    spark.sql(f"CREATE TABLE {LAKE} (id bigint, d date, s string, ts timestamp, x double, "
              f"n int, part int) USING iceberg PARTITIONED BY (part) {properties}")
    for rows in _batches():
        spark.createDataFrame(rows, FACTS_SCHEMA).writeTo(LAKE).append()


def _per_file(df, columns) -> dict:
    """Each file's rows, partition value, and per column (min, max, NULL count), as Spark
    computes them from the file's rows (``_file``: Iceberg's metadata column)."""
    aggs = [F.count(F.lit(1)).alias("rows"), F.first("part").alias("part_value")]
    for c in columns:
        aggs += [F.min(c).alias(f"{c}_min"), F.max(c).alias(f"{c}_max"),
                 F.count(F.when(F.col(c).isNull(), 1)).alias(f"{c}_nulls")]
    return {local(r.p): r for r in df.groupBy(F.col("_file").alias("p")).agg(*aggs).collect()}


def test_a_rule_sees_the_iceberg_files_with_exact_statistics(spark):
    _create(spark)
    try:
        df = spark.table(LAKE)
        relation, facts = only_facts(spark, df)
        assert facts.format is Format.ICEBERG
        assert facts.table == TableId("local", ("db",), "lake")
        assert [a.name for a in facts.partition_columns] == ["part"]
        by_name = {a.name: a for a in relation.output}
        read = _per_file(df, EXACT + COUNTED)
        assert facts.files_unknown is None and len(facts.files) == 6, facts.files_unknown
        assert {local(f.path) for f in facts.files} == set(read)
        for f in facts.files:
            got = read[local(f.path)]
            assert f.row_count == got["rows"] and f.size > 0, f.path
            assert f.partition_value(by_name["part"]) == got["part_value"]
            for c in EXACT + COUNTED:
                s = f.stats(by_name[c])
                assert s is not None and s.null_count == got[f"{c}_nulls"], (f.path, c, s)
                lo, hi = got[f"{c}_min"], got[f"{c}_max"]
                if c in COUNTED or (c == "x" and isinstance(hi, float) and hi != hi):
                    assert s.min is None and s.max is None, (f.path, c, s)
                else:
                    assert same_value(s.min, lo) and same_value(s.max, hi), (f.path, c, s, lo, hi)
        n = by_name["n"]
        assert any(f.stats(n).null_count == f.row_count and f.stats(n).min is None
                   for f in facts.files)

        # A partition filter, converted to Iceberg's (SparkFilters) and planned with the scan.
        pruned = df.where("part = 1 AND id > 0")
        relation, facts = only_facts(spark, pruned)
        part = facts.partition_columns[0]
        assert len(facts.files) == 2 and {f.partition_value(part) for f in facts.files} == {1}
        assert {local(f.path) for f in facts.files} == \
            {local(r.p) for r in pruned.select(F.col("_file").alias("p")).collect()}
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {LAKE}")


def test_iceberg_files_with_delete_files_give_no_counts(spark):
    # Merge-on-read DELETE writes a delete file: the data file's counts and bounds then
    # describe rows the scan no longer returns.
    _create(spark, "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')")
    try:
        (deleted_from,) = {local(r.p) for r in spark.table(LAKE).where("id = 2")
                           .select(F.col("_file").alias("p")).collect()}
        spark.sql(f"DELETE FROM {LAKE} WHERE id = 2")
        assert spark.sql(f"SELECT count(*) FROM {LAKE}.delete_files").first()[0] >= 1
        df = spark.table(LAKE)
        relation, facts = only_facts(spark, df)
        unknown = [f for f in facts.files if f.row_count is None]
        assert [local(f.path) for f in unknown] == [deleted_from]
        assert unknown[0].columns == {}
        read = _per_file(df, ["id"])
        assert all(f.row_count == read[local(f.path)]["rows"]
                   for f in facts.files if f.row_count is not None)
        assert len(facts.files) == 6
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {LAKE}")


def test_iceberg_time_travel_and_schema_evolution(spark):
    # Columns are matched by field id in the schema the relation was loaded with: a renamed
    # column keeps its statistics, a column added later has none in the older files (they
    # read it as its default), and a time-travel read lists its snapshot's files.
    _create(spark)
    try:
        first = spark.sql(f"SELECT snapshot_id FROM {LAKE}.snapshots "
                          "ORDER BY committed_at").first()[0]
        spark.sql(f"ALTER TABLE {LAKE} RENAME COLUMN n TO n2")
        spark.sql(f"ALTER TABLE {LAKE} ADD COLUMN later int")
        (spark.createDataFrame([(9, None, "w", None, 1.0, 5, 1, 42)],
                               FACTS_SCHEMA.replace("n int", "n2 int") + ", later int")
         .writeTo(LAKE).append())
        df = spark.table(LAKE)
        relation, facts = only_facts(spark, df)
        by_name = {a.name: a for a in relation.output}
        read = _per_file(df, ["n2", "later"])
        assert len(facts.files) == 7
        for f in facts.files:
            got = read[local(f.path)]
            n2, later = f.stats(by_name["n2"]), f.stats(by_name["later"])
            assert n2.null_count == got["n2_nulls"]
            assert same_value(n2.min, got["n2_min"]) and same_value(n2.max, got["n2_max"])
            if f.row_count == 1 and got["later_max"] == 42:
                assert (later.min, later.max, later.null_count) == (42, 42, 0)
            else:
                assert later is None, (f.path, later)

        then = spark.sql(f"SELECT * FROM {LAKE} VERSION AS OF {first}")
        relation, facts = only_facts(spark, then)
        assert [a.name for a in relation.output] == ["id", "d", "s", "ts", "x", "n", "part"]
        n = relation.output[5]
        read = _per_file(then, ["n"])
        assert len(facts.files) == 2 and {local(f.path) for f in facts.files} == set(read)
        for f in facts.files:
            got = read[local(f.path)]
            assert f.row_count == got["rows"]
            assert f.stats(n).null_count == got["n_nulls"]
            assert same_value(f.stats(n).min, got["n_min"])
            assert same_value(f.stats(n).max, got["n_max"])
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {LAKE}")


# -- guards over Iceberg's scans ----------------------------------------------------------------
# Guards judge the optimized plan, where Iceberg's relation is a scan Spark built
# (DataSourceV2ScanRelation): the filters Iceberg took are in it, and Spark dropped from the
# plan those Iceberg applies in full.

def _guarded_rows() -> list[tuple]:
    """16 rows over 4 days and 3 kinds: all 12 (day, kind) partitions."""
    return [(i, dt.datetime(2024, 1, 1 + i % 4, i % 24), "abc"[i % 3]) for i in range(16)]


def _judged(spark, query: str) -> tuple[list | None, str | None, list[str]]:
    """The query's ids, or the refusal's message; and what limit_scans warned of it."""
    import sparkext

    sparkext.reset_metrics(spark)
    try:
        got, refused = sorted(r[0] for r in spark.sql(query).collect()), None
    except Exception as e:  # noqa: BLE001 - the refusal is what is checked
        got, refused = None, str(e)
    return got, refused, sparkext.metrics(spark)["guards"]["limit_scans"]["reasons"]


def test_guards_judge_an_iceberg_scan_by_the_filters_iceberg_took(spark):
    spark.sql(f"DROP TABLE IF EXISTS {GUARDED}")
    spark.sql(f"CREATE TABLE {GUARDED} (id bigint, ts timestamp, kind string) USING iceberg "
              "PARTITIONED BY (days(ts), kind)")
    try:
        rows = _guarded_rows()
        spark.createDataFrame(rows, "id bigint, ts timestamp, kind string").writeTo(GUARDED).append()

        def ids(keep) -> list[int]:
            return sorted(i for i, ts, kind in rows if keep(ts, kind))

        spark.createDataFrame([(dt.datetime(2024, 1, 2, 1),)], "t timestamp") \
            .createOrReplaceTempView("times")
        for query in (f"SELECT count(*) FROM {GUARDED} GROUP BY kind",
                      f"SELECT id FROM {GUARDED} WHERE id > 3",
                      # (Spark infers ts IS NOT NULL and Iceberg takes it: not a restriction)
                      f"SELECT g.id FROM {GUARDED} g JOIN times ON g.ts = times.t"):
            got, refused, _ = _judged(spark, query)
            assert got is None and "SPARKEXT_QUERY_REFUSED" in refused, (query, got)
            assert f"{GUARDED} is partitioned by days(ts), kind and read without a filter " \
                   "on them" in refused, refused
        # Answered from Iceberg's manifests, by Iceberg's aggregate push-down (a LocalScan)
        # or by sparkext's statistics rule: no data file is read, nothing to refuse.
        for rules in (True, False):
            with conf(spark, {"spark.sparkext.enabled": str(rules).lower()}):
                got, refused, warned = _judged(spark, f"SELECT count(*) FROM {GUARDED}")
            assert refused is None and got == [len(rows)] and warned == [], (rules, refused)

        # A filter on the source column of the hidden partitioning restricts: one day.
        day = f"ts >= '2024-01-02' AND ts < '2024-01-03'"
        got, refused, warned = _judged(spark, f"SELECT id FROM {GUARDED} WHERE {day}")
        assert refused is None and got == ids(lambda ts, k: ts.day == 2)
        assert warned == ["its scans read 3 partitions, over the limit of 2"]
        # An identity partition column: one kind over four days.
        got, refused, warned = _judged(spark, f"SELECT id FROM {GUARDED} WHERE kind = 'a'")
        assert refused is None and got == ids(lambda ts, k: k == "a")
        assert warned == ["its scans read 4 partitions, over the limit of 2"]
        # Both: one partition, within the limit.
        got, refused, warned = _judged(
            spark, f"SELECT id FROM {GUARDED} WHERE {day} AND kind = 'b' AND id >= 0")
        assert refused is None and got == ids(lambda ts, k: ts.day == 2 and k == "b")
        assert warned == []
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {GUARDED}")
