"""Unique keys and functional dependencies (sparkext.analysis.uniqueness), what they let the
ordering analysis conclude (an order by a unique ``k`` satisfies ``(k, anything)``), and
simplify_sort_keys dropping the keys that depend on earlier ones. Mirror plans built by
hand; the same claims on real Spark sessions are in tests/test_ordering_spark.py (its
section "issue 17: strict functions and unique keys")."""

from __future__ import annotations

import pytest

from sparkext import types as T
from sparkext.analysis.ordering import properties
from sparkext.analysis.uniqueness import unique_keys
from sparkext.expressions import (
    Add,
    Alias,
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    Multiply,
    asc,
    desc,
    lit,
)
from sparkext.plan import (
    Aggregate,
    AliasIdentifier,
    Deduplicate,
    Distinct,
    Expand,
    Filter,
    GlobalLimit,
    Join,
    LocalLimit,
    Project,
    RebalancePartitions,
    Relation,
    Repartition,
    RepartitionByExpression,
    Sample,
    Sort,
    SubqueryAlias,
    Union,
    Window,
)
from sparkext.rules.simplify_sort_keys import simplify_sort_keys
from tests.mirror_plans import ANSI, LEGACY, col

k, v, w = col("k", 1), col("v", 2), col("w", 3)
rk, rv = col("rk", 11), col("rv", 12)
dbl = col("dbl", 21, T.DOUBLE)
LEFT = Relation("LogicalRDD", (k, v, w), 1)
RIGHT = Relation("LogicalRDD", (rk, rv), 2)
DOUBLES = Relation("LogicalRDD", (dbl, v), 3)


def total(of, name="t"):
    # Stands for an aggregate over the group: uniqueness never looks inside it.
    return Alias(Multiply(of, lit(2), ANSI, _type=T.INT), name)


def by_k(child=LEFT, key=k, out=None):
    """groupBy(key).agg(total(v))."""
    t = total(v)
    return Aggregate((key,), (key, t) if out is None else out, child), t.to_attribute()


def ids(keys):
    return [sorted(m.expr_id for m in key) for key in keys]


# -- which rows are unique on what ----------------------------------------------------------


def test_after_group_by_the_grouping_columns_are_unique():
    agg, _ = by_k()
    assert ids(unique_keys(agg)) == [[1]]


def test_a_grouping_column_left_out_of_the_output_gives_no_key():
    t = total(v)
    assert unique_keys(Aggregate((k,), (t,), LEFT)) == ()


def test_a_global_aggregate_has_at_most_one_row():
    assert unique_keys(Aggregate((), (total(v),), LEFT)) == ((),)


def test_drop_duplicates_and_distinct():
    assert ids(unique_keys(Deduplicate((k,), LEFT))) == [[1]]
    assert ids(unique_keys(Distinct(LEFT))) == [[1, 2, 3]]


def test_a_plain_relation_is_not_unique_on_anything():
    assert unique_keys(LEFT) == ()


def test_a_projection_keeps_a_key_through_aliases_and_strict_functions_only():
    agg, t = by_k()
    renamed = Alias(k, "j")
    assert ids(unique_keys(Project((renamed, t), agg))) == [[renamed.expr_id]]
    shifted = Alias(Add(k, lit(1), ANSI, _type=T.INT), "j")
    assert ids(unique_keys(Project((shifted,), agg))) == [[shifted.expr_id]]
    # Without ANSI, k + 1 wraps around: two k can meet.
    wrapping = Alias(Add(k, lit(1), LEGACY, _type=T.INT), "j")
    assert unique_keys(Project((wrapping,), agg)) == ()
    assert unique_keys(Project((t,), agg)) == ()


#: a node of each class that declares keeps_child_unique_keys, over ``child``
KEEPS_KEYS = {
    Filter: lambda c: Filter(GreaterThan(v, lit(0)), c),
    Sort: lambda c: Sort((asc(v),), True, c),
    GlobalLimit: lambda c: GlobalLimit(lit(5), c),
    LocalLimit: lambda c: LocalLimit(lit(5), c),
    SubqueryAlias: lambda c: SubqueryAlias(AliasIdentifier("s"), c),
    Repartition: lambda c: Repartition(4, True, c),
    RepartitionByExpression: lambda c: RepartitionByExpression((k,), c),
    RebalancePartitions: lambda c: RebalancePartitions((k,), c),
    Window: lambda c: Window((), (), (), c),
}


@pytest.mark.parametrize("cls", KEEPS_KEYS, ids=lambda c: c.__name__)
def test_a_node_that_passes_each_row_at_most_once_keeps_the_childs_keys(cls):
    agg, _ = by_k()
    node = KEEPS_KEYS[cls](agg)
    assert type(node).keeps_child_unique_keys
    assert ids(unique_keys(node)) == [[1]]


def test_every_class_that_keeps_the_childs_keys_is_tried_above():
    from tests.test_node_facts import EXPECTED
    assert {c.__name__ for c in KEEPS_KEYS} == EXPECTED["keeps_child_unique_keys"]


def test_nodes_that_repeat_or_mix_rows_keep_no_key():
    agg, t = by_k()
    assert not Union.keeps_child_unique_keys and not Expand.keeps_child_unique_keys
    assert unique_keys(Union((agg, agg))) == ()
    assert unique_keys(Expand(((k, t), (k, t)), (k, t), agg)) == ()


def test_a_sample_with_replacement_repeats_rows():
    agg, _ = by_k()
    assert ids(unique_keys(Sample(0.0, 0.5, False, 7, agg))) == [[1]]
    assert unique_keys(Sample(0.0, 0.5, True, 7, agg)) == ()


RIGHT_UNIQUE = Aggregate((rk,), (rk, Alias(rv, "rv2")), RIGHT)


@pytest.mark.parametrize("join_type, left_kept", [
    ("Inner", True), ("LeftOuter", True), ("LeftSemi", True), ("LeftAnti", True),
    # Right rows with no left match come out with NULL left columns: many tie.
    ("RightOuter", False), ("FullOuter", False),
])
def test_a_join_on_a_unique_right_key_keeps_the_left_keys(join_type, left_kept):
    left = Deduplicate((k,), LEFT)
    plan = Join(left, RIGHT_UNIQUE, join_type, EqualTo(k, rk))
    assert ([1] in ids(unique_keys(plan))) == left_kept


def test_a_null_safe_join_on_a_unique_key_keeps_them_too():
    plan = Join(Deduplicate((k,), LEFT), RIGHT_UNIQUE, "Inner", EqualNullSafe(rk, k))
    assert [1] in ids(unique_keys(plan))


def test_a_join_breaks_uniqueness_when_the_right_side_repeats_the_key():
    assert unique_keys(Join(Deduplicate((k,), LEFT), RIGHT, "Inner", EqualTo(k, rk))) == ()


def test_a_join_on_another_right_column_breaks_uniqueness():
    plan = Join(Deduplicate((k,), LEFT), RIGHT_UNIQUE, "Inner", EqualTo(v, rv))
    assert [1] not in ids(unique_keys(plan))


def test_a_join_without_an_equality_breaks_uniqueness():
    plan = Join(Deduplicate((k,), LEFT), RIGHT_UNIQUE, "Inner", GreaterThan(k, rk))
    assert unique_keys(plan) == ()


def test_an_inner_join_unique_on_both_sides_keeps_both_keys():
    plan = Join(Deduplicate((k,), LEFT), RIGHT_UNIQUE, "Inner", EqualTo(k, rk))
    assert sorted(ids(unique_keys(plan))) == [[1], [11]]


# -- what the ordering analysis concludes ---------------------------------------------------


def test_an_order_by_a_unique_key_satisfies_any_keys_after_it():
    agg, t = by_k()
    p = properties(Sort((asc(k),), True, agg))
    assert p.ordering_satisfy([asc(k), asc(t)])
    assert p.ordering_satisfy([asc(k), desc(t), asc(v)])
    # Required counterparts: another direction, another first key.
    assert not p.ordering_satisfy([desc(k), asc(t)])
    assert not p.ordering_satisfy([asc(t), asc(k)])


def test_an_order_by_a_non_unique_key_does_not():
    assert not properties(Sort((asc(k),), True, LEFT)).ordering_satisfy([asc(k), asc(v)])


def test_uniqueness_on_floating_point_is_not_used():
    # -0.0 and 0.0 are one group but need not tie the way the grouping compared them.
    agg, t = by_k(DOUBLES, dbl)
    assert not properties(Sort((asc(dbl),), True, agg)).ordering_satisfy([asc(dbl), asc(t)])


def test_a_constant_unique_key_means_one_row():
    agg, t = by_k()
    assert properties(Filter(EqualTo(k, lit(3)), agg)).ordering_satisfy([asc(t)])


def test_a_global_aggregate_is_in_every_order():
    t = total(v)
    assert properties(Aggregate((), (t,), LEFT)).ordering_satisfy([desc(t.to_attribute())])


def test_a_join_keeps_the_order_analysis_of_uniqueness_but_not_an_order():
    left = Deduplicate((k,), LEFT)
    plan = Join(left, RIGHT_UNIQUE, "Inner", EqualTo(k, rk))
    # No ordering survives the join, so nothing is satisfied by uniqueness alone...
    assert not properties(plan).ordering_satisfy([asc(k), asc(rv)])
    # ...but a sort by k above it makes every later key redundant.
    assert properties(Sort((asc(k),), True, plan)).ordering_satisfy([asc(k), asc(rv)])


# -- simplify_sort_keys ---------------------------------------------------------------------


def test_keys_after_a_unique_key_are_dropped():
    agg, t = by_k()
    plan = Sort((asc(k), asc(t)), True, agg)
    assert simplify_sort_keys(plan) == Sort((asc(k),), True, agg)


def test_a_unique_key_after_other_keys_drops_only_what_follows_it():
    agg, t = by_k()
    plan = Sort((asc(t), desc(k), asc(t)), True, agg)
    assert simplify_sort_keys(plan) == Sort((asc(t), desc(k)), True, agg)


def test_keys_after_a_non_unique_key_stay():
    plan = Sort((asc(k), asc(v)), True, LEFT)
    assert simplify_sort_keys(plan) is plan


def test_a_key_that_a_strict_key_before_it_determines_is_dropped():
    shifted = Add(k, lit(1), ANSI, _type=T.INT)
    plan = Sort((asc(shifted), asc(k), asc(v)), True, LEFT)
    assert simplify_sort_keys(plan) == Sort((asc(shifted), asc(v)), True, LEFT)
    # Without ANSI, k + 1 wraps around and declares no fact at all: nothing is concluded
    # from it (conservatively: wrapping addition happens to be injective).
    wrapping = Add(k, lit(1), LEGACY, _type=T.INT)
    plan = Sort((asc(wrapping), asc(k)), True, LEFT)
    assert simplify_sort_keys(plan) is plan
