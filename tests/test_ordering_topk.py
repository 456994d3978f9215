"""Top-K keeps its order, and orderings through Window, Union, Expand and a local sort over
one partition (issue 17, items 1 and 5).

Two halves. Hand-built plans pin the derivation in :mod:`sparkext.analysis.ordering` (which shapes
are a top-K, and every way a limit falls out of one). Then real pipelines on multi-file
parquet data (several scan partitions, several shuffle partitions), each run with
sparkext off (N), on (S) and on with Catalyst's EliminateSorts excluded (S-), with
adaptive execution on and off: a redundant sort goes in S and S-, a required one stays,
and in every mode the rows come back as in N, in N's sequence of sort-key values. Where
sparkext removed a sort above a top-K, the physical plan must still hold Spark's
TakeOrderedAndProjectExec (the sort under the limit is the top-K itself).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

import sparkext
from sparkext import types as T
from sparkext.analysis.ordering import properties, windows_pruned
from sparkext.analysis.uniqueness import unique_keys
from sparkext.context import CallContext, current, scoped
from sparkext.expressions import (
    Add, Alias, AttributeReference, Expression, In, OpaqueExpression, Upper, asc, desc, lit)
from sparkext.expressions import SortOrder as SO
from sparkext.rules.eliminate_sorts import eliminate_sorts
from sparkext.rules.simplify_sort_keys import simplify_sort_keys
from sparkext.plan import (
    Aggregate,
    Expand,
    Filter,
    GlobalLimit,
    LocalLimit,
    LogicalPlan,
    Opaque,
    Project,
    Relation,
    Repartition,
    Sort,
    Union,
    Window as WindowNode,
)
from tests.conftest import conf, jvm_nodes, report, rules_enabled
from tests.rows import assert_same_rows, collect

# -- the derivation on hand-built plans -------------------------------------------------------

k = AttributeReference("k", T.INT, True, None, 1)
v = AttributeReference("v", T.LONG, False, None, 2)
REL = Relation("LocalRelation", (k, v), 0)


def in_call(threshold: int | None) -> Any:
    return scoped(CallContext(top_k_threshold=threshold))


def limit(n: Expression, child: LogicalPlan) -> GlobalLimit:
    return GlobalLimit(n, LocalLimit(n, child))


def offset(n: Expression, child: LogicalPlan) -> Opaque:
    return Opaque("Offset", child.output, (child,), handle=0, exprs=(n,))


def by_v() -> Sort:
    return Sort((asc(v),), True, REL)


def python_udf() -> OpaqueExpression:
    return OpaqueExpression("PythonUDF", (v,), 90, _type=T.LONG)


def scalar_subquery() -> OpaqueExpression:
    s = AttributeReference("s", T.LONG, True, None, 3)
    return OpaqueExpression("ScalarSubquery", (), 91, _type=T.LONG, subquery_output=(s,))


def globally_by_v(plan: LogicalPlan) -> bool:
    return properties(plan).ordering_satisfy([asc(v)], require_global=True)


def test_a_literal_limit_below_the_threshold_over_a_global_sort_keeps_its_order() -> None:
    with in_call(100):
        assert globally_by_v(limit(lit(10), by_v()))
        assert globally_by_v(limit(lit(10), Project((v, k), by_v())))


@pytest.mark.parametrize("title,threshold,plan", [
    ("the limit at the threshold", 10, lambda: limit(lit(10), by_v())),
    ("the limit above the threshold", 5, lambda: limit(lit(10), by_v())),
    ("no threshold in the request (an older JVM)", None, lambda: limit(lit(10), by_v())),
    ("a non-literal limit", 100, lambda: limit(Add(lit(2), lit(3)), by_v())),
    ("a BIGINT literal limit (Catalyst's IntegerLiteral is INT only)", 100,
     lambda: limit(lit(10, T.LONG), by_v())),
    ("a local sort under the limit", 100, lambda: limit(lit(10), Sort((asc(v),), False, REL))),
    ("two projections between the limit and the sort", 100,
     lambda: limit(lit(10), Project((v,), Project((v, k), by_v())))),
    ("global and local limits that differ", 100,
     lambda: GlobalLimit(lit(10), LocalLimit(lit(20), by_v()))),
    ("an offset over a limit: limit over the threshold", 10,
     lambda: offset(lit(5), limit(lit(10), by_v()))),
    ("a limit over an offset: limit plus offset at the threshold", 15,
     lambda: GlobalLimit(lit(10), offset(lit(5), LocalLimit(lit(15), by_v())))),
    ("a limit over an offset whose local limit is not their sum", 100,
     lambda: GlobalLimit(lit(10), offset(lit(5), LocalLimit(lit(10), by_v())))),
    ("a Python UDF in the projection between the limit and the sort (Spark extracts it "
     "into a BatchEvalPython node after sparkext)", 100,
     lambda: limit(lit(10), Project((v, Alias(python_udf(), "w")), by_v()))),
    ("a scalar subquery in the projection between the limit and the sort (a join after "
     "sparkext)", 100,
     lambda: limit(lit(10), Project((v, Alias(scalar_subquery(), "s")), by_v()))),
    ("an offset alone", 100, lambda: offset(lit(5), by_v())),
    ("another opaque node of an offset's shape over a top-K", 100,
     lambda: Opaque("Tail", REL.output, (limit(lit(10), by_v()),), handle=0, exprs=(lit(5),))),
    ("a non-literal offset", 100,
     lambda: offset(Add(lit(2), lit(3)), limit(lit(10), by_v()))),
])
def test_a_limit_spark_does_not_plan_as_top_k_loses_order(
        title: str, threshold: int | None, plan: Callable[[], LogicalPlan]) -> None:
    with in_call(threshold):
        assert not globally_by_v(plan())


def test_an_opaque_node_knows_whether_it_is_catalysts_offset() -> None:
    assert offset(lit(5), REL).offset_expr == lit(5)
    assert Opaque("Tail", REL.output, (REL,), handle=0, exprs=(lit(5),)).offset_expr is None
    assert Opaque("Offset", REL.output, (REL,), handle=0).offset_expr is None  # (no count)


def test_offsets_over_and_under_a_top_k_keep_its_order() -> None:
    with in_call(16):
        assert globally_by_v(offset(lit(5), limit(lit(15), by_v())))
        assert globally_by_v(GlobalLimit(lit(10), offset(lit(5), LocalLimit(lit(15), by_v()))))


def test_a_window_orders_by_partition_keys_then_order_keys_within_partitions() -> None:
    w = WindowNode((), (k,), (desc(v),), REL)
    p = properties(w)
    assert p.ordering_satisfy([asc(k), desc(v)], require_global=False)
    assert not p.ordering_satisfy([asc(k), desc(v)], require_global=True)
    assert not p.ordering_satisfy([desc(v)], require_global=False)


def test_a_window_without_partition_keys_orders_globally_and_drops_its_inputs_order() -> None:
    assert globally_by_v(WindowNode((), (), (asc(v),), REL))
    assert not globally_by_v(WindowNode((), (), (asc(k),), by_v()))


def window_function(fn: str, partition: tuple, order: tuple, expr_id: int = 8,
                    aggregate: bool = False, frame_start: str = "UnboundedPreceding") -> Alias:
    """``fn() OVER (PARTITION BY partition ORDER BY order ROWS BETWEEN frame_start AND
    CURRENT ROW) AS r`` as the JVM sends it; ``aggregate``: ``fn`` is an aggregate
    function (of ``v``)."""
    frame = OpaqueExpression("SpecifiedWindowFrame", (
        OpaqueExpression(frame_start, (), 97), OpaqueExpression("CurrentRow", (), 98)), 93)
    spec = OpaqueExpression("WindowSpecDefinition", (*partition, *order, frame), 94)
    call = OpaqueExpression(fn, (v,) if aggregate else (), 95, _type=T.LONG)
    if aggregate:
        call = OpaqueExpression("AggregateExpression", (call,), 99, _type=T.LONG)
    return Alias(OpaqueExpression("WindowExpression", (call, spec), 96, _type=T.LONG), "r",
                 expr_id)


@pytest.mark.parametrize("fn", ["RowNumber", "Rank", "DenseRank", "NTile", "PercentRank",
                                "CumeDist"])
def test_a_window_function_that_never_decreases_orders_the_rows_after_the_partition_keys(
        fn: str) -> None:
    alias = window_function(fn, (k,), (desc(v),))
    r = alias.to_attribute()
    p = properties(WindowNode((alias,), (k,), (desc(v),), REL))
    assert p.ordering_satisfy([asc(k), asc(r)], require_global=False)
    assert p.ordering_satisfy([asc(k), asc(r), desc(v)], require_global=False)
    assert p.ordering_satisfy([asc(k), SO(r, "ASC", "LAST")], require_global=False)  # no NULLs
    assert not p.ordering_satisfy([asc(k), asc(r)], require_global=True)
    assert not p.ordering_satisfy([asc(r)], require_global=False)
    assert not p.ordering_satisfy([asc(k), desc(r)], require_global=False)
    alone = WindowNode((window_function(fn, (), (asc(v),)),), (), (asc(v),), REL)
    assert properties(alone).ordering_satisfy([asc(r), asc(v)], require_global=True)


def test_row_number_and_the_partition_keys_are_a_unique_key() -> None:
    rn = window_function("RowNumber", (k,), (desc(v),))
    rank = window_function("Rank", (k,), (desc(v),), expr_id=9)
    w = WindowNode((rn, rank), (k,), (desc(v),), REL)
    assert (k, rn.to_attribute()) in unique_keys(w)
    assert not any(rank.to_attribute() in key for key in unique_keys(w))
    # so the keys after them are never consulted
    assert properties(w).ordering_satisfy([asc(k), asc(rn.to_attribute()), asc(v)],
                                          require_global=False)
    s = AttributeReference("s", T.STRING, True, None, 5)
    other = WindowNode((window_function("RowNumber", (Upper(s),), (asc(v),)),), (Upper(s),),
                       (asc(v),), Relation("LocalRelation", (k, v, s), 0))
    assert not any(len(key) == 2 for key in unique_keys(other))  # a partition expression


@pytest.mark.parametrize("fn,descending,never_null", [
    ("Count", False, True), ("Max", False, False), ("Min", True, False)])
def test_count_max_and_min_over_a_frame_from_the_partitions_start_are_monotonic(
        fn: str, descending: bool, never_null: bool) -> None:
    alias = window_function(fn, (k,), (desc(v),), aggregate=True)
    r = alias.to_attribute()
    p = properties(WindowNode((alias,), (k,), (desc(v),), REL))
    way, other = (desc, asc) if descending else (asc, desc)
    first = SO(r, "DESC" if descending else "ASC", "FIRST")  # NULL until a value comes
    last = SO(r, "DESC" if descending else "ASC", "LAST")
    assert p.ordering_satisfy([asc(k), first, desc(v)], require_global=False)
    assert p.ordering_satisfy([asc(k), last], require_global=False) == never_null
    assert not p.ordering_satisfy([asc(k), other(r)], require_global=False)
    assert not p.ordering_satisfy([asc(k), way(r)], require_global=True)


@pytest.mark.parametrize("title,alias", [
    ("a running sum", window_function("Sum", (k,), (desc(v),), aggregate=True)),
    ("a running max over a sliding frame",
     window_function("Max", (k,), (desc(v),), aggregate=True, frame_start="Literal")),
    ("a function that may decrease", window_function("Lag", (k,), (desc(v),))),
    ("another window's spec", window_function("RowNumber", (k,), (asc(v),))),
])
def test_no_order_from_a_window_function_not_known_to_follow_this_windows_order(
        title: str, alias: Alias) -> None:
    p = properties(WindowNode((alias,), (k,), (desc(v),), REL))
    assert not p.ordering_satisfy([asc(k), asc(alias.to_attribute())], require_global=False)


def window_column_then_sort(keep_r: bool) -> Project:
    """``Project(v [, r], Sort(v, r, Window(r = f() OVER (ORDER BY v), Aggregate(v))))``:
    ``v`` is unique after the grouping, so the sort needs ``v`` alone, and the Window's
    order is ``v``'s already; the sort is all that needs ``r`` unless ``keep_r``."""
    r_alias = Alias(OpaqueExpression("WindowExpression", (v,), 92, _type=T.INT), "r", 7)
    r = r_alias.to_attribute()
    window = WindowNode((r_alias,), (), (asc(v),), Aggregate((v,), (v,), REL))
    return Project((v, r) if keep_r else (v,), Sort((asc(v), asc(r)), True, window))


@pytest.mark.parametrize("rule", [eliminate_sorts, simplify_sort_keys])
def test_no_sort_or_key_goes_when_that_leaves_a_window_nothing_needs(
        rule: Callable[[LogicalPlan], LogicalPlan]) -> None:
    dropped = window_column_then_sort(keep_r=False)
    assert windows_pruned(dropped) == 0
    assert rule(dropped) is dropped  # the sort keeps the Window alive: it must stay whole


@pytest.mark.parametrize("rule", [eliminate_sorts, simplify_sort_keys])
def test_a_window_whose_column_is_needed_above_keeps_its_order(
        rule: Callable[[LogicalPlan], LogicalPlan]) -> None:
    kept = window_column_then_sort(keep_r=True)
    out = rule(kept)
    sorts = [n for n in out.walk() if isinstance(n, Sort)]
    assert sorts == [] if rule is eliminate_sorts else [s.order for s in sorts] == [(asc(v),)]
    assert windows_pruned(out) == 0


def test_windows_pruned_counts_the_windows_no_column_of_which_is_needed() -> None:
    window = window_column_then_sort(keep_r=True).child.child
    assert windows_pruned(Project((v,), window)) == 1
    assert windows_pruned(Project((v,), Sort((asc(v),), True, window))) == 1
    assert windows_pruned(Filter(In(v, (lit(1, T.LONG),)), window)) == 0  # the root needs r
    assert windows_pruned(window_column_then_sort(keep_r=False)) == 0  # the sort needs r
    assert windows_pruned(Union((Project((v,), window), Project((v,), window)))) == 2


def test_a_union_of_one_child_keeps_its_order_of_two_none() -> None:
    assert globally_by_v(Union((by_v(),)))
    assert not properties(Union((by_v(), by_v()))).ordering_satisfy([asc(v)], False)


def test_expand_keeps_no_order() -> None:
    assert not properties(Expand(((v, k), (v, lit(None, T.INT))), (v, k), by_v())) \
        .ordering_satisfy([asc(v)], False)


def test_a_local_sort_over_one_partition_is_global() -> None:
    assert globally_by_v(Sort((asc(v),), False, Repartition(1, True, REL)))
    assert not globally_by_v(Sort((asc(v),), False, Repartition(2, True, REL)))


def test_a_subquery_or_python_udf_between_the_local_sort_and_the_one_partition_breaks_it(
        ) -> None:
    # An IN subquery becomes a semi join after sparkext, which may shuffle the one partition
    # into many; a Python UDF gets a node of its own.
    one = Repartition(1, True, REL)
    in_subquery = Filter(In(v, (scalar_subquery(),)), one)
    assert globally_by_v(Sort((asc(v),), False, Filter(In(v, (lit(1, T.LONG),)), one)))
    assert not globally_by_v(Sort((asc(v),), False, in_subquery))
    assert not globally_by_v(Sort((asc(v),), False,
                                  Project((v, k, Alias(python_udf(), "w")), one)))


# -- real pipelines ----------------------------------------------------------------------------

ELIMINATE_SORTS_OFF = {
    "spark.sql.optimizer.excludedRules": "org.apache.spark.sql.catalyst.optimizer.EliminateSorts"}
MODES = {
    "N": {"spark.sparkext.enabled": "false"},
    "S": {"spark.sparkext.enabled": "true"},
    "S-": {"spark.sparkext.enabled": "true", **ELIMINATE_SORTS_OFF},
}
#: Small files become several scan partitions; four shuffle partitions (the session's).
SCAN = {"spark.sql.files.maxPartitionBytes": "4096", "spark.sql.files.openCostInBytes": "1024"}
THRESHOLD = "spark.sql.execution.topKSortFallbackThreshold"


@pytest.fixture(scope="module")
def data(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """3000 rows in six parquet files: k an INT with ties and NULLs, v a unique BIGINT in
    scrambled order, s a string."""
    sparkext.enable(spark)
    path = str(tmp_path_factory.mktemp("topk") / "t")
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        (spark.range(0, 3000, 1, 6).select(
            F.when(F.col("id") % 7 == 0, None).otherwise(F.col("id") % 13).cast("int")
            .alias("k"),
            ((F.col("id") * 7919) % 3001).alias("v"),
            F.col("id").cast("string").alias("s"))
         .write.parquet(path))
    yield path


Case = tuple[Callable[[DataFrame], DataFrame], list[str], dict[str, str], bool]


def case(build: Callable[[DataFrame], DataFrame], keys: list[str],
         settings: dict[str, str] | None = None, top_k: bool = False) -> Case:
    """A pipeline over the data, the keys whose sequence of values must match N's, extra
    settings, and whether S's physical plan must hold a TakeOrderedAndProjectExec."""
    return build, keys, settings or {}, top_k


def w_part() -> Window:
    return Window.partitionBy("k").orderBy("v")


def grouped(d: DataFrame) -> DataFrame:
    """One row per ``k`` (NULL included): ``k`` is a unique key."""
    return d.groupBy("k").agg(F.sum("v").alias("t"))


def row_number(spec: Any) -> Any:
    return F.row_number().over(spec)


REDUNDANT: dict[str, Case] = {
    "top-k: a re-sort by the same key": case(
        lambda d: d.orderBy("v").limit(10).orderBy("v"), ["v"], top_k=True),
    "top-k: a re-sort by a prefix of its keys": case(
        lambda d: d.orderBy("k", "v").limit(40).orderBy("k"), ["k"], top_k=True),
    "top-k: descending, re-sorted descending": case(
        lambda d: d.orderBy(F.desc("v")).limit(10).orderBy(F.desc("v")), ["v"], top_k=True),
    "top-k: NULLS LAST, re-sorted NULLS LAST": case(
        lambda d: d.orderBy(F.asc_nulls_last("k"), "v").limit(300)
        .orderBy(F.asc_nulls_last("k"), "v"), ["k", "v"], top_k=True),
    "top-k: two keys of mixed direction": case(
        lambda d: d.orderBy("k", F.desc("v")).limit(25).orderBy("k", F.desc("v")),
        ["k", "v"], top_k=True),
    "top-k: a projection between the limit and the sort": case(
        lambda d: d.orderBy("v").select("v", "k").limit(10).orderBy("v"), ["v"], top_k=True),
    "top-k: a filter above the limit": case(
        lambda d: d.orderBy("v").limit(50).where("k > 3").orderBy("v"), ["v"], top_k=True),
    "top-k: an alias above the limit": case(
        lambda d: d.orderBy("v").limit(10).select(F.col("v").alias("w"), "k").orderBy("w"),
        ["w"], top_k=True),
    "top-k: a copy of the key above the limit": case(
        lambda d: d.orderBy("v").limit(10).withColumn("v2", F.col("v")).orderBy("v2", "v"),
        ["v2"], top_k=True),
    "top-k: a key made constant below": case(
        lambda d: d.where("k = 5").orderBy("v").limit(10).orderBy("k", "v"), ["v"],
        top_k=True),
    "top-k: a key made constant above": case(
        lambda d: d.orderBy("v").limit(200).where("k = 5").orderBy("k", "v"), ["v"],
        top_k=True),
    "top-k: a literal column first": case(
        lambda d: d.orderBy("v").limit(10).withColumn("one", F.lit(1)).orderBy("one", "v"),
        ["v"], top_k=True),
    "top-k: an offset then a limit": case(
        lambda d: d.orderBy("v").offset(5).limit(10).orderBy("v"), ["v"], top_k=True),
    "top-k: a limit then an offset": case(
        lambda d: d.orderBy("v").limit(15).offset(5).orderBy("v"), ["v"], top_k=True),
    # Catalyst's ColumnPruning and CollapseProject run after sparkext: a narrower or
    # non-deterministic projection above the removed re-sort must leave the top-K planned.
    "top-k: a narrower projection above the re-sort": case(
        lambda d: d.orderBy("v").limit(10).orderBy("v").select("k", "s"), ["k", "s"],
        top_k=True),
    "top-k: a random column above the re-sort": case(
        lambda d: d.orderBy("v").limit(10).orderBy("v").select("s", F.rand(1).alias("r")),
        ["s"], top_k=True),
    "top-k: a sort within partitions above it": case(
        lambda d: d.orderBy("v").limit(10).sortWithinPartitions("v"), ["v"], top_k=True),
    "top-k: just below the threshold": case(
        lambda d: d.orderBy("v").limit(10).orderBy("v"), ["v"], {THRESHOLD: "11"}, top_k=True),
    "top-k: in SQL": case(
        lambda d: d.sparkSession.sql(
            f"SELECT * FROM (SELECT * FROM parquet.`{d.inputFiles()[0].rsplit('/', 1)[0]}` "
            "ORDER BY v DESC LIMIT 7) ORDER BY v DESC"), ["v"], top_k=True),
    "window: a sort within partitions by its partition and order keys": case(
        lambda d: d.withColumn("r", row_number(w_part())).sortWithinPartitions("k", "v"),
        ["k", "v"]),
    "window: a sort within partitions by its partition keys": case(
        lambda d: d.withColumn("r", row_number(w_part())).sortWithinPartitions("k"), ["k"]),
    "window without partition keys: a global sort by its order keys": case(
        lambda d: d.withColumn("r", row_number(Window.orderBy("v"))).orderBy("v"), ["v"]),
    "window without partition keys: descending": case(
        lambda d: d.withColumn("r", row_number(Window.orderBy(F.desc("v")))).where("r > 3")
        .orderBy(F.desc("v")), ["v"]),
    "window over a unique key: re-sorted by it and the window's column": case(
        lambda d: grouped(d).withColumn("r", row_number(Window.orderBy("k")))
        .orderBy("k", "r"), ["k"]),
    # window functions that never decrease along the window's order (row_number, rank, ...)
    "window: a sort within partitions by its partition keys and its row_number": case(
        lambda d: d.withColumn("r", row_number(w_part())).sortWithinPartitions("k", "r"),
        ["k", "r"]),
    "window without partition keys: re-sorted by its rank over ties and NULLs, then the key":
        case(lambda d: d.withColumn("r", F.rank().over(Window.orderBy("k")))
             .orderBy("r", "k"), ["r", "k"]),
    "window: a sort within partitions by its partition keys, row_number, then anything":
        case(lambda d: d.withColumn("r", row_number(w_part()))
             .sortWithinPartitions("k", "r", "s"), ["k", "r", "s"]),
    "window without partition keys: row_number makes the later sort keys redundant": case(
        lambda d: d.withColumn("r", row_number(Window.orderBy("k"))).orderBy("r", "s"),
        ["r", "s"]),
    "window without partition keys: re-sorted by a running count over ties, then the key":
        case(lambda d: d.withColumn("c", F.count("*").over(Window.orderBy("k")))
             .orderBy("c", "k"), ["c", "k"]),
    "window: a sort within partitions by its partition keys and a running count": case(
        lambda d: d.withColumn("c", F.count("s").over(w_part())).sortWithinPartitions("k", "c"),
        ["k", "c"]),
    "window without partition keys: re-sorted by a running max (NULL first)": case(
        lambda d: d.withColumn("m", F.max("k").over(Window.orderBy("v"))).orderBy("m"),
        ["m"]),
    "window without partition keys: re-sorted descending by a running min, NULLs first": case(
        lambda d: d.withColumn("m", F.min("k").over(Window.orderBy("v").rowsBetween(
            Window.unboundedPreceding, Window.currentRow))).orderBy(F.desc_nulls_first("m")),
        ["m"]),
    "window without partition keys: re-sorted by its dense_rank over a descending key": case(
        lambda d: d.withColumn("r", F.dense_rank().over(Window.orderBy(F.desc("k"))))
        .orderBy("r"), ["r"]),
    "one partition: a global sort over a sort within partitions (repartition)": case(
        lambda d: d.repartition(1).sortWithinPartitions("v").orderBy("v"), ["v"]),
    "one partition: a global sort over a sort within partitions (coalesce)": case(
        lambda d: d.coalesce(1).sortWithinPartitions("k", "v").orderBy("k"), ["k"]),
    # A random column between: neither Catalyst nor the older sparkext removes the inner
    # sort under it, and the outer one is redundant.
    "one partition: a random column between the two sorts": case(
        lambda d: d.repartition(1).sortWithinPartitions("v").select("v", F.rand(3).alias("r"))
        .orderBy("v"), ["v"]),
}

NECESSARY: dict[str, Case] = {
    "window without partition keys: rank ties, so the later sort key is needed": case(
        lambda d: d.withColumn("r", F.rank().over(Window.orderBy("k"))).orderBy("r", "s"),
        ["r", "s"]),
    "window without partition keys: re-sorted by a running sum (values of both signs)": case(
        lambda d: d.withColumn("t", F.sum(F.col("k") - 6).over(Window.orderBy("v")))
        .orderBy("t"), ["t"]),
    "window without partition keys: re-sorted by a max over a sliding frame": case(
        lambda d: d.withColumn("m", F.max("k").over(Window.orderBy("v").rowsBetween(-2, 0)))
        .orderBy("m"), ["m"]),
    "window without partition keys: a running max re-sorted NULLS LAST": case(
        lambda d: d.withColumn("m", F.max("k").over(Window.orderBy("v")))
        .orderBy(F.asc_nulls_last("m")), ["m"]),
    "window without partition keys: a running min re-sorted ascending": case(
        lambda d: d.withColumn("m", F.min("k").over(Window.orderBy("v"))).orderBy("m"), ["m"]),
    "window partitioned: a global sort by its partition key and its rank": case(
        lambda d: d.withColumn("r", F.rank().over(w_part())).orderBy("k", "r"), ["k", "r"]),
    # The sort is all that needs the window's column: without it Catalyst's column pruning,
    # which runs again after sparkext, removes the Window and its order with it.
    "window over a unique key: re-sorted by it and the window's column, dropped after": case(
        lambda d: grouped(d).withColumn("r", row_number(Window.orderBy("k")))
        .orderBy("k", "r").drop("r"), ["k"]),
    "window partitioned by a unique key: sorted within partitions, the column dropped": case(
        lambda d: grouped(d).withColumn("r", row_number(Window.partitionBy("k").orderBy("t")))
        .sortWithinPartitions("k", "r").drop("r"), ["k"]),
    "top-k: re-sorted the other direction": case(
        lambda d: d.orderBy(F.desc("v")).limit(10).orderBy("v"), ["v"], top_k=True),
    "top-k: NULLS FIRST re-sorted NULLS LAST": case(
        lambda d: d.orderBy("k", "v").limit(300).orderBy(F.asc_nulls_last("k"), "v"),
        ["k", "v"], top_k=True),
    "top-k: DESC NULLS LAST re-sorted DESC NULLS FIRST": case(
        lambda d: d.orderBy(F.desc("k"), "v").limit(300).orderBy(F.desc_nulls_first("k"), "v"),
        ["k", "v"], top_k=True),
    "top-k: re-sorted by another key": case(
        lambda d: d.orderBy("v").limit(30).orderBy("k", "v"), ["k", "v"], top_k=True),
    "top-k: re-sorted by more keys than it has": case(
        lambda d: d.orderBy("k").limit(300).orderBy("k", "v"), ["k"], top_k=True),
    "limit at the threshold (no top-k)": case(
        lambda d: d.orderBy("v").limit(10).orderBy("v"), ["v"], {THRESHOLD: "10"}),
    "limit above the threshold (no top-k)": case(
        lambda d: d.orderBy("v").limit(10).orderBy("v"), ["v"], {THRESHOLD: "5"}),
    "an offset then a limit, their sum at the threshold": case(
        lambda d: d.orderBy("v").offset(5).limit(10).orderBy("v"), ["v"], {THRESHOLD: "15"}),
    "a limit then an offset, the limit at the threshold": case(
        lambda d: d.orderBy("v").limit(15).offset(5).orderBy("v"), ["v"], {THRESHOLD: "15"}),
    "an offset alone over a sort": case(
        lambda d: d.orderBy("v").offset(2990).orderBy("v"), ["v"]),
    "a limit over a sort within partitions": case(
        lambda d: d.sortWithinPartitions("v").limit(10).orderBy("v"), ["v"]),
    "a limit over unsorted data": case(lambda d: d.limit(10).orderBy("v"), ["v"]),
    "window: a global sort by its partition and order keys": case(
        lambda d: d.withColumn("r", row_number(w_part())).orderBy("k", "v"), ["k", "v"]),
    "window: a sort within partitions by its order keys alone": case(
        lambda d: d.withColumn("r", row_number(w_part())).sortWithinPartitions("v"), None),
    "window: partition keys NULLS LAST": case(
        lambda d: d.withColumn("r", row_number(w_part()))
        .sortWithinPartitions(F.asc_nulls_last("k"), "v"), None),
    "window without partition keys: the other direction": case(
        lambda d: d.withColumn("r", row_number(Window.orderBy("v"))).orderBy(F.desc("v")),
        ["v"]),
    "window: the input's order is lost": case(
        lambda d: d.orderBy("v").withColumn("n", F.count("*").over(Window.partitionBy("k")))
        .orderBy("v"), ["v"]),
    "aggregate over sorted input (HashAggregate keeps nothing)": case(
        lambda d: d.orderBy("k").groupBy("k").agg(F.max("v").alias("m")).orderBy("k"), ["k"]),
    "aggregate over input sorted within partitions": case(
        lambda d: d.sortWithinPartitions("k").groupBy("k").agg(F.count("*").alias("n"))
        .sortWithinPartitions("k"), None),
    "rollup (Expand) over sorted input": case(
        lambda d: d.orderBy("k").rollup("k").agg(F.min("v").alias("m")).orderBy("k", "m"),
        ["k", "m"]),
    "a union of two top-ks": case(
        lambda d: d.orderBy("v").limit(5).union(d.orderBy("v").limit(5)).orderBy("v"), ["v"]),
    "a sort within partitions over two partitions": case(
        lambda d: d.repartition(2).sortWithinPartitions("v").orderBy("v"), ["v"]),
}


def count_sorts(plan: Any) -> int:
    return sum(node.getClass().getSimpleName() == "Sort" for node in jvm_nodes(plan))


Outcome = tuple[str, int, dict[tuple[str, str], tuple[int, list, bool]]]


@pytest.fixture(scope="module")
def outcomes(spark: SparkSession, data: str, request: pytest.FixtureRequest
             ) -> dict[str, Outcome]:
    results: dict[str, Outcome] = {}
    for group, cases in (("redundant", REDUNDANT), ("necessary", NECESSARY)):
        for name, (build, _, settings, _) in cases.items():
            runs = {}
            written = 0
            for aqe in ("true", "false"):
                for mode, mode_settings in MODES.items():
                    with conf(spark, {**SCAN, **settings, **mode_settings,
                                      "spark.sql.adaptive.enabled": aqe}):
                        df = build(spark.read.parquet(data))
                        qe = df._jdf.queryExecution()
                        physical = qe.executedPlan().toString()
                        runs[(aqe, mode)] = (count_sorts(qe.optimizedPlan()), collect(df),
                                             "TakeOrderedAndProject" in physical)
                        written = count_sorts(qe.analyzed())
            results[name] = (group, written, runs)
    report(request, summary(results))
    return results


def summary(results: dict[str, Outcome]) -> list[str]:
    spark_alone = only_sparkext = stays = 0
    for group, _, runs in results.values():
        if group == "necessary":
            stays += 1
        elif runs[("true", "S")][0] < runs[("true", "N")][0]:
            only_sparkext += 1
        else:
            spark_alone += 1
    return [f"top-k, window, one partition: Spark alone removes the sort: {spark_alone}; "
            f"only sparkext removes it: {only_sparkext}; the sort rightly stays: {stays}"]


def test_the_data_is_read_as_several_partitions(spark: SparkSession, data: str) -> None:
    with conf(spark, SCAN):
        assert spark.read.parquet(data).rdd.getNumPartitions() > 2
    assert len(list(Path(data).glob("*.parquet"))) == 6


def test_the_request_carries_the_sessions_top_k_threshold(spark: SparkSession,
                                                          data: str) -> None:
    seen: list[int | None] = []

    def record(plan: LogicalPlan) -> LogicalPlan:
        ctx = current()
        seen.append(None if ctx is None else ctx.top_k_threshold)
        return plan

    with conf(spark, {THRESHOLD: "1234"}), rules_enabled(spark, [record]):
        spark.read.parquet(data).orderBy("v").limit(3).collect()
    assert seen and set(seen) == {1234}


def key_sequence(rows: list, keys: list[str]) -> list[tuple]:
    return [tuple(r[c] for c in keys) for r in rows]


#: Cases whose limit cuts through rows tied on its sort key: which of those it keeps is
#: Spark's choice, and changes with the files read (bound_top_k reads fewer), so only the
#: sequence of keys is compared.
TIES_AT_THE_LIMIT = {"top-k: re-sorted by more keys than it has"}


def check(runs: dict, keys: list[str] | None, top_k: bool, same_rows: bool = True) -> None:
    for aqe in ("true", "false"):
        expected = runs[(aqe, "N")][1]
        for mode in ("S", "S-"):
            _, rows, planned_top_k = runs[(aqe, mode)]
            if same_rows:
                assert_same_rows(expected, rows)
            if keys:
                assert key_sequence(rows, keys) == key_sequence(expected, keys), (aqe, mode)
            if top_k:
                assert planned_top_k, f"{mode}, AQE {aqe}: no TakeOrderedAndProjectExec left"


def sort_counts(runs: dict) -> Iterator[tuple[str, int, int, int]]:
    """(AQE, Sort nodes in N, in S, in S-) for AQE on, then off."""
    for aqe in ("true", "false"):
        n, s, s_minus = (runs[(aqe, m)][0] for m in ("N", "S", "S-"))
        yield aqe, n, s, s_minus


@pytest.mark.parametrize("name", list(REDUNDANT))
def test_a_redundant_sort_is_removed(outcomes: dict[str, Outcome], name: str) -> None:
    _, written, runs = outcomes[name]
    _, keys, _, top_k = REDUNDANT[name]
    for aqe, n, s, s_minus in sort_counts(runs):
        assert s < written and s_minus < written and s <= n, (aqe, written, n, s, s_minus)
    check(runs, keys, top_k)


@pytest.mark.parametrize("name", list(NECESSARY))
def test_a_necessary_sort_stays(outcomes: dict[str, Outcome], name: str) -> None:
    _, _, runs = outcomes[name]
    _, keys, _, top_k = NECESSARY[name]
    for aqe, n, s, s_minus in sort_counts(runs):
        assert n >= 1 and s == n and s_minus == n, (aqe, n, s, s_minus)
    check(runs, keys, top_k, same_rows=name not in TIES_AT_THE_LIMIT)
