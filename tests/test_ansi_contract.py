"""The ANSI contract (issue 16 item 11, docs/design.md "Errors under ANSI"): sparkext matches
Catalyst. A conjunct that can raise is pushed or inferred into a join side as Catalyst
puts it there (here infer_filters copies the ON conjunct to the right side), so it
may be evaluated on rows the join would never have matched: the query raises exactly when
plain Spark's does, with or without Catalyst's own rules."""

from __future__ import annotations

from pyspark.sql import functions as F

import sparkext
from sparkext.catalyst import excluded_rules_conf
from tests.conftest import conf
from tests.rows import collect

# A LEFT join whose right-only ON conjunct raises CAST_OVERFLOW on the NaN row, which has
# no partner on the left: the unrewritten join never evaluates it there.
# (Over range, not VALUES: Catalyst evaluates expressions over a local relation while it
# optimizes, which would raise before any join rule ran.)
QUERY = """
    SELECT l.k, r.d FROM (SELECT id + 1 AS k FROM range(2)) AS l
    LEFT JOIN (SELECT IF(id = 0, 1, 7) AS k, IF(id = 0, 2.0D, CAST('NaN' AS DOUBLE)) AS d
               FROM range(2)) AS r
    ON l.k = r.k AND CAST(r.d AS INT) > 0
"""
ANSI = {"spark.sql.ansi.enabled": "true", "spark.sparkext.strict": "true"}


def outcome(spark, settings: dict):
    """The rows, or the error class the query raised."""
    with conf(spark, {**ANSI, **settings}):
        try:
            return sorted(collect(spark.sql(QUERY)), key=repr)
        except Exception as e:  # noqa: BLE001 - pyspark's captured errors, or py4j's
            text = str(e)
            return "CAST_OVERFLOW" if "CAST_OVERFLOW" in text else text.splitlines()[0]


def test_a_raising_on_conjunct_is_pushed_into_the_join_side_as_catalyst_pushes_it(spark):
    off = {"spark.sparkext.enabled": "false"}
    plain = outcome(spark, off)
    unrewritten = outcome(spark, {**off, **excluded_rules_conf()})
    on_top = outcome(spark, {})
    sparkext.reset_metrics(spark)
    instead = outcome(spark, excluded_rules_conf())
    accepted = sparkext.metrics(spark)["accepted"]
    # Catalyst pushes the conjunct below the join and raises; the unrewritten plan does not.
    assert plain == "CAST_OVERFLOW"
    assert unrewritten != "CAST_OVERFLOW", unrewritten
    # sparkext on top of Catalyst: plain Spark's outcome.
    assert on_top == plain
    # Catalyst's rules excluded: sparkext's rules do what Catalyst did (with push_down_filters
    # and infer_filters excluded too, the rows come back without the error: checked).
    assert instead == plain and accepted >= 1


# -- guards: a conjunct that keeps a later one from raising must stay before it ------------

INTERPRETED = {"spark.sql.codegen.wholeStage": "false",
               "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


def outcomes_by_mode(spark, build, settings: dict) -> dict:
    """Plain Spark's, sparkext on top's and sparkext instead of Catalyst's outcome (rows,
    or the first line of the error) of the DataFrame ``build()`` makes."""
    out = {}
    for mode, extra in (("plain", {"spark.sparkext.enabled": "false"}), ("on_top", {}),
                        ("instead", excluded_rules_conf())):
        with conf(spark, {**ANSI, **settings, **extra}):
            try:
                out[mode] = sorted(collect(build()), key=repr)
            except Exception as e:  # noqa: BLE001 - pyspark's captured errors, or py4j's
                out[mode] = str(e).splitlines()[0]
    return out


def cached(spark, rows: list, schema: str):
    """An in-memory table (a scan of parquet files evaluates its filters otherwise)."""
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        df = spark.createDataFrame(rows, schema).repartition(1).cache()
        df.count()
    return df


def test_a_guard_that_is_null_still_guards_after_the_filters_are_combined(spark):
    # For k NULL, `k BETWEEN -2 AND 2` is NULL, not false, so AND goes on to `i + 10`,
    # which overflows on that row; the query filters by k first and never computes it.
    # Plain Spark's inferred isnotnull(k), first, stops it; sparkext's must come first too.
    t = cached(spark, [(None, 2147483646, [2]), (1, 5, [1])], "k int, i int, arr array<int>")

    def build():
        return t.where("k BETWEEN -2 AND 2").where("size(arr) >= i + 10")

    out = outcomes_by_mode(spark, build, INTERPRETED)
    t.unpersist()
    assert out["plain"] == [], out
    assert out["on_top"] == out["plain"] and out["instead"] == out["plain"], out


def test_a_guard_in_a_join_condition_stays_before_the_where_conjuncts_it_guards(spark):
    # Catalyst's ReorderJoin (not excluded) moves `g <> 0`, the filter right above the
    # joins, into the join condition; the filters above it stay. Pushed to the right side,
    # the join condition's conjunct must come before the WHERE clause's `100 DIV g`.
    left = cached(spark, [(1,), (2,), (3,)], "k int")
    r = cached(spark, [(1, 0, "x"), (2, 5, "1"), (3, 2, "2"), (4, 0, "3")],
               "rk int, g int, n string")
    m = cached(spark, [(1,), (2,)], "id int")

    def build():
        return left.join(m, F.expr("id = 1")).join(r, F.expr("k = rk")) \
            .where("g <> 0").where("100 DIV g >= 0").where("n RLIKE '^[0-9]+$'") \
            .select("k", "g")

    out = outcomes_by_mode(spark, build, {})
    for df in (left, r, m):
        df.unpersist()
    assert out["plain"] == [(2, 5), (3, 2)], out
    assert out["on_top"] == out["plain"] and out["instead"] == out["plain"], out


def test_a_guard_in_the_where_clause_stays_before_the_join_condition_it_guards(spark):
    # The other way round: `g <> 0` in the WHERE clause, `100 DIV g` in the ON condition.
    # The g = 0 row has no partner, so the query never divides by it; pushed to the right
    # side, the guard must still come first.
    left = cached(spark, [(1,)], "k int")
    r = cached(spark, [(1, 5), (2, 0)], "rk int, g int")

    def build():
        return left.join(r, F.expr("k = rk AND 100 DIV g > 0")).where("g <> 0") \
            .select("k", "g")

    out = outcomes_by_mode(spark, build, {})
    assert out["plain"] == [(1, 5)], out
    assert out["on_top"] == out["plain"] and out["instead"] == out["plain"], out
    for df in (left, r):
        df.unpersist()
