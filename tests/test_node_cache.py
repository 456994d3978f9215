"""The node cache (sparkext._tree): each analysis keeps what it derives of a node in a slot
of its own, declared once (``CacheSlot``), and what is kept is shared by every caller, so
nothing may change it: the cached EquivalenceProperties and Constraints are frozen."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparkext import _tree
from sparkext._tree import CacheSlot
from sparkext.analysis.constraints import Constraints, constraints
from sparkext.analysis.ordering import EquivalenceProperties, Ordering, SortKey, properties
from sparkext.analysis.uniqueness import unique_keys
from sparkext.expressions import Add, EqualTo, GreaterThan, IsNotNull, asc, lit
from sparkext.plan import Filter, Project, Relation, Sort
from sparkext.rules.eliminate_sorts import eliminate_sorts
from sparkext.rules.simplify_sort_keys import simplify_sort_keys
from tests.mirror_plans import ANSI, col

a, b, c, d = col("a", 1), col("b", 2), col("c", 3), col("d", 4)
REL = Relation("LogicalRDD", (a, b, c, d), 1, ordering=(asc(a),), ordering_is_global=True)
PACKAGE = Path(__file__).parents[1] / "sparkext"


def plan():
    """A fresh plan (nothing kept on its nodes yet): a = 1, b = c, c not NULL."""
    return Filter(EqualTo(b, c), Filter(EqualTo(a, lit(1)), REL))


# -- slots ---------------------------------------------------------------------------------


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


# -- what is kept cannot change ------------------------------------------------------------


def test_the_kept_properties_are_frozen_and_every_change_is_refused():
    props = properties(plan())
    assert props.frozen and properties(plan()) is not props  # (a fresh plan: its own)
    for change in (lambda: props.add_constant(d), lambda: props.add_equivalence(a, d),
                   lambda: props.add_not_null(d), lambda: props.tie(d)):
        with pytest.raises(TypeError, match=r"shared .*change a copy\(\) of them"):
            change()
    with pytest.raises(TypeError):
        props.constants[d.semantic_key()] = None  # type: ignore[index]
    with pytest.raises(AttributeError):
        props.orderings.append(Ordering((SortKey(d),), True))  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        props.not_null.add(d.semantic_key())  # type: ignore[attr-defined]


def test_a_copy_of_kept_properties_changes_alone():
    p = plan()
    props = properties(p)
    mine = props.copy()
    mine.add_constant(d)
    mine.orderings.append(Ordering((SortKey(d),), True))
    mine.tie(c)
    assert not mine.frozen and mine.constant(d) is not None
    assert properties(p) is props and props.constant(d) is None and props.constant(c) is None
    assert mine.ordering_satisfy([asc(b)])  # tied on c, and so on b, which equals it
    assert not props.ordering_satisfy([asc(b)])


def test_frozen_properties_answer_as_they_did_and_are_only_read():
    # A long chain of equalities: the union-find's paths are long before any lookup.
    xs = [col(f"x{i}", 10 + i) for i in range(8)]
    p = EquivalenceProperties()
    for x, y in zip(xs[1:], xs):
        p.add_equivalence(x, y)
    p.add_constant(xs[3])
    p.add_not_null(d)
    p.orderings.append(Ordering((SortKey(a), SortKey(xs[0])), True))
    ask = [lambda q: sorted(e.expr_id for e in q.group(xs[5])),
           lambda q: [q.same_group(xs[0], x) for x in (*xs, d)],
           lambda q: [q.constant(x) is not None for x in (*xs, d)],
           lambda q: [q.is_not_null(x) for x in (*xs, d)],
           lambda q: q.ordering_satisfy([asc(a), asc(b)]),
           lambda q: [o.keys for o in q.succinct_orderings()]]
    before = [f(p.copy()) for f in ask]
    frozen = p.copy().freeze()
    parents = dict(frozen._parent)
    assert [f(frozen) for f in ask] == before
    assert frozen._parent == parents  # answering wrote nothing
    assert frozen.freeze() is frozen


def test_the_sort_rules_leave_the_kept_properties_as_they_were():
    child = Project((a, b, c), plan())
    before = properties(child)
    snapshot = (dict(before.constants), tuple(before.orderings), frozenset(before.not_null))
    sort = Sort((asc(a), asc(b), asc(c)), True, child)
    assert simplify_sort_keys(sort).order == (asc(b),)  # a is constant, c equals b
    eliminate_sorts(sort)
    assert properties(child) is before
    assert (dict(before.constants), tuple(before.orderings),
            frozenset(before.not_null)) == snapshot


def test_derivations_never_rebind_the_attributes_of_properties():
    # Frozen properties refuse every change but rebinding an attribute (a guard on
    # __setattr__ slows every read: EquivalenceProperties.freeze): the package never does.
    fields = "orderings|constants|not_null|unique_keys|_parent|_exprs|frozen"
    for path, text in _sources():
        assert not re.search(rf"\b\w+\.({fields})\s*=[^=]", text), path


def test_the_kept_constraints_are_frozen():
    p = plan()
    kept = constraints(p)
    assert constraints(p) is kept
    with pytest.raises(TypeError, match="shared: build a new set"):
        kept.add(IsNotNull(d))
    with pytest.raises(TypeError, match="shared: build a new set"):
        kept.retain(lambda e: False)
    more = kept.union([IsNotNull(d)])
    more.add(GreaterThan(d, lit(0)))  # a new set: free to change
    assert IsNotNull(d) in more and IsNotNull(d) not in kept
    assert list(Constraints(kept)) == list(kept)


def test_kept_values_are_shared_not_recomputed():
    p = Project((a, b), Filter(GreaterThan(Add(a, lit(1), ANSI), lit(0)), REL))
    for derive in (unique_keys, properties, constraints):
        assert derive(p) is derive(p)
    condition = p.child.condition
    assert condition.semantic_key() is condition.semantic_key()
