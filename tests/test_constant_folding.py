"""The one constant folder (``sparkext.analysis.evaluation.compare_constants``), shared by
the constraints' simplification (``simplify_inferred``) and the three-valued evaluator that
decides null rejection. They disagreed on strings: constraints folded a comparison of two
STRING literals, the evaluator left every string unknown. Python orders ``str`` by code
point, as Spark orders UTF8_BINARY strings by their UTF-8 bytes, so both now fold those;
under another collation neither does (``'A' = 'a'`` is true in UTF8_LCASE)."""

from __future__ import annotations

import pytest

from sparkext import types as T
from sparkext.analysis.constraints import simplify_inferred
from sparkext.analysis.evaluation import compare_constants, evaluate_with_nulls, rejects_nulls
from sparkext.expressions import (
    FALSE,
    AttributeReference,
    EqualTo,
    GreaterThan,
    LessThan,
    Literal,
    Or,
)
from sparkext.types import DataType

LCASE = DataType('"string collate UTF8_LCASE"')
B = AttributeReference("b", T.LONG, True, None, 1)
NULL_B = frozenset({1})


def s(value: str, t: DataType = T.STRING) -> Literal:
    return Literal(value, t)


@pytest.mark.parametrize("comparison, value", [
    (LessThan(s("Z"), s("a")), True),        # by code point: 'Z' (90) before 'a' (97)
    (EqualTo(s("x"), s("y")), False),
    (GreaterThan(s("é"), s("z")), True),     # U+00E9 after 'z', as its UTF-8 bytes are
], ids=["less", "equal", "beyond ascii"])
def test_a_string_comparison_folds_one_way_in_constraints_and_in_the_evaluator(
        comparison, value):
    # simplify_inferred: None is "true, nothing to add", FALSE a contradiction.
    assert simplify_inferred(comparison) == (None if value else FALSE)
    assert evaluate_with_nulls(comparison, frozenset()) == {value}


def test_a_false_string_comparison_no_longer_hides_null_rejection():
    # b > 5 OR 'x' = 'y': NULL OR false when b is NULL, so it rejects b's NULL rows (before,
    # the evaluator could not fold 'x' = 'y' and took the predicate as possibly true).
    assert rejects_nulls(Or(GreaterThan(B, Literal(5, T.LONG)), EqualTo(s("x"), s("y"))), NULL_B)


def test_a_collated_string_comparison_folds_in_neither():
    equal_in_lcase = EqualTo(s("A", LCASE), s("a", LCASE))
    assert compare_constants("EqualTo", "A", "a", LCASE) is None
    assert simplify_inferred(equal_in_lcase) is None  # not decided: nothing is added
    assert simplify_inferred(Or(equal_in_lcase, FALSE)) is None
    assert not rejects_nulls(Or(GreaterThan(B, Literal(5, T.LONG)), equal_in_lcase), NULL_B)


def test_the_folder_decides_only_values_python_compares_as_spark():
    assert compare_constants("LessThan", 1, 2, T.LONG) is True
    assert compare_constants("LessThan", 1.0, 2.0, T.DOUBLE) is None   # NaN, -0.0
    assert compare_constants("EqualTo", "a", "a", DataType('"char(3)"')) is None
    assert compare_constants("EqualTo", None, 1, T.LONG) is None
    assert compare_constants("EqualNullSafe", 1, 1, T.LONG) is None    # not a folded one


def test_a_comparison_whose_type_python_cannot_derive_is_unknown_not_an_error():
    # A rule-built Add of a LONG column and an INT literal: Python derives no type for it;
    # the evaluator answers "may be true" (does not reject), as before the shared folder.
    from sparkext.expressions import Add, lit
    a = AttributeReference("a", T.LONG, True, None, 2)
    assert not rejects_nulls(GreaterThan(Add(a, lit(1)), lit(5)), NULL_B)


@pytest.mark.parametrize("x, y, t", [
    (2 ** 53, 2 ** 53 + 1, T.DOUBLE),   # equal as doubles, not as Python ints
    (1, 1, DataType('"decimal(10,2)"')),
])
def test_integers_of_a_non_integral_type_are_not_folded(x, y, t):
    assert compare_constants("EqualTo", x, y, t) is None
    assert simplify_inferred(EqualTo(Literal(x, t), Literal(y, t))) is None


@pytest.mark.parametrize("t", [T.LONG, T.DATE, T.TIMESTAMP, T.BOOLEAN,
                               DataType('"interval day to second"')])
def test_integral_and_date_time_values_fold(t):
    x, y = (False, True) if t == T.BOOLEAN else (1, 2)
    assert compare_constants("LessThan", x, y, t) is True
