"""Null rejection decided by evaluation (sparkext.analysis.evaluation.rejects_nulls), as Catalyst's
EliminateOuterJoin decides it: a predicate rejects a side when it is NULL or false on every
row where that side's columns are NULL, whatever the other columns hold."""

from __future__ import annotations

import pytest

from sparkext import types as T
from sparkext.analysis.evaluation import rejects_nulls
from sparkext.expressions import (
    Add,
    And,
    CaseWhen,
    Coalesce,
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    If,
    IsNotNull,
    IsNull,
    LessThan,
    Not,
    OpaqueExpression,
    Or,
    Rand,
    lit,
)
from tests.mirror_plans import Table

L = Table("l", "a b", 1)
R = Table("r", "x y", 11)
RIGHT = R.rel.output_ids

REJECTING = {
    "a comparison of a NULL column": GreaterThan(R.x, lit(1)),
    "through null-intolerant arithmetic": GreaterThan(Add(R.x, L.a, _type=T.INT), lit(1)),
    "isnotnull of the column": IsNotNull(R.y),
    "a two-sided comparison": EqualTo(L.a, R.x),
    "AND with one rejecting side": And(GreaterThan(L.a, lit(1)), GreaterThan(R.x, lit(1))),
    "OR of two rejecting sides": Or(GreaterThan(R.x, lit(1)), LessThan(R.y, lit(0))),
    "the scalar subquery's count: if(isnull(y), 0, x) < 0":
        LessThan(If(IsNull(R.y), lit(0), R.x), lit(0)),
    "case when isnull(y) then 0 else x end > 0":
        GreaterThan(CaseWhen(((IsNull(R.y), lit(0)),), R.x), lit(0)),
    "coalesce(x, y) > 1": GreaterThan(Coalesce((R.x, R.y)), lit(1)),
    "NOT (isnull(x))": Not(IsNull(R.x)),
    "x <=> 1": EqualNullSafe(R.x, lit(1)),
}

KEEPING = {
    "isnull of the column": IsNull(R.x),
    "OR with a side that does not reject": Or(GreaterThan(R.x, lit(1)), GreaterThan(L.a, lit(1))),
    "if(isnull(y), 1, x) > 0 (1 > 0 for NULLs)": GreaterThan(If(IsNull(R.y), lit(1), R.x), lit(0)),
    "coalesce(x, 5) > 1": GreaterThan(Coalesce((R.x, lit(5))), lit(1)),
    "a function sparkext cannot evaluate":
        OpaqueExpression("MadeUp", (R.x,), 90, _type=T.BOOLEAN, _null_intolerant=False),
    "a non-deterministic predicate": GreaterThan(Add(R.x, Rand(lit(1)), _type=T.DOUBLE), lit(1)),
    "x <=> y": EqualNullSafe(R.x, R.y),
}


@pytest.mark.parametrize("name", list(REJECTING))
def test_a_predicate_null_or_false_for_null_columns_rejects_them(name):
    assert rejects_nulls(REJECTING[name], RIGHT)


@pytest.mark.parametrize("name", list(KEEPING))
def test_a_predicate_that_may_be_true_for_null_columns_does_not_reject_them(name):
    assert not rejects_nulls(KEEPING[name], RIGHT)
