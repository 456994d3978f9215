"""prune_columns on hand-built plans. ``CASES`` and ``BEFORE_SUBQUERY_REWRITE`` are the
single source of each case's input; the plan the rule must make of it is in
tests/plans/mirror/prune_columns.txt, under the case's title (tests/golden.py). Real Spark
plans and rows: tests/fixtures/rules/prune_columns.sql and prune_subquery_inputs.sql
(tests/test_rule_fixtures.py)."""

from __future__ import annotations

import pytest

from sparkext import types as T
from sparkext.expressions import (
    Add,
    Alias,
    EqualTo,
    Explode,
    GreaterThan,
    LessThan,
    Literal,
    OpaqueExpression,
    Rand,
    asc,
    lit,
)
from sparkext.plan import (
    Aggregate,
    AliasIdentifier,
    Deduplicate,
    Distinct,
    Expand,
    Filter,
    Generate,
    GlobalLimit,
    Join,
    LocalLimit,
    LogicalPlan,
    Opaque,
    Project,
    RebalancePartitions,
    Repartition,
    RepartitionByExpression,
    Sample,
    Sort,
    SubqueryAlias,
    Union,
    Window,
)
from sparkext.rules.prune_columns import _PRUNED, _narrow_exists_subqueries, _Pruner, prune_columns
from tests import golden
from tests.mirror_plans import Table, agg

L = Table("l", "a b c:string d", 1)
R = Table("r", "x y z:string", 11)
S = Table("s", "p q", 21)


def exists(h: int = 80):
    """EXISTS over a plan with output x, y, z, correlated on x = outer a."""
    return OpaqueExpression("Exists", (L.a, EqualTo(R.x, L.a)), h,
                            subquery_output=R.columns, _type=T.BOOLEAN)


CASES = {
    "an unused alias is dropped from a projection":
        Project((L.a,), Project((L.a, Alias(Add(L.b, lit(1), _type=T.INT), "b1", 41)), L.rel)),
    "an aggregate over a filtered relation reads only the columns it needs":
        Aggregate((L.a,), (L.a, Alias(agg("Sum", L.b), "s", 42)),
                  Filter(GreaterThan(L.d, lit(0)), L.rel)),
    "the root keeps its whole output":
        Filter(GreaterThan(L.d, lit(0)), L.rel),
    "an unused aggregate expression is dropped":
        Project((L.a,), Aggregate((L.a,), (L.a, Alias(agg("Sum", L.b), "s", 42)), L.rel)),
    "a window whose result nobody reads is removed":
        Project((L.a,), Window((Alias(OpaqueExpression("RowNumber", (), 70), "rn", 43),),
                               (L.b,), (asc(L.d),), L.rel)),
    "union children lose the same positions":
        Project((L.a,), Union((Project((L.a, L.b), L.rel), Project((R.x, R.y), R.rel)))),
    "generate drops child columns only the generator needed":
        Project((L.a, S.p), Generate(Explode(L.b), (), False, None, (S.p,), L.rel)),
    "expand drops unused positions from every projection":
        Aggregate((S.p,), (S.p, Alias(agg("Count", L.a), "n", 44)),
                  Expand(((L.a, L.b, L.c, S.q), (L.a, Literal(None, T.INT), L.c, S.q)),
                         (L.a, S.p, L.c, S.q), L.rel)),
    "nothing is pruned below a distinct (it would change what is distinct)":
        Project((L.a,), Distinct(L.rel)),
    "nothing is pruned below an opaque node":
        Project((L.a,), Opaque("Intersect", L.columns, (L.rel, L.rel), 60)),
    "join inputs keep their join keys and what is needed above":
        Project((L.b, R.y), Join(L.rel, R.rel, "Inner", EqualTo(L.a, R.x))),
    "a semi join's right side keeps only the join keys":
        Project((L.b,), Join(L.rel, R.rel, "LeftSemi", EqualTo(L.a, R.x))),
    "sort keys are kept below a projection that drops them":
        Project((L.a,), Sort((asc(L.d),), True, L.rel)),
}

#: Every node that passes its child's columns through, as a function of its child.
PASS_THROUGH = {
    "sort": lambda c: Sort((asc(L.d),), True, c),
    "sample": lambda c: Sample(0.0, 0.5, False, 7, c),
    "limit": lambda c: GlobalLimit(lit(5), LocalLimit(lit(5), c)),
    "round-robin repartition": lambda c: Repartition(3, True, c),
    "repartition by expression": lambda c: RepartitionByExpression((L.d,), c, 3),
    "rebalance": lambda c: RebalancePartitions((L.d,), c),
    "subquery alias": lambda c: SubqueryAlias(AliasIdentifier("v"), c),
    "window": lambda c: Window((Alias(OpaqueExpression("RowNumber", (), 70), "rn", 43),),
                               (L.d,), (asc(L.c),), c),
}


def _reads(node: LogicalPlan) -> tuple:
    """What above a pass-through node reads: ``a`` (and the window's result)."""
    return (L.a,) + tuple(a for a in node.output if a.name == "rn")


for _kind, _node in PASS_THROUGH.items():
    CASES[f"a {_kind} on a relation gets only the needed columns from it"] = Project(
        _reads(_node(L.rel)), _node(L.rel))
    CASES[f"a {_kind} over a filter on a relation gets only the needed columns from it"] = (
        Project(_reads(_node(L.rel)), _node(Filter(GreaterThan(L.b, lit(0)), L.rel))))

CASES.update({
    "a relation that produces only what is needed gets no projection":
        Project((L.a, L.b, L.c, L.d), Sort((asc(L.d),), True, L.rel)),
    "pass-through nodes in a row need one projection, on the relation":
        Project((L.a,), Sort((asc(L.d),), True, GlobalLimit(lit(5), LocalLimit(
            lit(5), Repartition(3, True, Filter(GreaterThan(L.b, lit(0)), L.rel)))))),
    "nothing is pruned below a distinct under a sort (it would change what is distinct)":
        Project((L.a,), Sort((asc(L.d),), True, Distinct(L.rel))),
    "nothing is pruned below a deduplicate under a sort (it keeps whole rows)":
        Project((L.a,), Sort((asc(L.d),), True, Deduplicate((L.a,), L.rel))),
    "a nondeterministic filter stays where it is, the projection goes above it":
        Project((L.a,), Sort((asc(L.d),), True,
                             Filter(LessThan(Rand(lit(1)), lit(0.5)), L.rel))),
})

BEFORE_SUBQUERY_REWRITE = {
    "an EXISTS subquery's plan is narrowed to the columns its correlation reads":
        Project((L.b,), Filter(exists(), L.rel)),
    "a filter with EXISTS gets the Project below it (it becomes a join later)":
        Project((L.b,), Filter(exists(), Filter(GreaterThan(L.d, lit(0)), L.rel))),
    "a scalar subquery stays an expression: nothing below its filter":
        Project((L.b,), Filter(GreaterThan(L.a, OpaqueExpression(
            "ScalarSubquery", (), 81, subquery_output=(R.x,), _type=T.INT)), L.rel)),
}


@pytest.mark.parametrize("title", list(CASES) + list(BEFORE_SUBQUERY_REWRITE))
def test_prune_columns(title, update_plans):
    before = title in BEFORE_SUBQUERY_REWRITE
    plan = (BEFORE_SUBQUERY_REWRITE if before else CASES)[title]
    out = prune_columns(plan, before_subquery_rewrite=before)
    shown = out.tree_string()
    for e in (x for n in out.walk() for ex in n.expressions for x in ex.walk()):
        if isinstance(e, OpaqueExpression) and e.keep is not None:
            shown += f"\n(subquery {e.cls} keeps {sorted(e.keep)})"
    golden.check("prune_columns", title, shown, update_plans)
    assert [a.expr_id for a in out.output] == [a.expr_id for a in plan.output]
    assert prune_columns(out, before_subquery_rewrite=before) is out, "not at a fixed point"


def test_every_expected_plan_has_its_case():
    assert not golden.stale("prune_columns", [*CASES, *BEFORE_SUBQUERY_REWRITE]), \
        "plans of no case: remove them"


def test_a_plan_with_nothing_to_prune_is_returned_as_is():
    plan = Project((L.a, L.b, L.c, L.d), L.rel)
    assert prune_columns(plan) is plan


@pytest.mark.parametrize("title", list(CASES))
def test_without_predicate_subqueries_both_rules_share_one_answer(title):
    """prune_subquery_inputs differs from prune_columns only around EXISTS and IN
    subqueries: without one, it reads the answer prune_columns keeps on the node (and a
    fixed point's confirming round reads it too)."""
    plan = CASES[title]
    # The same function (computed apart, past the kept answer) ...
    assert _narrow_exists_subqueries(plan) is plan
    assert _Pruner(True).prune(plan, plan.output_ids) == _Pruner(False).prune(
        plan, plan.output_ids)
    # ... computed once.
    out = prune_columns(plan)
    assert prune_columns(plan, before_subquery_rewrite=True) is out
    assert prune_columns(plan) is out
    # An unchanged plan is kept as None, not as a reference from the node to itself.
    assert plan._cache[_PRUNED.key] is (None if out is plan else out)  # kept, under its slot


@pytest.mark.parametrize("title", [t for t in BEFORE_SUBQUERY_REWRITE if "EXISTS" in t])
def test_a_predicate_subquery_is_pruned_around_in_advance(title):
    plan = BEFORE_SUBQUERY_REWRITE[title]
    assert prune_columns(plan, before_subquery_rewrite=True) != prune_columns(plan)
