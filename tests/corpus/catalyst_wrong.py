"""A corpus of Catalyst's own wrong rewrites: pipelines where plain Spark (4.3) returns
rows the unrewritten plan does not. With Catalyst's pushdown family excluded, sparkext's
built-in rules must return the unrewritten plan's rows (tests/test_catalyst_wrong.py).

Each case builds a DataFrame from a SparkSession. ``EXPECTED`` holds the answer the issue
that reported a case worked out by hand, where there is one: a check that the
"unrewritten" mode really computes the unrewritten plan.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

CASES: dict[str, Callable[[SparkSession], DataFrame]] = {}
EXPECTED: dict[str, list[tuple]] = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def zeros(s: SparkSession) -> DataFrame:
    """0.0 once and -0.0 twice: one grouping key, three rows."""
    return s.createDataFrame([(0.0, 1), (-0.0, 2), (-0.0, 3)], "d double, x int")


def nans(s: SparkSession) -> DataFrame:
    """Two NaNs with different bit patterns, and one row of another value."""
    return s.createDataFrame([(1.0, 1), (2.0, 2), (3.0, 3)], "v double, x int").select(
        F.when(F.col("x") == 1, F.lit(float("nan")))
         .when(F.col("x") == 2, F.sqrt(F.lit(-1.0)))  # a NaN computed at run time
         .otherwise(F.col("v")).alias("d"), "x")


def lcase(s: SparkSession) -> DataFrame:
    """'A' once and 'a' twice under UTF8_LCASE: one partitioning key, three rows."""
    return s.sql("SELECT k COLLATE UTF8_LCASE AS k, x "
                 "FROM VALUES ('A', 1), ('a', 2), ('a', 3) AS t(k, x)")


# Grouping normalises -0.0 to 0.0: a filter that tells them apart must stay above it.

@case
def filter_after_group_by_double_key(s):
    return zeros(s).groupBy("d").count().where("CAST(d AS STRING) = '0.0'")


EXPECTED["filter_after_group_by_double_key"] = [(0.0, 3)]


@case
def filter_after_distinct_on_double(s):
    return zeros(s).select("d").distinct().where("CAST(d AS STRING) = '-0.0'")


@case
def filter_after_drop_duplicates_on_double(s):
    return zeros(s).dropDuplicates(["d"]).where("CAST(d AS STRING) = '-0.0'").select("d")


@case
def filter_after_window_partitioned_by_double(s):
    w = Window.partitionBy("d")
    return zeros(s).withColumn("n", F.count("*").over(w)) \
        .where("CAST(d AS STRING) = '0.0'")


@case
def filter_after_group_by_struct_with_double(s):
    return zeros(s).select(F.struct("d").alias("st"), "x").groupBy("st").count() \
        .where("CAST(st AS STRING) = '{0.0}'").select(F.col("st.d"), "count")


@case
def filter_on_aliased_grouping_expression(s):
    return zeros(s).groupBy((F.col("d") * 1).alias("k")).count() \
        .where("CAST(k AS STRING) = '0.0'")


@case
def filter_on_a_string_computed_from_a_double_key(s):
    # Above the Aggregate, s is computed from the normalised key 0.0; below, the alias
    # replaced, the filter reads each row's own -0.0.
    return zeros(s).groupBy("d").agg(F.count("*").alias("n")) \
        .select(F.col("d").cast("string").alias("s"), "n").where("s = '-0.0'")


@case
def nan_filter_after_group_by(s):
    # Not a NaN representative: both NaNs group together; a filter that reads NaN's
    # bits through a cast would tell them apart, but one that asks isnan() cannot.
    return nans(s).groupBy("d").count().where("CAST(d AS STRING) = 'NaN' AND d > 0")


# A filter carried across a double join key: Catalyst restates CAST(l.d AS STRING) = '0.0'
# on r.d, which drops r's -0.0 rows although they join l's 0.0 row.

@case
def filter_carried_across_double_join_key(s):
    left = zeros(s).select(F.col("d").alias("ld"), F.col("x").alias("lx"))
    right = zeros(s).select(F.col("d").alias("rd"), F.col("x").alias("rx"))
    return left.join(right, F.col("ld") == F.col("rd")) \
        .where("CAST(ld AS STRING) = '0.0'")


# Deterministic conjuncts moved past a rand() conjunct change which rows rand() sees.

@case
def deterministic_conjunct_after_rand(s):
    left = s.range(40).select(F.col("id").alias("a"), (F.col("id") % 5).alias("k"))
    right = s.range(5).select(F.col("id").alias("k2"))
    return left.join(right, F.col("k") == F.col("k2")) \
        .where((F.rand(7) < 0.5) & (F.col("a") > 10))


# A constraint carried up through grouping: below the Aggregate every d is -0.0, above it
# the one key is 0.0; restated through `CAST(d AS STRING) AS s` and the join on s, the
# constraint would filter the other side to s = '-0.0' and lose the match on '0.0'.

@case
def constraint_carried_up_through_grouping(s):
    keys = zeros(s).where("CAST(d AS STRING) = '-0.0'").groupBy("d").count() \
        .select(F.col("d").cast("string").alias("s"), "count")
    other = s.createDataFrame([("0.0", 1), ("-0.0", 2)], "t string, y int")
    return keys.join(other, F.col("s") == F.col("t"))


# A collation other than UTF8_BINARY groups 'A' with 'a': a filter that compares under
# the binary collation tells them apart. (A window keeps each row's own value, so the
# expected rows do not depend on which one grouping would output.)

@case
def binary_filter_after_window_partitioned_by_lcase_string(s):
    return (lcase(s).withColumn("n", F.count("*").over(Window.partitionBy("k")))
            .where("k COLLATE UTF8_BINARY = 'a'"))


EXPECTED["binary_filter_after_window_partitioned_by_lcase_string"] = [("a", 2, 3), ("a", 3, 3)]
