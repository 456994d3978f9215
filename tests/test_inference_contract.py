"""What sparkext infers never raises where the query would not, and leaves no work undone
that Catalyst would have done (issue 16 item 12), in a real session, rows compared:

  N  plain Spark
  S  Catalyst's pushdown/pruning/inference rules excluded, sparkext's built-in rules on
"""

from __future__ import annotations

import re

import pytest
from pyspark.sql import functions as F

import sparkext
from sparkext.catalyst import excluded_rules_conf
from tests.conftest import conf, jvm_nodes
from tests.rows import assert_same_rows, collect

N = {"spark.sparkext.enabled": "false"}
S = {"spark.sparkext.enabled": "true", **excluded_rules_conf()}


@pytest.fixture(scope="module")
def builtin(spark):
    sparkext.enable(spark)


def _in_modes(spark, build, plain=N, rewritten=S):
    with conf(spark, plain):
        expected = collect(build())
    with conf(spark, rewritten):
        sparkext.reset_metrics(spark)
        df = build()
        actual = collect(df)
        plan = df._jdf.queryExecution().optimizedPlan()
        m = sparkext.metrics(spark)
    assert m["rejected"] == 0 and m["python_errors"] == 0, m
    assert_same_rows(expected, actual)
    return plan, m


def test_a_contradiction_inferred_from_self_comparison_does_not_evaluate_an_overflow(
        spark, builtin):
    # From y = z AND z > y inference restates z > z; pushed through the projection it reads
    # (v * -730) > (v * -730), which overflows under ANSI for v = 10,000,000. Plain Spark
    # folds it to false and plans an empty relation; sparkext must neither raise nor keep
    # the product.
    def build():
        left = spark.createDataFrame([(1,), (2,)], "y int")
        right = spark.createDataFrame([(10_000_000,), (3,)], "v int") \
            .select((F.col("v") * -730).alias("z"))
        return left.join(right, F.col("y") == F.col("z")).where(F.col("z") > F.col("y"))
    with conf(spark, {"spark.sql.ansi.enabled": "true"}):
        _, m = _in_modes(spark, build)
    assert m["accepted"] > 0, "the built-in rules did not rewrite the query"


def test_inferred_true_or_null_comparisons_are_not_added(spark, builtin):
    # y = z AND z >= y: restating gives z >= z, true or NULL; stating it would evaluate
    # the product for every row of the right side.
    def build():
        left = spark.createDataFrame([(1,), (-730,)], "y int")
        right = spark.createDataFrame([(1,), (None,)], "v int") \
            .select((F.col("v") * -730).alias("z"))
        return left.join(right, F.col("y") == F.col("z")).where(F.col("z") >= F.col("y"))
    plan, _ = _in_modes(spark, build)
    self_comparison = re.compile(r"(\([^()]+\)|\w+#\d+) >= \1")
    assert not self_comparison.search(plan.toString()), plan.toString()


def _join_types(plan) -> list[str]:
    return [n.joinType().toString() for n in jvm_nodes(plan)
            if n.getClass().getSimpleName() == "Join"]


def test_the_outer_join_a_correlated_scalar_subquery_leaves_is_eliminated(spark, builtin):
    # The rewritten subquery leaves Filter(if(isnull(alwaysTrue)) 0 else count > 0) over
    # a LEFT OUTER join: for NULL-padded rows it is 0 > 0, false. Catalyst's
    # EliminateOuterJoin finds that by evaluating it with NULLs; so must sparkext.
    spark.createDataFrame([(1,), (2,), (3,)], "k int").createOrReplaceTempView("sq_l")
    spark.createDataFrame([(1,), (1,), (3,)], "k int").createOrReplaceTempView("sq_r")

    def build():
        return spark.sql("SELECT k FROM sq_l WHERE "
                         "(SELECT count(*) FROM sq_r WHERE sq_r.k = sq_l.k) > 0")
    with conf(spark, N):
        plain = _join_types(build()._jdf.queryExecution().optimizedPlan())
    plan, _ = _in_modes(spark, build)
    assert "LeftOuter" not in plain, plain  # the premise: Catalyst removes it
    assert "LeftOuter" not in _join_types(plan), plan.toString()


def test_a_column_equal_to_its_own_cast_is_restated_once(spark, builtin):
    # cast(a AS INT) = a over an INT column (an identity cast: Catalyst's SimplifyCasts,
    # switched off here, would have removed it). Restating a > 1 on cast(a AS INT) once
    # gives cast(a AS INT) > 1; replacing a again inside the cast just put there looped
    # until Python's recursion limit, and the rules failed. (Catalyst's own inference
    # overflows the same way, in its ConstraintHelper, when it is on: it is off in both
    # modes here, so plain Spark gives rows to compare.)
    simplify_casts = "org.apache.spark.sql.catalyst.optimizer.SimplifyCasts"
    key = "spark.sql.optimizer.excludedRules"
    excluded = {**S, key: S[key] + "," + simplify_casts}

    def build():
        t = spark.createDataFrame([(i,) for i in range(5)] + [(None,)], "a int")
        return t.where((F.col("a").cast("int") == F.col("a")) & (F.col("a") > 1))
    _, m = _in_modes(spark, build, plain={**excluded, **N}, rewritten=excluded)
    assert m["accepted"] > 0, "the built-in rules did not rewrite the query"
