"""Row comparison for differential tests (chispa's row comparers, NaN == NaN)."""

from __future__ import annotations

from chispa.row_comparer import are_rows_equal_enhanced
from chispa.rows_comparer import assert_generic_rows_equality
from pyspark.sql import functions as F
from pyspark.sql.types import YearMonthIntervalType


def collect(df) -> list:
    """The rows of ``df``; year-month intervals as text (pyspark cannot collect them)."""
    cols = [F.col(f"`{f.name}`").cast("string").alias(f.name)
            if isinstance(f.dataType, YearMonthIntervalType) else F.col(f"`{f.name}`")
            for f in df.schema.fields]
    if any(isinstance(f.dataType, YearMonthIntervalType) for f in df.schema.fields):
        df = df.select(*cols)
    return df.collect()


def assert_same_rows(expected: list, actual: list, ordered: bool = False) -> None:
    """Same rows (as a multiset, or in order when ``ordered``); prints both on mismatch."""
    if not ordered:
        expected = sorted(expected, key=repr)
        actual = sorted(actual, key=repr)
    assert_generic_rows_equality(expected, actual, are_rows_equal_enhanced,
                                 {"allow_nan_equality": True})
