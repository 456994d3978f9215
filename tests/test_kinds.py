"""Argument kinds own their behaviour (sparkext.kinds), and a bad kind fails the declaration.

Pure Python: no Spark. The round trip of every kind through real plans is
tests/test_roundtrip.py.
"""

from __future__ import annotations

import pytest

from sparkext import _tree, codec
from sparkext._tree import arg, mirror
from sparkext.expressions import Expression
from sparkext.kinds import Item, Kind, Shape, wire_codes
from sparkext.plan import LogicalPlan

#: One wire value of each shape, and the items it holds in order.
WIRE = {
    Shape.ONE: ("a", ["a"]),
    Shape.OPT: ("a", ["a"]),
    Shape.SEQ: (["a", "b"], ["a", "b"]),
    Shape.SEQS: ([["a"], ["b", "c"], []], ["a", "b", "c"]),
    Shape.PAIRS: ([["a", "b"], ["c", "d"]], ["a", "b", "c", "d"]),
}


def _stub_items(tag):
    """Item functions that mark what they read, so the test sees each item pass once."""
    return {item: (lambda c, v, item=item: (tag, item, v)) for item in Item}


def _unmark(c, v):
    return v[2]


@pytest.mark.parametrize("kind", list(Kind), ids=lambda k: k.name)
def test_every_kind_declares_a_shape_an_item_and_whether_it_is_shown(kind):
    assert isinstance(kind.shape, Shape)
    assert isinstance(kind.item, Item)
    assert isinstance(kind.shown, bool)
    assert Kind(kind.code) is kind


@pytest.mark.parametrize("kind", list(Kind), ids=lambda k: k.name)
def test_every_kind_decodes_flattens_and_encodes_back(kind):
    wire, expected = WIRE[kind.shape]
    value = kind.decoder(_stub_items("in"))(None, wire)
    items = list(kind.shape.flatten(value))
    assert [i[2] for i in items] == expected
    assert all(i[:2] == ("in", kind.item) for i in items)
    assert kind.shape.unflatten(value, iter(items)) == value
    back = kind.encoder({item: _unmark for item in Item})(None, value)
    assert back == wire


@pytest.mark.parametrize("shape", list(Shape), ids=lambda s: s.name)
def test_every_shape_has_a_sample(shape):
    # A new shape fails here until the round trip above covers it.
    assert shape in WIRE


def test_optional_kinds_keep_a_null():
    for kind in Kind:
        if kind.shape is Shape.OPT:
            assert kind.decoder(_stub_items("in"))(None, None) is None
            assert kind.encoder(_stub_items("out"))(None, None) is None


def test_the_codec_reads_and_writes_every_item():
    assert set(codec.ITEM_READERS) == set(Item)
    assert set(codec.ITEM_WRITERS) == set(Item)


def test_only_special_kinds_are_kept_from_the_jvm():
    assert set(wire_codes()) == {k.code for k in Kind if k.item is not Item.SPECIAL}
    for c in _tree.MIRRORED.values():
        if not c._special:
            assert all(not k.special for _, k in c._args), c


def test_an_unknown_kind_fails_the_declaration_naming_class_and_field():
    with pytest.raises(TypeError, match=r"Broken\.child: unknown argument kind 'ee'"):
        @mirror("org.example.Broken")
        class Broken(Expression):
            child: Expression = arg("ee")
    assert "Broken" not in _tree.MIRRORED


def test_children_and_expressions_follow_the_kinds():
    @mirror("org.example.TwoPlans")
    class TwoPlans(LogicalPlan):
        keeps_child_rows = keeps_child_columns = commutes_with_filters = False
        keeps_child_order = keeps_child_equivalences = keeps_child_unique_keys = False

        left: LogicalPlan = arg(Kind.PLAN)
        keys: tuple = arg("eps")
        rights: tuple = arg("ps")
        label: str = arg("s")

    try:
        assert TwoPlans._kids == (("left", Shape.ONE), ("rights", Shape.SEQ))
        assert TwoPlans._expr_fields == (("keys", Shape.PAIRS),)
    finally:
        del _tree.MIRRORED["TwoPlans"]
