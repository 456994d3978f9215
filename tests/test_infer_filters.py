"""infer_filters on hand-built plans. ``CASES`` is the single source of each case's input;
the plan the rule must make of it is in tests/plans/mirror/infer_filters.txt, under the
case's title (tests/golden.py). Real Spark plans and rows: tests/fixtures/rules/
infer_filters.sql (tests/test_rule_fixtures.py)."""

from __future__ import annotations

import pytest

from sparkext import types as T
from sparkext.expressions import (
    FALSE,
    Add,
    Alias,
    And,
    Cast,
    EqualNullSafe,
    EqualTo,
    GetStructField,
    GreaterThan,
    GreaterThanOrEqual,
    IsNotNull,
    LessThan,
    Or,
    Rand,
    lit,
)
from sparkext.plan import Aggregate, Filter, Join, Project
from sparkext.rules.infer_filters import infer_filters
from tests import golden
from tests.mirror_plans import Table, agg

L = Table("l", "a b c:string", 1)
R = Table("r", "x y z:string", 11)
N = Table("n", "k v", 31, nullable=False)
D = Table("d", "p:double q:double s:struct", 41)

CASES = {
    "a null-intolerant predicate implies its columns are not null, put first":
        Filter(GreaterThan(Add(L.a, L.b), lit(1)), L.rel),
    "constants travel across column equalities":
        Filter(And(EqualTo(L.a, L.b), EqualTo(L.a, lit(5))), L.rel),
    "inner join keys are not null on both sides":
        Join(L.rel, R.rel, "Inner", EqualTo(L.a, R.x)),
    "a constant on one side of an inner join reaches the other side":
        Join(Filter(EqualTo(L.a, lit(5)), L.rel), R.rel, "Inner", EqualTo(L.a, R.x)),
    "left outer join: only the null-supplying side is filtered":
        Join(Filter(EqualTo(L.a, lit(5)), L.rel), R.rel, "LeftOuter", EqualTo(L.a, R.x)),
    "right outer join: only the left side is filtered":
        Join(L.rel, Filter(EqualTo(R.x, lit(5)), R.rel), "RightOuter", EqualTo(L.a, R.x)),
    "full outer join: nothing is inferred":
        Join(L.rel, R.rel, "FullOuter", EqualTo(L.a, R.x)),
    "left semi join: both sides, like an inner join":
        Join(L.rel, R.rel, "LeftSemi", EqualTo(L.a, R.x)),
    "left anti join: only the right side (its NULL keys never match)":
        Join(L.rel, R.rel, "LeftAnti", EqualTo(L.a, R.x)),
    "a null-safe join key implies nothing about NULLs":
        Join(L.rel, R.rel, "Inner", EqualNullSafe(L.a, R.x)),
    "a disjunction implies no single column is not null":
        Filter(Or(GreaterThan(L.a, lit(1)), GreaterThan(L.b, lit(1))), L.rel),
    "what a non-deterministic predicate implies goes after it (so it never moves)":
        Filter(GreaterThan(Add(L.a, Rand(lit(1))), lit(1)), L.rel),
    "with a non-deterministic conjunct, a column's IsNotNull goes last (rand sees its rows)":
        Filter(And(GreaterThan(L.a, lit(1)), GreaterThan(Rand(lit(1)), lit(0.5))), L.rel),
    "non-nullable columns need no IsNotNull":
        Filter(GreaterThan(N.k, lit(1)), N.rel),
    "what the input already guarantees is not added again":
        Filter(GreaterThan(L.a, lit(1)), Filter(IsNotNull(L.a), L.rel)),
    "a constant replaces its column in the other predicates":
        Filter(And(EqualTo(L.a, lit(5)), GreaterThanOrEqual(L.b, L.a)), L.rel),
    "a restated constant decides the comparisons it completes: (5 = 4 OR b = 1) is b = 1":
        Filter(And(EqualTo(L.a, lit(5)), Or(EqualTo(L.a, lit(4)), EqualTo(L.b, lit(1)))),
               L.rel),
    "a restatement that comes out true adds nothing":
        Filter(And(EqualTo(L.a, lit(5)),
                   Or(EqualTo(L.a, lit(5)), And(EqualTo(L.a, lit(4)), EqualTo(L.b, lit(1))))),
               L.rel),
    "an equality with a cast column restates the other column's predicates":
        Filter(And(EqualTo(Cast(L.a, T.LONG), R.x), GreaterThan(R.x, lit(5))),
               Join(L.rel, R.rel, "Cross", None)),
    "one equality written both ways implies no a = a":
        Filter(And(EqualTo(L.a, L.b), EqualTo(L.b, L.a)), L.rel),
    "nothing is restated across floating-point equalities (-0.0 = 0.0)":
        Filter(And(EqualTo(D.p, D.q), EqualTo(Cast(D.p, T.STRING), lit("-0.0"))), D.rel),
    "a struct field predicate implies the field is not null, not the struct":
        Filter(EqualTo(GetStructField(D.s, 0, "f"), lit(1)), D.rel),
    "contradiction: a > b restated across a = b is b > b, so the filter keeps no row: false":
        Filter(And(EqualTo(L.a, L.b), GreaterThan(L.b, L.a)), L.rel),
    "contradiction in a join: the sides it may filter get false, nothing is evaluated":
        Join(L.rel, Project((Alias(Add(R.x, lit(1), _type=T.INT), "k", 35),), R.rel), "Inner",
             And(EqualTo(L.a, R.x), LessThan(L.a, R.x))),
    "e >= e of a nullable e is dropped (stating it would evaluate e), not folded to true":
        Filter(And(EqualTo(L.a, L.b), GreaterThanOrEqual(L.b, L.a)), L.rel),
    "e >= e of a non-nullable e is true: nothing is added":
        Filter(And(EqualTo(N.k, N.v), GreaterThanOrEqual(N.v, N.k)), N.rel),
    "two constants bound to one column are a contradiction":
        Filter(And(EqualTo(L.a, lit(5)), EqualTo(L.a, lit(4))), L.rel),
    "false below a global aggregate does not reach above it (it gives one row)":
        Filter(GreaterThan(Alias(agg("Count", L.a), "n", 36).to_attribute(), lit(0)),
               Aggregate((), (Alias(agg("Count", L.a), "n", 36),), Filter(FALSE, L.rel))),
    "constraints pass through projections":
        Join(Project((L.a,), Filter(EqualTo(L.a, lit(5)), L.rel)), R.rel, "Inner",
             EqualTo(L.a, R.x)),
}


@pytest.mark.parametrize("title", list(CASES))
def test_infer_filters(title, update_plans):
    plan = CASES[title]
    out = infer_filters(plan)
    golden.check("infer_filters", title, out.tree_string(), update_plans)
    assert [a.expr_id for a in out.output] == [a.expr_id for a in plan.output]
    assert infer_filters(out) is out, "inferred again: the rule would not converge"


def test_every_expected_plan_has_its_case():
    assert not golden.stale("infer_filters", CASES), "plans of no case: remove them"
