"""Sort elimination on real Spark plans: pipelines with a redundant sort, and pipelines
where every sort must stay.

Each case runs three ways: plain Spark (N), sparkext on (S), and sparkext on with
Catalyst's EliminateSorts excluded (S-). Sorts are counted in the optimized plan and in
the plan as written (after cached data is substituted). Rows must come back in the same
order as in N (the sequence of sort-key values is identical and the rows are the same
multiset). Redundant cases lose a sort in S and S-; necessary ones keep every sort. A
summary (Spark alone removes the sort / only sparkext does / the sort rightly stays) is
printed.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

import sparkext
from tests.conftest import conf, jvm_nodes, report
from tests.rows import assert_same_rows, collect

ELIMINATE_SORTS_OFF = {
    "spark.sql.optimizer.excludedRules":
        "org.apache.spark.sql.catalyst.optimizer.EliminateSorts",
}
MODES = {
    "N": {"spark.sparkext.enabled": "false"},
    "S": {"spark.sparkext.enabled": "true"},
    "S-": {"spark.sparkext.enabled": "true", **ELIMINATE_SORTS_OFF},
}


@pytest.fixture(scope="module")
def sources(spark, tables):
    """Sorted data as notebooks have it: cached after a sort, checkpointed, ranges."""
    sparkext.enable(spark)
    events = spark.table("events")
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        by_ts = events.orderBy("ts").cache()
        by_ts.count()
        by_host_ts = events.orderBy("host", "ts").cache()
        by_host_ts.count()
    # With adaptive execution on, Spark 4.3 records neither ordering nor partitioning
    # for a checkpoint (it reads them off the adaptive plan, which knows neither).
    with conf(spark, {"spark.sparkext.enabled": "false", "spark.sql.adaptive.enabled": "false"}):
        checkpointed = events.orderBy("ts").localCheckpoint()
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        people_by_id = spark.table("people").orderBy("id").cache()
        people_by_id.count()
        # w: DECIMAL(38,18) values that differ only in their 18th decimal digit.
        by_wide_ts = events.select(F.expr(
            "CAST(CONCAT('0.', LPAD(CAST(eid % 10 AS STRING), 18, '0')) AS DECIMAL(38,18))"
        ).alias("w"), "ts").orderBy("w", "ts").cache()
        by_wide_ts.count()
        # A cached table: each read of it is analysed anew, with new ids for its columns.
        spark.sql("CACHE TABLE cached_by_ts AS SELECT * FROM events ORDER BY ts")
    yield {"by_ts": by_ts, "by_host_ts": by_host_ts, "checkpointed": checkpointed,
           "people_by_id": people_by_id, "events": events, "by_wide_ts": by_wide_ts,
           "cached_table": lambda: spark.table("cached_by_ts")}
    for df in (by_ts, by_host_ts, people_by_id, by_wide_ts):
        df.unpersist()
    spark.sql("UNCACHE TABLE IF EXISTS cached_by_ts")


def HOUR():
    return F.date_trunc("hour", F.col("ts"))


# name -> (pipeline, sort keys to compare the row order on)
REDUNDANT = {
    "cached sorted: the same order": (lambda s: s["by_ts"].orderBy("ts"), ["ts"]),
    "cached sorted: a constant host first": (
        lambda s: s["by_ts"].where("host = 'h1'").orderBy("host", "ts"), ["host", "ts"]),
    "cached sorted: hour of the timestamp, then the timestamp": (
        lambda s: s["by_ts"].orderBy(HOUR(), "ts"), ["ts"]),
    "cached sorted: hour of the timestamp alone": (
        lambda s: s["by_ts"].withColumn("h", HOUR()).orderBy("h"), ["h"]),
    "cached sorted: an alias of the sort column": (
        lambda s: s["by_ts"].select("eid", F.col("ts").alias("t2")).orderBy("t2"), ["t2"]),
    "cached sorted: to_date then the timestamp": (
        lambda s: s["by_ts"].orderBy(F.to_date("ts"), "ts"), ["ts"]),
    "cached sorted: a literal column first": (
        lambda s: s["by_ts"].select("ts", F.lit(1).alias("one")).orderBy("one", "ts"), ["ts"]),
    "cached sorted: a column that is NULL on every row": (
        lambda s: s["by_ts"].where("kind IS NULL").orderBy("kind", "ts"), ["ts"]),
    "cached sorted: after a filter": (
        lambda s: s["by_ts"].where("amount > 0").orderBy("ts"), ["ts"]),
    "cached sorted: after a projection and a filter": (
        lambda s: s["by_ts"].select("eid", "ts").where("eid > 3").orderBy("ts"), ["ts"]),
    "cached sorted by two keys: the first one constant": (
        lambda s: s["by_host_ts"].where("host = 'h2'").orderBy("ts"), ["ts"]),
    "cached sorted: year of the date, then the timestamp": (
        lambda s: s["by_ts"].orderBy(F.year(F.to_date("ts")), "ts"), ["ts"]),
    "cached sorted: a constant day then the timestamp": (
        lambda s: s["by_ts"].withColumn("day", F.to_date("ts"))
        .where("day = DATE'2024-01-01'").orderBy("day", "ts"), ["ts"]),
    "cached sorted: descending host, when host is constant": (
        lambda s: s["by_ts"].where("host = 'h3'").orderBy(F.desc("host"), "ts"), ["ts"]),
    "cached sorted: a sort key that is NULL-free on a nullable column": (
        lambda s: s["people_by_id"].where("id IS NOT NULL").orderBy(F.asc_nulls_last("id")),
        ["id"]),
    "cached sorted: a constant department then the id": (
        lambda s: s["people_by_id"].where("dept_id = 10").orderBy("dept_id", "id"), ["id"]),
    "cached table sorted: the same order, read anew": (
        lambda s: s["cached_table"]().orderBy("ts"), ["ts"]),
    "cached table sorted: a constant host first, read anew": (
        lambda s: s["cached_table"]().where("host = 'h1'").orderBy("host", "ts"), ["ts"]),
    "checkpointed sorted: the same order": (
        lambda s: s["checkpointed"].orderBy("ts"), ["ts"]),
    "checkpointed sorted: a constant host first": (
        lambda s: s["checkpointed"].where("host = 'h1'").orderBy("host", "ts"), ["ts"]),
    "range: by id": (lambda s: s["spark"].range(0, 200, 1, 4).orderBy("id"), ["id"]),
    "range: id plus one": (
        lambda s: s["spark"].range(0, 200, 1, 4).select((F.col("id") + 1).alias("x"))
        .orderBy("x"), ["x"]),
    "range: id times two": (
        lambda s: s["spark"].range(0, 200, 1, 4).orderBy(F.col("id") * 2), ["id"]),
    "range: minus id, descending": (
        lambda s: s["spark"].range(0, 200, 1, 4).orderBy(F.desc(-F.col("id"))), ["id"]),
    "range: a widening cast to decimal": (
        lambda s: s["spark"].range(0, 200, 1, 4).orderBy(F.col("id").cast("decimal(30,0)")),
        ["id"]),
    "range: id then id plus one": (
        lambda s: s["spark"].range(0, 200, 1, 4).orderBy("id", F.col("id") + 1), ["id"]),
    "range: an affine function of id": (
        lambda s: s["spark"].range(0, 200, 1, 4).select((F.col("id") * 3 + 1).alias("y"))
        .orderBy("y"), ["y"]),
    "range: two aliases of id, sorted by the second": (
        lambda s: s["spark"].range(0, 200, 1, 4).select(F.col("id").alias("a"),
                                                        F.col("id").alias("b")).orderBy("b"),
        ["b"]),
    "a sort within partitions after a global sort on the same keys": (
        lambda s: s["events"].orderBy("ts").sortWithinPartitions("ts"), ["ts"]),
    "a sort overridden by a later sort": (
        lambda s: s["events"].orderBy("kind").orderBy("ts"), ["ts"]),
    "a sort under an order-insensitive aggregate": (
        lambda s: s["events"].orderBy("eid").groupBy("host").agg(F.max("eid").alias("m")),
        None),
    "sorting by a constant only": (
        lambda s: s["events"].where("host = 'h1'").orderBy("host").select("eid", "host"),
        None),
    "range-partitioned then sorted within partitions": (
        lambda s: s["events"].repartitionByRange(3, "ts").sortWithinPartitions("ts")
        .orderBy("ts"), ["ts"]),
    "a literal sort key": (lambda s: s["events"].orderBy(F.lit("constant")), None),
    "a sort under a DISTINCT": (
        lambda s: s["events"].orderBy("eid").select("host").distinct(), None),
    "a sort under an average of integers": (
        lambda s: s["events"].orderBy("amount").groupBy("host").agg(F.avg("eid").alias("a")),
        None),
}

def plus_one(col):
    # A Python UDF (made when called: creating one needs a running session).
    return F.udf(lambda x: None if x is None else x + 1, "long")(col)


NECESSARY = {
    "the other direction": (lambda s: s["by_ts"].orderBy(F.desc("ts")), ["ts"]),
    "a cached table read anew, sorted by another column": (
        lambda s: s["cached_table"]().orderBy("host", "eid"), ["host", "eid"]),
    "a cached table read twice and joined, sorted by the other read's column": (
        lambda s: s["cached_table"]().select("eid", "ts").join(
            s["cached_table"]().select("eid", F.col("ts").alias("ts2"), "host"), "eid")
        .orderBy("host", "ts2"), ["host", "ts2"]),
    "a sort under an aggregate list with a user's function (Catalyst keeps it too)": (
        lambda s: s["events"].orderBy("eid").groupBy("host")
        .agg(plus_one(F.max("eid")).alias("m")), []),
    "NULLS LAST on a nullable column": (
        lambda s: s["by_ts"].orderBy(F.asc_nulls_last("ts")), ["ts"]),
    "another column": (lambda s: s["by_ts"].orderBy("host", "eid"), ["host", "eid"]),
    "order lost across a join": (
        lambda s: s["by_ts"].join(s["spark"].table("people").select(
            F.col("id").alias("person_id"), "name"), "person_id").orderBy("ts"), ["ts"]),
    "order lost across an aggregate": (
        lambda s: s["by_ts"].groupBy("ts").agg(F.count("*").alias("n")).orderBy("ts"), ["ts"]),
    "order lost across a repartition": (
        lambda s: s["by_ts"].repartition(3).orderBy("ts"), ["ts"]),
    "order lost across a union": (
        lambda s: s["by_ts"].union(s["by_ts"]).orderBy("ts", "eid"), ["ts", "eid"]),
    "a function that is not monotonic (hour of day)": (
        lambda s: s["by_ts"].orderBy(F.hour("ts"), "eid"), ["eid"]),
    "a non-strict key followed by another key": (
        lambda s: s["by_ts"].orderBy(HOUR(), "eid"), ["eid"]),
    "unsorted input": (lambda s: s["events"].orderBy("kind", "eid"), ["kind", "eid"]),
    "order lost across a limit": (lambda s: s["by_ts"].limit(30).orderBy("ts"), ["ts"]),
    "a sort directly under a limit (top-k)": (lambda s: s["by_ts"].orderBy("ts").limit(7),
                                              ["ts"]),
    "sorted within partitions only": (
        lambda s: s["events"].sortWithinPartitions("ts").orderBy("ts"), ["ts"]),
    "range: a remainder": (
        lambda s: s["spark"].range(0, 200, 1, 4).orderBy(F.col("id") % 10, "id"), ["id"]),
    "range: a narrowing cast": (
        lambda s: s["spark"].range(0, 200, 1, 4).orderBy(F.col("id").cast("int"), "id"),
        ["id"]),
    "order lost across explode": (
        lambda s: s["by_ts"].select("ts", F.explode(F.array(F.lit(1), F.lit(2))).alias("k"))
        .orderBy("ts", "k"), ["ts", "k"]),
    "order lost across a window": (
        lambda s: s["by_ts"].withColumn("n", F.count("*").over(Window.partitionBy("host")))
        .orderBy("ts"), ["ts"]),
    "a sort under a limit with a random column between (top-k)": (
        lambda s: s["by_ts"].orderBy("ts").select("ts", F.rand(1).alias("r")).limit(5), ["ts"]),
    "order lost across an IN subquery (it becomes a join)": (
        lambda s: in_subquery_over_sorted(s), ["ts"]),
    "a global sort under a later local sort keeps its partitioning": (
        lambda s: s["events"].orderBy("kind").sortWithinPartitions("ts"), None),
    "floating point arithmetic on the key": (
        lambda s: s["people_by_id"].orderBy(F.col("id") + F.lit(0.5), "name"), ["id"]),
    "decimal arithmetic that rounds (precision over 38): ties on it reorder the next key": (
        lambda s: s["by_wide_ts"].select(
            (F.col("w") + F.lit(0.01).cast("decimal(3,2)")).alias("z"), "ts").orderBy("z", "ts"),
        ["z", "ts"]),
}


def in_subquery_over_sorted(s):
    s["by_ts"].createOrReplaceTempView("events_by_ts")
    return s["spark"].sql("SELECT eid, ts FROM events_by_ts "
                          "WHERE person_id IN (SELECT id FROM people WHERE age > 20) ORDER BY ts")


def count_sorts(plan) -> int:
    return sum(node.getClass().getSimpleName() == "Sort" for node in jvm_nodes(plan))


@pytest.fixture(scope="module")
def outcomes(spark, sources, request):
    src = {**sources, "spark": spark}
    results = {}
    for group, cases in (("redundant", REDUNDANT), ("necessary", NECESSARY)):
        for name, (build, keys) in cases.items():
            per_mode = {}
            for mode, settings in MODES.items():
                with conf(spark, settings):
                    df = build(src)
                    qe = df._jdf.queryExecution()
                    per_mode[mode] = count_sorts(qe.optimizedPlan()), collect(df)
                    written = count_sorts(qe.withCachedData())
            results[name] = (group, written, keys, per_mode)
    report(request, summary(results))
    return results


def summary(results) -> list[str]:
    lines = ["| case | Sort nodes as written | N | S | S, EliminateSorts off |",
             "| --- | ---: | ---: | ---: | ---: |"]
    spark_alone = only_sparkext = stays = 0
    for name, (group, written, _, m) in results.items():
        lines.append(f"| {name} | {written} | {m['N'][0]} | {m['S'][0]} | {m['S-'][0]} |")
        if group == "necessary":
            stays += 1
        elif m["S"][0] < m["N"][0]:
            only_sparkext += 1
        else:
            spark_alone += 1
    lines.append(f"Spark alone removes the sort: {spark_alone}; only sparkext removes it: "
                 f"{only_sparkext}; the sort rightly stays: {stays}")
    return lines


def key_sequence(rows, keys):
    return [tuple(r[k] for k in keys) for r in rows]


@pytest.mark.parametrize("name", list(REDUNDANT))
def test_a_redundant_sort_is_removed(outcomes, name):
    _, written, keys, m = outcomes[name]
    assert m["S"][0] < written and m["S-"][0] < written, (written, m["S"][0], m["S-"][0])
    assert m["S"][0] <= m["N"][0], "sparkext left more sorts than Spark alone"
    check_rows(m, keys)


@pytest.mark.parametrize("name", list(NECESSARY))
def test_a_necessary_sort_stays(outcomes, name):
    _, written, keys, m = outcomes[name]
    assert m["N"][0] >= 1 and m["S"][0] == m["N"][0] and m["S-"][0] == m["N"][0], (
        written, m["N"][0], m["S"][0], m["S-"][0])
    check_rows(m, keys)


def check_rows(m, keys):
    expected = m["N"][1]
    for mode in ("S", "S-"):
        assert_same_rows(expected, m[mode][1])
        if keys:
            assert key_sequence(m[mode][1], keys) == key_sequence(expected, keys)


# -- time zones -----------------------------------------------------------------------------

# Arizona set its clock back from 00:01 (war time) to 23:01 the day before on 1944-10-01,
# at 06:01 UTC: there, a later instant can fall on an earlier local date.
AROUND_PHOENIX_1944 = [datetime(1944, 10, 1, h, m, tzinfo=timezone.utc).timestamp()
                       for h, m in ((5, 0), (6, 0), (6, 30), (8, 0))]


@pytest.mark.parametrize("zone,sort_stays", [("America/Phoenix", True), ("UTC", False),
                                             ("America/Los_Angeles", False)])
def test_to_date_keeps_order_only_where_local_dates_never_go_back(spark, tables, zone,
                                                                   sort_stays):
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        by_ts = (spark.createDataFrame([(i, t) for i, t in enumerate(AROUND_PHOENIX_1944)],
                                       "id int, s double")
                 .select("id", F.timestamp_seconds("s").alias("ts")).orderBy("ts").cache())
        by_ts.count()
    try:
        sorts, ids = {}, {}
        for mode in ("N", "S"):
            with conf(spark, {**MODES[mode], "spark.sql.session.timeZone": zone}):
                df = by_ts.orderBy(F.to_date("ts"), "ts")
                sorts[mode] = count_sorts(df._jdf.queryExecution().optimizedPlan())
                ids[mode] = [r.id for r in df.collect()]
    finally:
        by_ts.unpersist()
    assert sorts["N"] == 1 and sorts["S"] == (1 if sort_stays else 0), sorts
    assert ids["S"] == ids["N"]
    assert (ids["N"] != sorted(ids["N"])) == (zone == "America/Phoenix")


# ======================================================================================

# issue 17 (items 2 and 4): strict functions keep the keys after them; unique keys
# (functional dependencies). Multi-partition parquet data (four files), each case run with
# adaptive execution on and off, in the three modes above; plan property (Sort count) plus
# rows and their order compared with plain Spark.
# =============================================================================================

AQE = {"AQE on": {"spark.sql.adaptive.enabled": "true"},
       "AQE off": {"spark.sql.adaptive.enabled": "false"}}
ANSI_OFF = {"spark.sql.ansi.enabled": "false"}


@pytest.fixture(scope="module")
def monotonic_sources(spark, tmp_path_factory):
    """``a``: nullable int with duplicates (eight rows per value, eight NULLs); ``b``: ties
    broken differently from ``a``; ``k``: 20 values, 20 rows each; ``x``: unique but not
    known to be. Sorted copies cached (range-partitioned: a global order)."""
    sparkext.enable(spark)
    path = str(tmp_path_factory.mktemp("issue17") / "t")
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        spark.range(0, 400, 1, 4).selectExpr(
            "CAST(CASE WHEN id % 50 = 7 THEN NULL ELSE id % 50 END AS INT) AS a",
            "CAST((id * 7919) % 101 AS INT) AS b",
            "CAST(id % 20 AS INT) AS k",
            "CAST(id AS INT) AS x",
            "DATE_ADD(DATE'2024-01-01', CAST(id % 30 AS INT)) AS d",
            "CAST((id % 40) * 0.25 AS DECIMAL(10,2)) AS dec",
        ).repartition(4).write.parquet(path)
        data = spark.read.parquet(path)
        cached = {
            "by_ab": data.orderBy("a", "b"),
            "by_ab_desc": data.orderBy(F.desc("a"), F.desc("b")),
            "by_db": data.orderBy("d", "b"),
            "by_decb": data.orderBy("dec", "b"),
        }
        for name in cached:
            cached[name] = cached[name].cache()
            cached[name].count()
    yield {"data": data, **cached}
    for df in cached.values():
        df.unpersist()


def sums_by_k(s, *keys):
    return s["data"].groupBy(*(keys or ("k",))).agg(F.sum("x").alias("s"),
                                                   F.max("b").alias("mb"))


def unique_left(s):
    return s["data"].dropDuplicates(["k"]).select("k", "x")


def A(op):
    return op(F.col("a"))


# name -> (pipeline, sort keys the row order is compared on, extra settings)
MONO_REDUNDANT = {
    "cached by (a, b): (a + 1, b)": (
        lambda s: s["by_ab"].orderBy(F.col("a") + 1, "b"), ["a", "b"], {}),
    "cached by (a, b): (3 * a - 7, b)": (
        lambda s: s["by_ab"].orderBy(F.col("a") * 3 - 7, "b"), ["a", "b"], {}),
    "cached by (a, b): (cast(a as bigint), b), a widening cast": (
        lambda s: s["by_ab"].orderBy(F.col("a").cast("bigint"), "b"), ["a", "b"], {}),
    "cached by (a, b): (cast(a + 1 as decimal(20,0)), b), composed": (
        lambda s: s["by_ab"].orderBy((F.col("a") + 1).cast("decimal(20,0)"), "b"),
        ["a", "b"], {}),
    "cached by (a, b): (-a DESC NULLS FIRST, b), NULLs stay first": (
        lambda s: s["by_ab"].orderBy(F.desc_nulls_first(-F.col("a")), "b"), ["a", "b"], {}),
    "cached by (a, b): (-(a * 2 + 1) DESC NULLS FIRST, b)": (
        lambda s: s["by_ab"].orderBy(F.desc_nulls_first(-(F.col("a") * 2 + 1)), "b"),
        ["a", "b"], {}),
    "cached by (a, b): (a * -2 DESC NULLS FIRST, b), a negative factor": (
        lambda s: s["by_ab"].orderBy(F.desc_nulls_first(F.col("a") * -2), "b"),
        ["a", "b"], {}),
    "cached by (a, b): an alias of a + 1, then b": (
        lambda s: s["by_ab"].select((F.col("a") + 1).alias("a1"), "b", "x")
        .orderBy("a1", "b"), ["a1", "b"], {}),
    "cached by (a, b): (a + 1, a, b), a key that a strict key determines": (
        lambda s: s["by_ab"].orderBy(F.col("a") + 1, "a", "b"), ["a", "b"], {}),
    "cached by (a DESC, b DESC): (a + 1 DESC, b DESC)": (
        lambda s: s["by_ab_desc"].orderBy(F.desc(F.col("a") + 1), F.desc("b")), ["a", "b"],
        {}),
    "cached by (a DESC, b DESC): (-a ASC NULLS LAST, b DESC)": (
        lambda s: s["by_ab_desc"].orderBy(F.asc_nulls_last(-F.col("a")), F.desc("b")),
        ["a", "b"], {}),
    "cached by (dec, b): (dec + 0.25, b), a decimal keeping every digit": (
        lambda s: s["by_decb"].orderBy(F.col("dec") + F.lit(0.25).cast("decimal(3,2)"), "b"),
        ["dec", "b"], {}),
    "cached by (dec, b): floor(dec) alone, non-strict but leading": (
        lambda s: s["by_decb"].orderBy(F.floor("dec")), ["dec"], {}),
    # Unique keys: a sort by k over rows unique on k, then a sort within partitions by
    # (k, anything): the later sort is never consulted.
    "groupBy(k), sorted by k: sort within partitions by (k, s)": (
        lambda s: sums_by_k(s).orderBy("k").sortWithinPartitions("k", "s"), ["k", "s"], {}),
    "groupBy(k), sorted by k DESC: sort within partitions by (k DESC, mb, s)": (
        lambda s: sums_by_k(s).orderBy(F.desc("k")).sortWithinPartitions(
            F.desc("k"), "mb", "s"), ["k", "s"], {}),
    "groupBy(k, a), sorted by (k, a): within partitions by (k, a, s)": (
        lambda s: sums_by_k(s, "k", "a").orderBy("k", "a").sortWithinPartitions(
            "k", "a", "s"), ["k", "a", "s"], {}),
    "dropDuplicates(k), sorted by k: within partitions by (k, x)": (
        lambda s: unique_left(s).orderBy("k").sortWithinPartitions("k", "x"), ["k", "x"], {}),
    "inner join with a distinct right side keeps k unique: within partitions by (k, x)": (
        lambda s: unique_left(s).join(s["data"].select("k").distinct(), "k").orderBy("k")
        .sortWithinPartitions("k", "x"), ["k", "x"], {}),
    "inner join on a unique right key keeps k unique: within partitions by (k, mb)": (
        lambda s: unique_left(s).join(sums_by_k(s), "k").orderBy("k")
        .sortWithinPartitions("k", "mb", "x"), ["k", "mb"], {}),
    "left join on a unique right key keeps k unique": (
        lambda s: unique_left(s).join(sums_by_k(s).where("k < 12"), "k", "left")
        .orderBy("k").sortWithinPartitions("k", "mb", "x"), ["k", "x"], {}),
    "one group: groupBy(k) where k = 3, sorted by s": (
        lambda s: sums_by_k(s).where("k = 3").orderBy("s", "mb"), ["s"], {}),
    "a global aggregate: one row": (
        lambda s: s["data"].agg(F.sum("x").alias("s"), F.max("b").alias("mb"))
        .orderBy(F.desc("s")), ["s"], {}),
    "dropDuplicates(k) where k = 5: one row": (
        lambda s: unique_left(s).where("k = 5").orderBy("x"), ["x"], {}),
    "a join of two unique sides where k = 4: one row": (
        lambda s: unique_left(s).join(sums_by_k(s), "k").where("k = 4").orderBy("x", "s"),
        ["x"], {}),
}

MONO_NECESSARY = {
    "ANSI off: (a + 1, b), + wraps around": (
        lambda s: s["by_ab"].orderBy(F.col("a") + 1, "b"), ["a", "b"], ANSI_OFF),
    "ANSI off: (3 * a - 7, b)": (
        lambda s: s["by_ab"].orderBy(F.col("a") * 3 - 7, "b"), ["a", "b"], ANSI_OFF),
    "ANSI off: (-a DESC NULLS FIRST, b), -MIN_VALUE wraps": (
        lambda s: s["by_ab"].orderBy(F.desc_nulls_first(-F.col("a")), "b"), ["a", "b"],
        ANSI_OFF),
    "ANSI off: (cast(a + 1 as decimal(20,0)), b), a wrapping + inside": (
        lambda s: s["by_ab"].orderBy((F.col("a") + 1).cast("decimal(20,0)"), "b"),
        ["a", "b"], ANSI_OFF),
    "(-a DESC, b): NULLS LAST would move the NULL rows": (
        lambda s: s["by_ab"].orderBy(F.desc(-F.col("a")), "b"), ["a", "b"], {}),
    "(-a ASC, b): the wrong direction": (
        lambda s: s["by_ab"].orderBy(-F.col("a"), "b"), ["a", "b"], {}),
    "(a + 1 ASC NULLS LAST, b): NULL placement": (
        lambda s: s["by_ab"].orderBy(F.asc_nulls_last(F.col("a") + 1), "b"), ["a", "b"], {}),
    "(a + 1, x): not the next key": (
        lambda s: s["by_ab"].orderBy(F.col("a") + 1, "x"), ["a", "x"], {}),
    "(cast(a as tinyint), b): a narrowing cast": (
        lambda s: s["by_ab"].orderBy(F.col("a").cast("tinyint"), "b"), ["a", "b"], {}),
    "(floor(dec), b): a non-strict function followed by a key": (
        lambda s: s["by_decb"].orderBy(F.floor("dec"), "b"), ["dec", "b"], {}),
    "(floor(dec + 0.25), b): a non-strict function over a strict one": (
        lambda s: s["by_decb"].orderBy(
            F.floor(F.col("dec") + F.lit(0.25).cast("decimal(3,2)")), "b"), ["dec", "b"], {}),
    "(trunc(date_add(d, 3), 'MM'), b): a month of days ties": (
        lambda s: s["by_db"].orderBy(F.trunc(F.date_add("d", 3), "MM"), "b"), ["d", "b"], {}),
    # A shift by days wraps around at the ends of the date range (test below).
    "(date_add(d, 3), b)": (
        lambda s: s["by_db"].orderBy(F.date_add("d", 3), "b"), ["d", "b"], {}),
    "(date_sub(date_add(d, 3), 1), b), composed": (
        lambda s: s["by_db"].orderBy(F.date_sub(F.date_add("d", 3), 1), "b"), ["d", "b"], {}),
    "(trunc(d, 'QUARTER'), b): a quarter of days ties": (
        lambda s: s["by_db"].orderBy(F.trunc("d", "QUARTER"), "b"), ["d", "b"], {}),
    "a non-unique key: sorted by k, within partitions by (k, x)": (
        lambda s: s["data"].orderBy("k").sortWithinPartitions("k", "x"), ["k", "x"], {}),
    "groupBy(k, a) sorted by k only: (k, s) needs a too": (
        lambda s: sums_by_k(s, "k", "a").orderBy("k").sortWithinPartitions("k", "s"),
        ["k", "s"], {}),
    "groupBy(k) sorted by k: within partitions by (k DESC, s)": (
        lambda s: sums_by_k(s).orderBy("k").sortWithinPartitions(F.desc("k"), "s"),
        ["k", "s"], {}),
    "groupBy(k), sorted by mb (not the key): within partitions by (mb, s)": (
        lambda s: sums_by_k(s).orderBy("mb").sortWithinPartitions("mb", "s"), ["mb", "s"], {}),
    "a join with a duplicated right side breaks uniqueness": (
        lambda s: unique_left(s).join(s["data"].select("k", "b"), "k").orderBy("k")
        .sortWithinPartitions("k", "b"), ["k", "b"], {}),
    "a full outer join: the right-only rows all have a NULL left key": (
        lambda s: unique_left(s).where("k < 10").alias("l")
        .join(sums_by_k(s).alias("r"), F.col("l.k") == F.col("r.k"), "full")
        .where(F.col("l.k").isNull()).select(F.col("l.k").alias("lk"), "s", "mb")
        .orderBy("lk").sortWithinPartitions("lk", "s"), ["lk", "s"], {}),
    "a right outer join: the right-only rows all have a NULL left key": (
        lambda s: unique_left(s).where("k < 10").alias("l")
        .join(sums_by_k(s).alias("r"), F.col("l.k") == F.col("r.k"), "right")
        .where(F.col("l.k").isNull()).select(F.col("l.k").alias("lk"), "s")
        .orderBy("s"), ["s"], {}),
    "a join on a non-key column of the unique side": (
        lambda s: unique_left(s).join(sums_by_k(s).withColumnRenamed("k", "rk"),
                                      F.col("x") == F.col("mb")).orderBy("k")
        .sortWithinPartitions("k", "s"), ["k", "s"], {}),
}


def sort_shapes(plan) -> list[tuple[bool, int]]:
    """(global, number of keys) of each Sort: a sort that keeps fewer keys, or a local
    sort that goes while a global one stays, shows here and not in a count."""
    return sorted((bool(getattr(n, "global")()), n.order().size())
                  for n in jvm_nodes(plan) if n.getClass().getSimpleName() == "Sort")


def sort_work(shapes) -> int:
    """Keys compared over all sorts: what sparkext must lower for a redundant case."""
    return sum(keys for _, keys in shapes)


@pytest.fixture(scope="module")
def mono_outcomes(spark, monotonic_sources, request):
    src = {**monotonic_sources, "spark": spark}
    results = {}
    for group, cases in (("redundant", MONO_REDUNDANT), ("necessary", MONO_NECESSARY)):
        for name, (build, keys, extra) in cases.items():
            for aqe, aqe_conf in AQE.items():
                per_mode = {}
                for mode, settings in MODES.items():
                    with conf(spark, {**settings, **aqe_conf, **extra}):
                        df = build(src)
                        qe = df._jdf.queryExecution()
                        shapes = sort_shapes(qe.optimizedPlan())
                        per_mode[mode] = len(shapes), collect(df), shapes
                        written = len(sort_shapes(qe.withCachedData()))
                results[f"{name} [{aqe}]"] = (group, written, keys, per_mode)
    report(request, mono_summary(results))
    return results


def mono_summary(results) -> list[str]:
    lines = ["| case | Sort nodes as written | N | S | S, EliminateSorts off |",
             "| --- | ---: | ---: | ---: | ---: |"]
    counts = {"Spark alone": 0, "only sparkext (a sort)": 0, "only sparkext (keys)": 0,
              "rightly stays": 0}
    for name, (group, written, _, m) in results.items():
        cells = [f"{m[x][0]} {m[x][2]}" for x in ("N", "S", "S-")]
        lines.append(f"| {name} | {written} | {' | '.join(cells)} |")
        if group == "necessary":
            counts["rightly stays"] += 1
        elif m["S"][0] < m["N"][0]:
            counts["only sparkext (a sort)"] += 1
        elif sort_work(m["S"][2]) < sort_work(m["N"][2]):
            counts["only sparkext (keys)"] += 1
        else:
            counts["Spark alone"] += 1
    lines.append("; ".join(f"{k}: {v}" for k, v in counts.items()))
    return lines


MONO_IDS = {"redundant": [f"{n} [{a}]" for n in MONO_REDUNDANT for a in AQE],
            "necessary": [f"{n} [{a}]" for n in MONO_NECESSARY for a in AQE]}


@pytest.mark.parametrize("name", MONO_IDS["redundant"])
def test_issue17_a_redundant_sort_is_removed(mono_outcomes, name):
    _, written, keys, m = mono_outcomes[name]
    assert m["S"][0] < written and m["S-"][0] < written, (written, m["S"][0], m["S-"][0])
    assert sort_work(m["S"][2]) <= sort_work(m["N"][2]), "sparkext sorts more than Spark"
    # Either Spark alone removes every sort, or sparkext sorts less than Spark does, with
    # Catalyst's EliminateSorts on and off (a count alone cannot tell a local sort kept
    # from a global one turned into a repartition).
    for mode in ("S", "S-"):
        assert m["N"][0] == 0 or sort_work(m[mode][2]) < sort_work(m["N"][2]), (mode, m)
    check_rows(m, keys)


@pytest.mark.parametrize("name", MONO_IDS["necessary"])
def test_issue17_a_necessary_sort_stays(mono_outcomes, name):
    _, written, keys, m = mono_outcomes[name]
    # Every sort stays, global as global and local as local (a local sort removed while
    # the global one under it stays would count the same). Keys may still go where they
    # are redundant: (k DESC, s) over rows unique on k keeps only k DESC.
    def kinds(shapes):
        return [is_global for is_global, _ in shapes]
    assert m["N"][0] >= 1 and kinds(m["S"][2]) == kinds(m["N"][2]) == kinds(m["S-"][2]), (
        written, m["N"][2], m["S"][2], m["S-"][2])
    check_rows(m, keys)


# Dates at the ends of the int range Spark keeps them in (days since 1970-01-01), where
# Catalyst's date arithmetic wraps around: date_add(last, 1) is the first date, and
# trunc(first, 'MM') a date far in the future. Shown through unix_date (Python holds no
# year beyond 9999).
@pytest.fixture(scope="module")
def extreme_dates(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("extreme_dates") / "t")
    # (Spark 3.5 refuses to write dates before 1582 unless told how: as they are.)
    with conf(spark, {"spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED"}):
        spark.sql("SELECT id, date_from_unix_date(u) AS dt FROM VALUES (1, 0), (2, 100), "
                  "(3, 2147483647), (4, 2147483646), (5, -2147483648), (6, -2147483600), "
                  "(7, NULL) AS v(id, u)").write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("extreme_dates")
    yield "extreme_dates"
    spark.catalog.dropTempView("extreme_dates")


@pytest.mark.parametrize("key", ["date_add(dt, 1)", "date_sub(dt, 1)", "trunc(dt, 'MM')",
                                 "trunc(dt, 'YEAR')", "trunc(dt, 'WEEK')"])
@pytest.mark.parametrize("ansi", ["true", "false"])
def test_date_arithmetic_that_wraps_around_keeps_the_sort_by_it(spark, extreme_dates, key,
                                                                 ansi):
    sparkext.enable(spark)
    query = (f"SELECT id, unix_date(k) AS k FROM (SELECT id, {key} AS k FROM "
             f"(SELECT * FROM {extreme_dates} ORDER BY dt LIMIT 100) ORDER BY k)")
    outcomes = {}
    for mode in ("N", "S", "S-"):
        with conf(spark, {**MODES[mode], "spark.sql.ansi.enabled": ansi}):
            df = spark.sql(query)
            outcomes[mode] = (sort_shapes(df._jdf.queryExecution().optimizedPlan()),
                              [tuple(r) for r in df.collect()])
    assert len(outcomes["N"][0]) == 2
    for mode in ("S", "S-"):
        assert outcomes[mode] == outcomes["N"], mode


def sort_key_counts(df) -> list[int]:
    return [node.order().size() for node in jvm_nodes(df._jdf.queryExecution().optimizedPlan())
            if node.getClass().getSimpleName() == "Sort"]


@pytest.mark.parametrize("build, before, after", [
    (lambda s: sums_by_k(s).orderBy("k", "s", "mb"), [3], [1]),
    (lambda s: sums_by_k(s).orderBy("mb", "k", "s"), [3], [2]),
    (lambda s: s["data"].orderBy(F.col("a") + 1, "a", "b"), [3], [2]),
    # Required: keys after a non-unique key, or after a non-strict function, stay.
    (lambda s: s["data"].orderBy("k", "x"), [2], [2]),
    (lambda s: s["data"].orderBy(F.floor("dec"), "dec", "b"), [3], [3]),
], ids=["keys after the unique k", "keys after k, not before it",
        "a key a strict key determines", "a non-unique key", "a non-strict key"])
def test_issue17_sort_keys_that_depend_on_earlier_ones_are_dropped(
        spark, monotonic_sources, build, before, after):
    with conf(spark, MODES["N"]):
        df = build(monotonic_sources)
        plain = (sort_key_counts(df), collect(df))
    with conf(spark, MODES["S"]):
        df = build(monotonic_sources)
        simplified = (sort_key_counts(df), collect(df))
    assert plain[0] == before and simplified[0] == after
    assert simplified[1] == plain[1]
# -- top-K, windows, one partition (issue 17, items 1 and 5) ---------------------------------
# Run by the same `outcomes` fixture (and counted in its summary); more cases, on multi-file
# data with adaptive execution on and off and the physical plan checked, are in
# tests/test_ordering_topk.py.

TOPK_REDUNDANT = {
    # (Not by ts, nor by host then ts: those sorts of events are cached above, and the
    # cached relation would replace the top-K's sort.)
    "top-k: re-sorted by the same key": (
        lambda s: s["events"].orderBy("eid").limit(20).orderBy("eid"), ["eid"]),
    "top-k over cached sorted data: re-sorted": (
        lambda s: s["by_ts"].orderBy("ts").limit(7).orderBy("ts"), ["ts"]),
    "top-k: a key made constant below it": (
        lambda s: s["events"].where("host = 'h1'").orderBy("ts").limit(10)
        .orderBy("host", "ts"), ["ts"]),
    "top-k: re-sorted by a prefix": (
        lambda s: s["events"].orderBy("host", "eid").limit(10).orderBy("host"), ["host"]),
    "top-k: descending, with a projection between limit and sort": (
        lambda s: s["events"].orderBy(F.desc("ts")).select("ts", "eid").limit(9)
        .orderBy(F.desc("ts")), ["ts"]),
    "window without partition keys: re-sorted by its order keys": (
        lambda s: s["events"].withColumn("r", F.row_number().over(Window.orderBy("ts")))
        .orderBy("ts"), ["ts"]),
    "window: sorted within partitions by its partition and order keys": (
        lambda s: s["events"].withColumn(
            "r", F.row_number().over(Window.partitionBy("host").orderBy("ts")))
        .sortWithinPartitions("host", "ts"), None),
    "one partition: a global sort over a sort within partitions, a random column between": (
        lambda s: s["events"].repartition(1).sortWithinPartitions("ts")
        .select("ts", F.rand(3).alias("r")).orderBy("ts"), ["ts"]),
    "top-k with an offset: re-sorted by the same key": (
        lambda s: s["events"].orderBy("eid").offset(2).limit(10).orderBy("eid"), ["eid"]),
    "top-k: a filter above it keeps its order": (
        lambda s: s["events"].orderBy("eid").limit(30).where("amount > 0").orderBy("eid"),
        ["eid"]),
    "top-k: the key renamed above it": (
        lambda s: s["events"].orderBy("eid").limit(15).select(F.col("eid").alias("e"), "host")
        .orderBy("e"), ["e"]),
    "top-k: descending, re-sorted by a descending prefix": (
        lambda s: s["events"].orderBy(F.desc("host"), F.desc("eid")).limit(10)
        .orderBy(F.desc("host")), ["host"]),
    "top-k: NULLS LAST kept by the re-sort": (
        lambda s: s["events"].orderBy(F.asc_nulls_last("kind"), "eid").limit(10)
        .orderBy(F.asc_nulls_last("kind"), "eid"), ["kind", "eid"]),
    "window: sorted within partitions by its partition key, a prefix": (
        lambda s: s["events"].withColumn(
            "r", F.rank().over(Window.partitionBy("host").orderBy("ts")))
        .sortWithinPartitions("host"), None),
    # Window functions that never decrease along the window's order order the rows too.
    "window without partition keys: re-sorted by its row_number": (
        lambda s: s["events"].withColumn("r", F.row_number().over(Window.orderBy("eid")))
        .orderBy("r"), ["r"]),
    "window without partition keys: re-sorted by its rank, then its order key": (
        lambda s: s["events"].withColumn("r", F.rank().over(Window.orderBy("ts")))
        .orderBy("r", "ts"), ["r", "ts"]),
    "window without partition keys: re-sorted by its dense_rank, renamed, NULLS LAST": (
        lambda s: s["events"].withColumn("r", F.dense_rank().over(Window.orderBy("kind")))
        .select(F.col("r").alias("d"), "kind").orderBy(F.asc_nulls_last("d")), ["d"]),
    "window without partition keys: re-sorted by ntile, percent_rank and cume_dist": (
        lambda s: s["events"].select(
            "eid", F.ntile(4).over(Window.orderBy("eid")).alias("n"),
            F.percent_rank().over(Window.orderBy("eid")).alias("p"),
            F.cume_dist().over(Window.orderBy("eid")).alias("c")).orderBy("n", "p", "c"),
        ["n", "p", "c"]),
    "window: sorted within partitions by its partition key and its row_number": (
        lambda s: s["events"].withColumn(
            "r", F.row_number().over(Window.partitionBy("host").orderBy("ts")))
        .sortWithinPartitions("host", "r"), None),
    "window without partition keys: a filter on its row_number, re-sorted by it": (
        lambda s: s["events"].withColumn("r", F.row_number().over(Window.orderBy("eid")))
        .where("r > 3").orderBy("r"), ["r"]),
    "window without partition keys: r <= 5 (planned with a window group limit), re-sorted": (
        lambda s: s["events"].withColumn("r", F.rank().over(Window.orderBy("ts")))
        .where("r <= 5").orderBy("r", "ts"), ["r", "ts"]),
}

TOPK_NECESSARY = {
    "a limit at the top-K threshold (not a top-K): re-sorted": (
        lambda s: s["events"].orderBy("eid").limit(2147483632).orderBy("eid"), ["eid"]),
    "top-k: descending NULLS LAST re-sorted NULLS FIRST": (
        lambda s: s["events"].orderBy(F.desc("kind"), "eid").limit(10)
        .orderBy(F.desc_nulls_first("kind"), "eid"), ["kind", "eid"]),
    "top-k: re-sorted by another key": (
        lambda s: s["events"].orderBy("eid").limit(10).orderBy("ts"), ["ts"]),
    "top-k with an offset: re-sorted descending": (
        lambda s: s["events"].orderBy("eid").offset(2).limit(10).orderBy(F.desc("eid")),
        ["eid"]),
    "window partitioned: a global sort by its order key alone": (
        lambda s: s["events"].withColumn(
            "r", F.rank().over(Window.partitionBy("host").orderBy("ts"))).orderBy("ts"),
        ["ts"]),
    "top-k with a Python UDF in its projection (extracted after sparkext): re-sorted": (
        lambda s: s["events"].orderBy("eid")
        .select("eid", F.udf(lambda x: x, "long")("eid").alias("w")).limit(10)
        .where("w >= 0").orderBy("eid"), ["eid"]),
    "two top-Ks in a union: re-sorted": (
        lambda s: s["events"].orderBy("eid").limit(5)
        .union(s["events"].orderBy(F.desc("eid")).limit(5)).orderBy("eid"), ["eid"]),
    "top-k: descending re-sorted ascending": (
        lambda s: s["events"].orderBy(F.desc("ts")).limit(10).orderBy("ts"), ["ts"]),
    "top-k: re-sorted by more keys": (
        lambda s: s["events"].orderBy("host").limit(10).orderBy("host", "eid"),
        ["host", "eid"]),
    "top-k: NULLS FIRST re-sorted NULLS LAST": (
        lambda s: s["events"].orderBy("kind", "eid").limit(10)
        .orderBy(F.asc_nulls_last("kind"), "eid"), ["kind", "eid"]),
    "window: a global sort by its partition and order keys": (
        lambda s: s["events"].withColumn(
            "r", F.row_number().over(Window.partitionBy("host").orderBy("ts")))
        .orderBy("host", "ts"), ["host", "ts"]),
    "a sort within partitions over three partitions": (
        lambda s: s["events"].repartition(3).sortWithinPartitions("ts").orderBy("ts"), ["ts"]),
    "window: re-sorted by its row_number descending": (
        lambda s: s["events"].withColumn("r", F.row_number().over(Window.orderBy("eid")))
        .orderBy(F.desc("r")), ["r"]),
    "window: re-sorted by its rank, then another key than its order key": (
        lambda s: s["events"].withColumn("r", F.rank().over(Window.orderBy("host")))
        .orderBy("r", "eid"), ["r", "eid"]),
    "window partitioned: a global sort by its partition key and row_number": (
        lambda s: s["events"].withColumn(
            "r", F.row_number().over(Window.partitionBy("host").orderBy("ts")))
        .orderBy("host", "r"), ["host", "r"]),
    "two windows: re-sorted by the lower one's row_number": (
        lambda s: s["events"].withColumn("r", F.row_number().over(Window.orderBy("eid")))
        .withColumn("q", F.row_number().over(Window.orderBy(F.desc("eid"))))
        .orderBy("r"), ["r"]),
    "window: re-sorted by a running sum (not declared non-decreasing)": (
        lambda s: s["events"].withColumn("c", F.sum("amount").over(Window.orderBy("eid")))
        .orderBy("c"), ["c"]),
    "window: its row_number read only by the sort (the window would be pruned)": (
        lambda s: s["events"].withColumn("r", F.row_number().over(Window.orderBy("eid")))
        .orderBy("r").select("eid", "host"), ["eid"]),
}

REDUNDANT.update(TOPK_REDUNDANT)
NECESSARY.update(TOPK_NECESSARY)


@pytest.mark.parametrize("name", list(TOPK_REDUNDANT))
def test_a_redundant_sort_above_a_top_k_window_or_one_partition_is_removed(outcomes, name):
    test_a_redundant_sort_is_removed(outcomes, name)


@pytest.mark.parametrize("name", list(TOPK_NECESSARY))
def test_a_necessary_sort_above_a_top_k_window_or_shuffle_stays(outcomes, name):
    test_a_necessary_sort_stays(outcomes, name)
