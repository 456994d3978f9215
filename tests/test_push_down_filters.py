"""push_down_filters on hand-built plans: one case per legality condition, named after the
hazard it guards. ``CASES`` is the single source of each case's input; the plan the rule
must make of it is in tests/plans/mirror/push_down_filters.txt, under the case's title
(tests/golden.py). Rows are compared on real Spark plans in
tests/fixtures/rules/push_down_filters.sql (tests/test_rule_fixtures.py),
test_catalyst_parity.py and test_differential.py."""

from __future__ import annotations

import pytest

from sparkext import types as T
from sparkext.expressions import (
    Add,
    Alias,
    And,
    AttributeReference,
    Cast,
    EqualTo,
    Explode,
    GreaterThan,
    If,
    IsNotNull,
    IsNull,
    LessThan,
    Literal,
    OpaqueExpression,
    Or,
    Rand,
    asc,
    lit,
)
from sparkext.plan import (
    Aggregate,
    AliasIdentifier,
    Deduplicate,
    Distinct,
    ExistenceJoin,
    Expand,
    Filter,
    Generate,
    GlobalLimit,
    Join,
    LocalLimit,
    Opaque,
    Project,
    Repartition,
    Sample,
    Sort,
    SubqueryAlias,
    Union,
    Window,
)
from sparkext.rules.push_down_filters import push_down_filters
from tests import golden
from tests.mirror_plans import Table, agg

L = Table("l", "a b c:string", 1)
R = Table("r", "x y z:string", 11)
S = Table("s", "p q", 21)
D = Table("dd", "d:double e", 41)


def subquery(h: int = 80):
    """An uncorrelated scalar subquery whose plan outputs attribute #1 (like L.a)."""
    return OpaqueExpression("ScalarSubquery", (), h, subquery_output=(L.a,), _type=T.INT)


EXISTS = AttributeReference("exists", T.BOOLEAN, False, None, 40)
SUM_Y = Alias(agg("Sum", R.y), "sy", 31)
K = Alias(Add(R.x, lit(1), _type=T.INT), "k", 32)

CASES = {
    "a filter moves below a projection, aliases replaced by what they name":
        Filter(GreaterThan(K.to_attribute(), lit(5)), Project((K, R.y), R.rel)),
    "a filter stays above a projection with a non-deterministic column":
        Filter(GreaterThan(R.x, lit(5)), Project((R.x, Alias(Rand(lit(1)), "r", 33)), R.rel)),
    "a non-deterministic conjunct stays, and so do the conjuncts after it":
        Filter(And(And(GreaterThan(R.x, lit(1)), GreaterThan(Rand(lit(1)), lit(0.5))),
                   GreaterThan(R.y, lit(2))), Project((R.x, R.y), R.rel)),
    "filters that meet are combined with the lower filter's conjuncts first":
        Filter(GreaterThan(R.x, lit(1)), Filter(LessThan(R.y, lit(9)), R.rel)),
    "a conjunct the lower filter already has is not repeated":
        Filter(And(LessThan(R.y, lit(9)), GreaterThan(R.x, lit(1))),
               Filter(LessThan(R.y, lit(9)), R.rel)),
    "a filter never moves below a non-deterministic filter":
        Filter(GreaterThan(R.x, lit(1)), Filter(GreaterThan(Rand(lit(1)), lit(0.5)), R.rel)),
    "inner join: one-sided conjuncts go to their side, two-sided ones after the join condition":
        Filter(And(And(GreaterThan(L.a, lit(1)), EqualTo(R.z, lit("u"))),
                   LessThan(L.b, R.y)),
               Join(L.rel, R.rel, "Inner", EqualTo(L.a, R.x))),
    "left outer join: a WHERE conjunct on the null-supplying side stays above":
        Filter(And(GreaterThan(L.a, lit(1)), IsNull(R.z)),
               Join(L.rel, R.rel, "LeftOuter", EqualTo(L.a, R.x))),
    "an outer join whose NULL-padded rows a WHERE conjunct rejects becomes an inner join":
        Filter(And(GreaterThan(L.a, lit(1)), EqualTo(R.z, lit("u"))),
               Join(L.rel, R.rel, "LeftOuter", EqualTo(L.a, R.x))),
    "a full outer join rejected on one side becomes a left outer join":
        Filter(GreaterThan(L.b, lit(1)), Join(L.rel, R.rel, "FullOuter", EqualTo(L.a, R.x))),
    "an outer join is eliminated by evaluation: if(isnull(y), 0, x) > 0 is false for NULLs":
        Filter(GreaterThan(If(IsNull(R.y), lit(0), R.x), lit(0)),
               Join(L.rel, R.rel, "LeftOuter", EqualTo(L.a, R.x))),
    "a conjunct that is true for NULLs keeps the outer join: if(isnull(y), 1, x) > 0":
        Filter(GreaterThan(If(IsNull(R.y), lit(1), R.x), lit(0)),
               Join(L.rel, R.rel, "LeftOuter", EqualTo(L.a, R.x))),
    "a conjunct that keeps NULL-padded rows does not change the join type":
        Filter(Or(IsNull(R.y), GreaterThan(R.y, lit(1))),
               Join(L.rel, R.rel, "LeftOuter", EqualTo(L.a, R.x))),
    "left outer join: an ON conjunct filters the null-supplying side, not the preserved one":
        Join(L.rel, R.rel, "LeftOuter",
             And(And(EqualTo(L.a, R.x), GreaterThan(L.b, lit(1))), GreaterThan(R.y, lit(2)))),
    "right outer join: the mirror image of left outer":
        Filter(And(IsNull(L.c), EqualTo(R.z, lit("u"))),
               Join(L.rel, R.rel, "RightOuter",
                    And(EqualTo(L.a, R.x), GreaterThan(L.b, lit(1))))),
    "full outer join: nothing moves, neither from WHERE nor from ON":
        Filter(IsNull(L.a),
               Join(L.rel, R.rel, "FullOuter", And(EqualTo(L.a, R.x), GreaterThan(R.y, lit(2))))),
    "inner join: on a side, WHERE conjuncts (pushed first) before ON ones, none can raise":
        Filter(GreaterThan(R.y, lit(2)),
               Join(L.rel, R.rel, "Inner",
                    And(EqualTo(L.a, R.x), GreaterThan(R.x, lit(0))))),
    "inner join: on a side, a WHERE conjunct that cannot raise comes before an ON one that may":
        Filter(GreaterThan(R.y, lit(2)),
               Join(L.rel, R.rel, "Inner",
                    And(EqualTo(L.a, R.x), GreaterThan(Add(R.x, lit(1)), lit(0))))),
    "two filters combined: what cannot raise first, then lower before upper":
        Filter(And(GreaterThan(Add(L.a, lit(1)), lit(0)), GreaterThan(L.b, lit(1))),
               Filter(And(GreaterThan(Add(L.b, lit(2)), lit(0)), IsNotNull(L.a)), L.rel)),
    "left semi join: WHERE goes left, ON conjuncts go to their side":
        Filter(GreaterThan(L.a, lit(1)),
               Join(L.rel, R.rel, "LeftSemi",
                    And(And(EqualTo(L.a, R.x), GreaterThan(L.b, lit(1))),
                        GreaterThan(R.y, lit(2))))),
    "left anti join: an ON conjunct on the left side must stay (it decides the match)":
        Join(L.rel, R.rel, "LeftAnti",
             And(And(EqualTo(L.a, R.x), GreaterThan(L.b, lit(1))), GreaterThan(R.y, lit(2)))),
    "existence join: a conjunct on the exists column stays above, a left one moves":
        Filter(And(GreaterThan(L.a, lit(1)), Or(EXISTS, GreaterThan(L.b, lit(2)))),
               Join(L.rel, R.rel, ExistenceJoin(EXISTS), EqualTo(L.a, R.x))),
    "aggregate: a conjunct on a grouping output moves, one on an aggregate stays":
        Filter(And(GreaterThan(K.to_attribute(), lit(5)),
                   GreaterThan(SUM_Y.to_attribute(), lit(10))),
               Aggregate((Add(R.x, lit(1), _type=T.INT),), (K, SUM_Y), R.rel)),
    "global aggregate: nothing moves (an empty input still gives one row)":
        Filter(GreaterThan(SUM_Y.to_attribute(), lit(10)), Aggregate((), (SUM_Y,), R.rel)),
    "aggregate with a non-deterministic grouping expression: nothing moves":
        Filter(GreaterThan(R.x, lit(5)), Aggregate((R.x, Rand(lit(1))), (R.x,), R.rel)),
    "window: a conjunct on the partition key moves, one on another column stays":
        Filter(And(EqualTo(R.x, lit(1)), GreaterThan(R.y, lit(2))),
               Window((Alias(OpaqueExpression("RowNumber", (), 70), "rn", 34),), (R.x,),
                      (asc(R.y),), R.rel)),
    "union: a filter goes into every child, columns matched by position":
        Filter(GreaterThan(L.a, lit(1)),
               Union((Project((L.a, L.b), L.rel), Project((R.x, R.y), R.rel)))),
    "generate: a conjunct on the generator's output stays, one on child columns moves":
        Filter(And(GreaterThan(L.a, lit(1)), EqualTo(S.p, lit(3))),
               Generate(Explode(L.b), (), False, None, (S.p,), L.rel)),
    "expand: a conjunct on a passed-through column moves, one on a nulled column stays":
        Filter(And(GreaterThan(R.y, lit(1)), EqualTo(S.p, lit(2))),
               Expand(((R.y, R.x, lit(0)), (R.y, Literal(None, T.INT), lit(1))),
                      (R.y, S.p, S.q), R.rel)),
    "limit: a filter never moves below a limit":
        Filter(GreaterThan(R.x, lit(1)), GlobalLimit(lit(5), LocalLimit(lit(5), R.rel))),
    "sample: a filter never moves below a sample":
        Filter(GreaterThan(R.x, lit(1)), Sample(0.0, 0.5, False, 7, R.rel)),
    "opaque nodes are barriers":
        Filter(GreaterThan(R.x, lit(1)), Opaque("Intersect", R.columns, (R.rel, R.rel), 60)),
    "deduplicate: only conjuncts on the keys move":
        Filter(And(GreaterThan(R.x, lit(1)), GreaterThan(R.y, lit(1))),
               Deduplicate((R.x,), R.rel)),
    "sort, repartition, subquery alias and distinct let filters through":
        Filter(GreaterThan(R.x, lit(1)),
               Sort((asc(R.y),), True, Repartition(4, True, SubqueryAlias(
                   AliasIdentifier("rr"), Distinct(R.rel))))),
    "a conjunct with a subquery does not go into a join condition":
        Filter(GreaterThan(Add(L.b, R.y, _type=T.INT), subquery()),
               Join(L.rel, R.rel, "Inner", EqualTo(L.a, R.x))),
    "a subquery conjunct is not moved next to columns of the subquery's own output ids":
        Filter(GreaterThan(L.b, subquery()), Project((L.a, L.b), L.rel)),
    "a two-sided disjunction leaves each side the part it can check alone":
        Join(L.rel, R.rel, "Inner",
             And(EqualTo(L.a, R.x),
                 Or(And(EqualTo(L.c, lit("A")), GreaterThan(R.y, lit(1))),
                    And(EqualTo(L.c, lit("B")), LessThan(R.y, lit(9)))))),
    "a side that already guarantees the extracted part gets nothing new":
        Join(Filter(Or(EqualTo(L.c, lit("A")), EqualTo(L.c, lit("B"))), L.rel),
             Filter(Or(GreaterThan(R.y, lit(1)), LessThan(R.y, lit(9))), R.rel), "Inner",
             And(EqualTo(L.a, R.x),
                 Or(And(EqualTo(L.c, lit("A")), GreaterThan(R.y, lit(1))),
                    And(EqualTo(L.c, lit("B")), LessThan(R.y, lit(9)))))),
    "aggregate on a double key: a conjunct that tells -0.0 from 0.0 stays, a comparison moves":
        Filter(And(EqualTo(Cast(D.d, T.STRING), lit("0.0")), GreaterThan(D.d, lit(0.5))),
               Aggregate((D.d,), (D.d,), D.rel)),
    "aggregate: a string computed from a double key is computed from the normalised key":
        Filter(EqualTo(Alias(Cast(D.d, T.STRING), "s", 37).to_attribute(), lit("-0.0")),
               Aggregate((D.d,), (Alias(Cast(D.d, T.STRING), "s", 37),), D.rel)),
    "distinct over a double column: a cast to string stays above, a cast to int moves":
        Filter(And(EqualTo(Cast(D.d, T.STRING), lit("-0.0")),
                   EqualTo(Cast(D.d, T.INT), lit(0))), Distinct(D.rel)),
    "deduplicate on a double key: arithmetic on the key stays above":
        Filter(GreaterThan(Add(D.d, lit(1.0), _type=T.DOUBLE), lit(0.5)),
               Deduplicate((D.d,), D.rel)),
    "window partitioned by a double: a conjunct that tells -0.0 from 0.0 stays, isnull moves":
        Filter(And(EqualTo(Cast(D.d, T.STRING), lit("0.0")), IsNull(D.d)),
               Window((Alias(OpaqueExpression("RowNumber", (), 70), "rn", 34),), (D.d,),
                      (asc(D.e),), D.rel)),
    "an ANSI cast in a lower filter still runs first after combining":
        Filter(GreaterThan(Cast(L.c, T.INT), lit(0)),
               Project((L.a, L.c), Filter(EqualTo(L.c, lit("7")), L.rel))),
}


@pytest.mark.parametrize("title", list(CASES))
def test_push_down_filters(title, update_plans):
    plan = CASES[title]
    out = push_down_filters(plan)
    golden.check("push_down_filters", title, out.tree_string(), update_plans)
    assert [(a.expr_id, a.name) for a in out.output] == [(a.expr_id, a.name) for a in plan.output]
    assert push_down_filters(out) is out, "not at a fixed point after one run"


def test_every_expected_plan_has_its_case():
    assert not golden.stale("push_down_filters", CASES), "plans of no case: remove them"


def test_nothing_to_push_returns_the_same_object():
    plan = Project((R.x,), Filter(GreaterThan(R.x, lit(1)), R.rel))
    assert push_down_filters(plan) is plan


def test_inferred_is_not_null_is_not_pushed_twice():
    plan = Filter(IsNotNull(R.x), Filter(IsNotNull(R.x), R.rel))
    assert push_down_filters(plan) == Filter(IsNotNull(R.x), R.rel)


def test_a_correlated_subquery_pushed_into_a_union_child_reads_that_childs_columns():
    # EXISTS (... WHERE s.p = u.b) over u = l UNION ALL r: in r's copy the subquery reads y.
    # Left reading b, pruning would drop y under it and Spark would reject the plan.
    correlated = OpaqueExpression("Exists", (OpaqueExpression("OuterReference", (L.b,), 82),),
                                  81, references_=frozenset({L.b.expr_id}),
                                  subquery_output=S.columns, _type=T.BOOLEAN)
    plan = Filter(correlated, Union((Project((L.a, L.b), L.rel), Project((R.x, R.y), R.rel))))
    out = push_down_filters(plan)
    filters = [n for n in out.walk() if isinstance(n, Filter)]
    assert len(filters) == 2, out.tree_string()
    for f in filters:
        assert f.condition.references <= f.child.output_ids, out.tree_string()
    assert {next(iter(f.condition.references)) for f in filters} == {L.b.expr_id, R.y.expr_id}
