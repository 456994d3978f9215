"""A rewrite that Catalyst's analyzer would refuse is rejected, never run.

Each case is one row of the JVM's check table (``PlanChecks.scala``): a bad rule builds the
defect with the mirror classes, the query still returns plain Spark's rows, the rewrite
counts once in ``rejected``, and strict mode raises naming the node and the check. (Today's
first five: a ``Filter(1)``, a ``Filter('true')``, ``GlobalLimit('ten')``,
``LocalLimit(5L)`` and ``GlobalLimit(-5)`` were accepted, then failed inside Spark.)
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.sql.window import Window as W

import sparkext
from sparkext import types as T
from sparkext.expressions import Literal, PosExplode, Rand, SortOrder
from sparkext.plan import (
    Aggregate,
    Expand,
    Filter,
    Generate,
    GlobalLimit,
    Join,
    LocalLimit,
    Repartition,
    RepartitionByExpression,
    Sample,
    Sort,
    Window,
)
from tests.conftest import conf, rules_enabled
from tests.rows import assert_same_rows, collect


@pytest.fixture(scope="module")
def t(spark):
    """Cached, so that Catalyst cannot fold the queries away before sparkext runs."""
    df = spark.range(12).selectExpr("CAST(id % 3 AS INT) AS k", "CAST(id AS INT) AS v",
                                    "map('a', id) AS m").cache()
    df.count()
    yield df
    df.unpersist()


def column(node, name):
    return next(a for a in node.child.output if a.name == name)


def replacing(kind, change):
    """A rule that rewrites every node of class ``kind`` with ``change(node)``."""
    def bad_rule(plan):
        return plan.transform_up(lambda n: change(n) if isinstance(n, kind) else n)
    return bad_rule


def first_aggregate(a: Aggregate):
    return next(e.child for e in a.aggregate_expressions if hasattr(e, "child"))


# name: (query over t, node class, change, what strict mode's message says). Some defects
# were caught before the table existed, and still are, by the node's `resolved` (a Join's
# condition, a map-typed SortOrder, a Generate's output width) or its constructor
# (Repartition, Sample); their rows keep the table's check for plans those miss.
CASES = {
    "filter condition is an int": (
        lambda t: t.where("v > 3"), Filter,
        lambda n: n.copy(condition=Literal(1, T.INT)), "Filter must have a boolean condition"),
    "filter condition is a string": (
        lambda t: t.where("v > 3"), Filter,
        lambda n: n.copy(condition=Literal("true", T.STRING)), "Filter must have a boolean condition"),
    "join condition is an int": (
        lambda t: t.alias("a").join(t.alias("b"), "k"), Join,
        lambda n: n.copy(condition=Literal(1, T.INT)), "Join must have a boolean condition|not resolved"),
    "global limit is a string": (
        lambda t: t.orderBy("v").limit(3), GlobalLimit,
        lambda n: n.copy(limit_expr=Literal("ten", T.STRING)), "GlobalLimit must have a foldable"),
    "global limit is negative": (
        lambda t: t.orderBy("v").limit(3), GlobalLimit,
        lambda n: n.copy(limit_expr=Literal(-5, T.INT)), "GlobalLimit must have a foldable"),
    "local limit is a long": (
        lambda t: t.orderBy("v").limit(3), LocalLimit,
        lambda n: n.copy(limit_expr=Literal(5, T.LONG)), "LocalLimit must have a foldable"),
    "sort key is a map": (
        lambda t: t.orderBy("v"), Sort,
        lambda n: n.copy(order=(SortOrder(column(n, "m")),)), "Sort must sort by orderable|not resolved"),
    "sort key is not a SortOrder": (
        lambda t: t.orderBy("v"), Sort,
        lambda n: n.copy(order=(column(n, "v"),)), "Sort must sort by orderable"),
    "window order key is a map": (
        lambda t: t.withColumn("r", F.row_number().over(W.partitionBy("k").orderBy("v"))), Window,
        lambda n: n.copy(order_spec=(SortOrder(column(n, "m")),)), "Window must order by orderable|not resolved"),
    "range partitioning key is a map": (
        lambda t: t.repartitionByRange(2, "v"), RepartitionByExpression,
        lambda n: n.copy(partition_expressions=(SortOrder(column(n, "m")),)),
        "RepartitionByExpression must range-partition by orderable|not resolved"),
    "repartition into no partitions": (
        lambda t: t.repartition(2), Repartition,
        lambda n: n.copy(num_partitions=0), "Repartition.*must be positive"),
    "grouping by an aggregate": (
        lambda t: t.groupBy("k").agg(F.sum("v")), Aggregate,
        lambda n: n.copy(grouping_expressions=n.grouping_expressions + (first_aggregate(n),)),
        "Aggregate must have no aggregate or window function in its grouping"),
    "grouping by a map": (
        lambda t: t.groupBy("k").agg(F.sum("v"), F.first("m")), Aggregate,
        lambda n: n.copy(grouping_expressions=n.grouping_expressions + (column(n, "m"),)),
        "Aggregate must group by orderable types|not resolved"),
    "grouping by a non-deterministic expression": (
        lambda t: t.groupBy("k").agg(F.sum("v")), Aggregate,
        lambda n: n.copy(grouping_expressions=n.grouping_expressions + (Rand(Literal(1, T.LONG)),)),
        "Aggregate must group by deterministic"),
    "generator output of the wrong width": (
        lambda t: t.selectExpr("k", "explode(array(v, v)) AS e"), Generate,
        lambda n: n.copy(generator=PosExplode(n.generator.child)),
        "Generate must have a generator that outputs its generator output|not resolved"),
    "expand projections shorter than its output": (
        lambda t: t.rollup("k").agg(F.sum("v")), Expand,
        lambda n: n.copy(projections=tuple(p[:-1] for p in n.projections)),
        "Expand must have projections of its output's length"),
    "sample bound above one": (
        lambda t: t.sample(1.0, seed=1), Sample,
        lambda n: n.copy(upper_bound=1.5), "Sample"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_rewrite_the_analyzer_would_refuse_is_rejected(spark, t, name):
    query, kind, change, message = CASES[name]
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        expected = collect(query(t))
    with rules_enabled(spark, [replacing(kind, change)]):
        with conf(spark, {"spark.sparkext.strict": "false"}):
            sparkext.reset_metrics(spark)
            assert_same_rows(expected, collect(query(t)))
            m = sparkext.metrics(spark)
        assert m["rejected"] == 1 and m["accepted"] == 0, {k: v for k, v in m.items() if v}
        with conf(spark, {"spark.sparkext.strict": "true"}), \
                pytest.raises(Exception, match=message):
            collect(query(t))
