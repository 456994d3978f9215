"""What constraints.py keeps on an expression (its restatements, the IsNotNull it implies,
its subexpressions' keys) must give what computing them again gives: the same predicate
objects are asked again in the closure of every node above the one that introduced them."""

from __future__ import annotations

from sparkext.analysis.constraints import equality_inferences, with_inferences
from sparkext.expressions import EqualTo, GreaterThan, IsNotNull, Literal
from sparkext.types import INT
from tests.mirror_plans import col


def _sql(exprs) -> list[str]:
    return [e.sql() for e in exprs]


def test_a_restatement_is_kept_per_replacement_object_not_per_equal_attribute():
    a = col("a", 1)
    b_nullable, b_not_null = col("b", 2), col("b", 2, nullable=False)  # one id, two objects
    p = GreaterThan(a, Literal(5, INT))
    first = equality_inferences([EqualTo(a, b_nullable), p])
    second = equality_inferences([EqualTo(a, b_not_null), p])  # the same p, kept facts
    restated = [e for e in first if isinstance(e, GreaterThan)]
    again = [e for e in second if isinstance(e, GreaterThan)]
    assert _sql(restated) == _sql(again) == ["(b#2 > 5)"]
    # each names the attribute object of its own equality (its nullability goes into the
    # plan): a result kept under the equal attribute would name the other one
    assert restated[0].left is b_nullable and again[0].left is b_not_null
    assert again[0].left.nullable is False


def test_kept_facts_give_what_fresh_objects_give():
    def predicates():
        a, b, c = col("a", 1), col("b", 2), col("c", 3)
        return [EqualTo(a, b), EqualTo(b, c), GreaterThan(c, Literal(7, INT)),
                IsNotNull(a), EqualTo(a, Literal(3, INT))]
    shared = predicates()
    once = with_inferences(shared)
    twice = with_inferences(shared)  # every fact now read from the objects
    fresh = with_inferences(predicates())
    assert _sql(once) == _sql(twice) == _sql(fresh)
    # what the closure must hold: a restatement across an equality, an IsNotNull it implies
    assert {"(b#2 > 7)", "(b#2 = 3)", "isnotnull(c#3)"} <= set(_sql(once))
