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
    yield {"by_ts": by_ts, "by_host_ts": by_host_ts, "checkpointed": checkpointed,
           "people_by_id": people_by_id, "events": events, "by_wide_ts": by_wide_ts}
    for df in (by_ts, by_host_ts, people_by_id, by_wide_ts):
        df.unpersist()


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
}

TOPK_NECESSARY = {
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
}

REDUNDANT.update(TOPK_REDUNDANT)
NECESSARY.update(TOPK_NECESSARY)


@pytest.mark.parametrize("name", list(TOPK_REDUNDANT))
def test_a_redundant_sort_above_a_top_k_window_or_one_partition_is_removed(outcomes, name):
    test_a_redundant_sort_is_removed(outcomes, name)


@pytest.mark.parametrize("name", list(TOPK_NECESSARY))
def test_a_necessary_sort_above_a_top_k_window_or_shuffle_stays(outcomes, name):
    test_a_necessary_sort_stays(outcomes, name)
