"""A constant never changes on its way through Python.

A literal whose JSON form would not read back as the very same value (a string that is not
valid UTF-8: the JVM's ``UTF8String.toString`` turns byte FF into U+FFFD) travels by handle
only, as a foldable opaque expression, so even a rule that rebuilds every expression hands
Spark the original Catalyst literal. Each test runs in strict mode with
``rebuild_everything`` and compares rows with plain Spark's.
"""

from __future__ import annotations

import pytest

import sparkext
from sparkext import Batch, Once
from sparkext.testing.rules import rebuild_everything
from tests.conftest import conf, rules_enabled
from tests.rows import assert_same_rows, collect

INVALID = "cast(unhex('FF') AS STRING)"

# Two rows hold the invalid string (or a value built from it), one does not: a changed
# constant selects 0 or 1 rows instead of 2.
CASES = {
    "string": (f"v = {INVALID}"),
    "array": (f"array(v) = array({INVALID})"),
    "nested array": (f"array(array(v)) = array(array({INVALID}))"),
    "struct": (f"named_struct('s', v) = named_struct('s', {INVALID})"),
    "map key": (f"map_contains_key(map({INVALID}, 1), v)"),
    "map value": (f"array_contains(map_values(map(1, {INVALID})), v)"),
    "in list": (f"v IN ({INVALID}, 'zz', 'yy', 'xx', 'ww', 'vv', 'uu', 'tt', 'ss', 'rr', 'qq')"),
}


@pytest.fixture(scope="module")
def table(spark):
    """Cached rows: over a local relation or a computed column, Catalyst folds the
    comparison away before sparkext runs (and Parquet's filter pushdown itself turns FF
    into U+FFFD, so plain Spark would be wrong over a file)."""
    df = spark.range(3).selectExpr(
        f"CASE WHEN id < 2 THEN {INVALID} ELSE 'a' END AS v", "id",
        "CAST(CASE WHEN id < 2 THEN 0 ELSE 0.5 END AS DECIMAL(4,4)) AS d",
    ).cache()
    df.count()
    yield lambda: df
    df.unpersist()


def _rows_through_rebuild(spark, table, condition: str):
    def frame():
        return table().where(condition)

    with conf(spark, {"spark.sparkext.enabled": "false"}):
        expected = collect(frame())
    with rules_enabled(spark, batches=[Batch("rebuild", Once(), (rebuild_everything,))]), \
            conf(spark, {"spark.sparkext.strict": "true"}):
        sparkext.reset_metrics(spark)
        actual = collect(frame())
        m = sparkext.metrics(spark)
    return expected, actual, m


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_literal_that_is_not_valid_utf8_reaches_spark_unchanged(spark, table, name):
    expected, actual, m = _rows_through_rebuild(spark, table, CASES[name])
    assert len(expected) == 2, expected
    assert_same_rows(expected, actual)
    assert m["rejected"] == 0 and m["python_errors"] == 0, m


def test_valid_strings_still_travel_as_values(spark, table):
    """Only the lossy literals go by handle: a rule still sees ordinary constants."""
    from tests.conftest import request_document

    df = table().where(f"v = {INVALID} OR v = 'é'")
    doc = request_document(spark, df._jdf.queryExecution().optimizedPlan())
    text = str(doc)
    assert "'é'" in text and "'Literal'" in text
    assert "\ufffd" not in text


def test_decimal_zero_with_all_digits_after_the_point_is_read_by_the_jvm(spark):
    """0 has no integer digit: DECIMAL(4,4) holds it (the JVM refused it)."""
    jvm = spark._jvm
    node = jvm.com.fasterxml.jackson.databind.ObjectMapper().readTree('"0.0000"')
    value = jvm.io.sparkext.LiteralCodec.read(node, jvm.org.apache.spark.sql.types.DecimalType(4, 4))
    assert value.toString() == "0.0000"
    too_big = jvm.com.fasterxml.jackson.databind.ObjectMapper().readTree('"1.0000"')
    with pytest.raises(Exception, match="does not fit"):
        jvm.io.sparkext.LiteralCodec.read(too_big, jvm.org.apache.spark.sql.types.DecimalType(4, 4))


def test_decimal_zero_with_all_digits_after_the_point_round_trips(spark, table):
    expected, actual, m = _rows_through_rebuild(spark, table, "d = CAST(0 AS DECIMAL(4,4))")
    assert len(expected) == 2, expected
    assert_same_rows(expected, actual)
    assert m["rejected"] == 0 and m["python_errors"] == 0, m


# Literals at the edges of their types, each projected as a column: a value changed on the
# way (a float's last digit, -0.0, a decimal's scale, a byte of a string) changes the row.
EDGE_LITERALS = [
    "CAST(-0.0 AS DOUBLE)", "CAST('NaN' AS DOUBLE)", "CAST('-Infinity' AS FLOAT)",
    "CAST(1.4E-45 AS FLOAT)", "CAST(3.4028235E38 AS FLOAT)", "CAST(0.1 AS FLOAT)", "4.9E-324D",
    "CAST(-0.0 AS FLOAT)", "CAST(1E-38 AS DECIMAL(38,38))", "CAST(-1 AS DECIMAL(38,0))",
    "99999999999999999999999999999999999999BD", "CAST(0 AS DECIMAL(1,0))",
    "TIMESTAMP'1900-01-01 00:00:00.000001'", "TIMESTAMP_NTZ'9999-12-31 23:59:59.999999'",
    "DATE'0001-01-01'", "X'00FF'", "'\\u0000 é 𝄞'", "CAST(-128 AS TINYINT)",
    "-9223372036854775808L", "INTERVAL '3 04:05:06.000007' DAY TO SECOND",
    "array(CAST(NULL AS INT), 1)", "map('a', CAST(-0.0 AS DOUBLE))",
    "named_struct('a', CAST(-0.0 AS DOUBLE), 'b', X'FF', 'c', CAST(NULL AS STRING))",
]


def test_literals_at_the_edges_of_their_types_come_back_exactly(spark, table):
    columns = [f"{lit} AS c{i}" for i, lit in enumerate(EDGE_LITERALS)]

    def frame():
        return table().selectExpr("id", *columns)

    with conf(spark, {"spark.sparkext.enabled": "false"}):
        expected = [repr(r) for r in sorted(collect(frame()))]
    with rules_enabled(spark, batches=[Batch("rebuild", Once(), (rebuild_everything,))]), \
            conf(spark, {"spark.sparkext.strict": "true"}):
        sparkext.reset_metrics(spark)
        actual = [repr(r) for r in sorted(collect(frame()))]
        m = sparkext.metrics(spark)
    assert actual == expected
    assert m["accepted"] == 1, m
