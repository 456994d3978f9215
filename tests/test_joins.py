"""Join types (sparkext.joins): every member declares every fact, names round-trip, and
Join refuses a type it does not know."""

from __future__ import annotations

import dataclasses

import pytest

from sparkext import joins
from sparkext.expressions import AttributeReference, Value
from sparkext.joins import (
    FULL_OUTER,
    INNER,
    LEFT_OUTER,
    MEMBERS,
    RIGHT_OUTER,
    ExistenceJoin,
    JoinType,
    OpaqueJoinType,
)
from sparkext.plan import Join
from sparkext.types import BOOLEAN
from tests.mirror_plans import Table

L = Table("l", "a b", 1, nullable=False)
R = Table("r", "x y", 11, nullable=False)
EXISTS = AttributeReference("exists", BOOLEAN, False, None, 40)
OPAQUE = OpaqueJoinType(Value("UsingJoin(Inner, [k])", 7))
EVERY = MEMBERS + (ExistenceJoin(EXISTS), OPAQUE)
FACTS = [f.name for f in dataclasses.fields(joins.JoinFacts)]

# Catalyst 4.3's JoinType.toString for every join type that survives analysis.
CATALYST_NAMES = {"Inner", "Cross", "LeftOuter", "RightOuter", "FullOuter", "LeftSemi",
                  "LeftAnti", "LeftSingle"}


def test_every_catalyst_join_type_has_a_member():
    assert {jt.wire for jt in MEMBERS} == CATALYST_NAMES
    assert (INNER.wire, LEFT_OUTER.wire, RIGHT_OUTER.wire, FULL_OUTER.wire) == (
        "Inner", "LeftOuter", "RightOuter", "FullOuter")


@pytest.mark.parametrize("jt", EVERY, ids=repr)
def test_every_member_declares_every_fact(jt):
    assert isinstance(jt.facts, joins.JoinFacts)
    for name in FACTS:
        value = getattr(jt.facts, name)
        assert value is not None, f"{jt!r} does not say {name}"
        assert all(isinstance(v, bool) for v in (value if isinstance(value, tuple)
                                                  else (value,))), (jt, name, value)
    assert isinstance(jt.wire, str) and jt.wire


@pytest.mark.parametrize("jt", MEMBERS, ids=repr)
def test_the_wire_name_round_trips(jt):
    assert JoinType.from_wire(jt.wire) is jt


def test_an_unknown_wire_name_is_refused():
    with pytest.raises(ValueError, match="Innner"):
        JoinType.from_wire("Innner")


def test_join_refuses_an_unknown_join_type_at_construction():
    with pytest.raises(ValueError, match="unknown join type 'Innner'"):
        Join(L.rel, R.rel, "Innner")
    with pytest.raises(TypeError):
        Join(L.rel, R.rel, 3)


def test_join_accepts_a_wire_name_and_holds_the_member():
    assert Join(L.rel, R.rel, "LeftOuter").join_type is LEFT_OUTER
    assert Join(L.rel, R.rel, "LeftOuter") == Join(L.rel, R.rel, LEFT_OUTER)


def test_an_opaque_join_type_is_the_most_conservative():
    f = OPAQUE.facts
    assert f.where_filters == f.on_filters == f.infer_into == (False, False)
    assert f.constraints_from == f.equivalences_from == (False, False, False)
    assert not f.where_joins_condition and not f.outer
    assert Join(L.rel, R.rel, Value("UsingJoin(Inner, [k])", 7)).join_type == OPAQUE


@pytest.mark.parametrize("jt, nullable", [
    (INNER, (False, False)), (LEFT_OUTER, (False, True)), (RIGHT_OUTER, (True, False)),
    (FULL_OUTER, (True, True))])
def test_output_nullability_follows_null_padding(jt, nullable):
    out = Join(L.rel, R.rel, jt).output
    assert [a.nullable for a in out] == [nullable[0]] * 2 + [nullable[1]] * 2


@pytest.mark.parametrize("jt, rejected, becomes", [
    (LEFT_OUTER, (False, True), INNER), (LEFT_OUTER, (True, False), LEFT_OUTER),
    (RIGHT_OUTER, (True, False), INNER), (FULL_OUTER, (True, True), INNER),
    (FULL_OUTER, (True, False), LEFT_OUTER), (FULL_OUTER, (False, True), RIGHT_OUTER),
    (INNER, (True, True), INNER)])
def test_rejected_null_padding_turns_an_outer_join_into(jt, rejected, becomes):
    assert jt.without_padding(*rejected) is becomes
