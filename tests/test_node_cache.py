"""The node cache (sparkext._tree): each analysis keeps what it derives of a node in a slot
of its own, declared once (``CacheSlot``), and what is kept is shared by every caller."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparkext import _tree
from sparkext._tree import CacheSlot
from sparkext.constraints import constraints
from sparkext.expressions import Add, EqualTo, GreaterThan, asc, lit
from sparkext.ordering import properties
from sparkext.plan import Filter, Project, Relation
from sparkext.uniqueness import unique_keys
from tests.mirror_plans import ANSI, col

a, b, c, d = col("a", 1), col("b", 2), col("c", 3), col("d", 4)
REL = Relation("LogicalRDD", (a, b, c, d), 1, ordering=(asc(a),), ordering_is_global=True)
PACKAGE = Path(__file__).parents[1] / "sparkext"


def plan():
    """A fresh plan (nothing kept on its nodes yet)."""
    return Filter(EqualTo(b, c), Filter(EqualTo(a, lit(1)), REL))


def test_a_slot_computes_once_per_node_and_keeps_the_value():
    calls = []
    slot = CacheSlot("test_counted_once", lambda node: calls.append(node) or (len(calls),))
    try:
        p = plan()
        assert slot.peek(p) is None  # nothing kept, nothing computed
        first = slot.get(p)
        assert slot.get(p) is first and slot.peek(p) is first and calls == [p]
        assert slot.get(p.child) == (2,)  # per node
        assert p._cache[slot.key] is first  # under its own key, "#" and its name
    finally:
        del _tree._SLOTS["test_counted_once"]


def test_two_slots_cannot_share_a_name():
    with pytest.raises(ValueError, match="'unique_keys' exists already"):
        CacheSlot("unique_keys", lambda node: ())


def test_slot_keys_never_meet_the_keys_of_facts():
    # @fact values are kept under their property's name: an identifier, never "#...".
    assert all(s.key == "#" + name for name, s in _tree._SLOTS.items())
    assert {"constraints", "equivalence_properties", "unique_keys", "pruned", "semantic_key",
            "hash", "tree_bits"} <= _tree._SLOTS.keys()


def _sources():
    return [(p, p.read_text()) for p in PACKAGE.rglob("*.py")]


def test_no_module_writes_the_node_cache_by_a_key_of_its_own():
    for path, text in _sources():
        if path.name == "_tree.py":
            continue  # (the cache's own module: its slots and facts)
        assert "_cached(" not in text and "keep_fact" not in text, path
        for index in re.findall(r"_cache\[([^\]]*)\]", text):
            # Only a slot's key, read on a hit path that cannot afford a call.
            assert re.fullmatch(r"_[A-Z_]+\.key", index), (path, index)
        assert not re.search(r"_cache\[[^\]]*\]\s*=[^=]", text), path


def test_a_hash_and_the_tree_bits_are_kept_in_their_slots():
    p = plan()
    h, bits = hash(p), p.tree_bits
    assert _tree._HASH.peek(p) == h and _tree._BITS.peek(p) == bits
    assert _tree._BITS.peek(p.child.child) == type(REL)._bit  # kept below on the way


def test_kept_values_are_shared_not_recomputed():
    p = Project((a, b), Filter(GreaterThan(Add(a, lit(1), ANSI), lit(0)), REL))
    for derive in (unique_keys, properties, constraints):
        assert derive(p) is derive(p)
    condition = p.child.condition
    assert condition.semantic_key() is condition.semantic_key()
