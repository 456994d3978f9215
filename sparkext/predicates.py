"""The shared vocabulary of predicate rewriting (Catalyst's ``PredicateHelper``).

    >>> from sparkext import types as T
    >>> from sparkext.expressions import And, AttributeReference
    >>> a, b, c = (AttributeReference(n, T.BOOLEAN, True, None, i)
    ...            for i, n in enumerate("abc", 1))
    >>> split_conjuncts(And(And(a, b), c))
    [a#1, b#2, c#3]
    >>> conjoin([a, b, c])            # left-deep, order kept
    ((a#1 AND b#2) AND c#3)
"""

from __future__ import annotations

from collections.abc import Iterable

from sparkext import catalyst_names as names
from sparkext._tree import CacheSlot
from sparkext.expressions import (
    Alias,
    And,
    AttributeReference,
    BinaryComparison,
    BinaryExpression,
    Cast,
    Expression,
    In,
    InSet,
    IsNaN,
    IsNotNull,
    IsNull,
    Literal,
    Not,
    OpaqueExpression,
    Or,
)


def _split(e: Expression | None, op: type[BinaryExpression]) -> list[Expression]:
    out: list[Expression] = []
    stack = [] if e is None else [e]
    while stack:
        x = stack.pop()
        if isinstance(x, op):
            stack.append(x.right)
            stack.append(x.left)
        else:
            out.append(x)
    return out


def split_conjuncts(e: Expression | None) -> list[Expression]:
    """The conjuncts of ``e``, left to right (``a AND (b AND c)`` gives a, b, c)."""
    return _split(e, And)


def split_disjuncts(e: Expression | None) -> list[Expression]:
    """The disjuncts of ``e``, left to right."""
    return _split(e, Or)


def conjoin(conjuncts: Iterable[Expression]) -> Expression | None:
    """``c1 AND c2 AND ...`` (left-deep, in the given order); None for no conjuncts."""
    result = None
    for c in conjuncts:
        result = c if result is None else And(result, c)
    return result


def conjunction(conjuncts: Iterable[Expression]) -> Expression:
    """:func:`conjoin` of one conjunct or more (a Filter's condition, which is never None);
    none is a bug in the caller (Catalyst's ``reduceLeft(And)``)."""
    result = conjoin(conjuncts)
    if result is None:
        raise ValueError("a conjunction of no conjuncts (a Filter needs a condition)")
    return result


def disjoin(disjuncts: Iterable[Expression]) -> Expression | None:
    result = None
    for d in disjuncts:
        result = d if result is None else Or(result, d)
    return result


def references(e: Expression) -> frozenset:
    """The expression ids ``e`` reads."""
    return e.references


def is_deterministic(e: Expression) -> bool:
    return e.deterministic


def deterministic_prefix(conjuncts: list[Expression]) -> tuple[list, list]:
    """Splits at the first non-deterministic conjunct: the conjuncts before it may move,
    it and everything after it stay where they are (they must still run after it)."""
    for i, c in enumerate(conjuncts):
        if not c.deterministic:
            return conjuncts[:i], conjuncts[i:]
    return conjuncts, []


#: Expressions that never raise, whatever their (never raising) inputs: comparisons,
#: NULL and NaN tests, IN lists and boolean logic over columns and literals.
_NEVER_RAISE = (AttributeReference, Literal, And, Or, Not, IsNull, IsNotNull, IsNaN,
                BinaryComparison, In, InSet)


def cannot_raise(e: Expression) -> bool:
    """Whether evaluating ``e`` can never raise (under ANSI too): it is built of
    :data:`_NEVER_RAISE` only. Conservative: a cast, arithmetic or any function may."""
    return _CANNOT_RAISE.get(e)


_CANNOT_RAISE: CacheSlot[bool] = CacheSlot(
    "cannot_raise", lambda e: all(isinstance(x, _NEVER_RAISE) for x in e.walk()))


def guards_first(conjuncts: list[Expression]) -> list[Expression]:
    """Deterministic ``conjuncts`` with those that cannot raise first, each group in its
    own order. ``AND`` evaluates its right side unless its left one is false, so a guard
    that is NULL rather than false does not stop what follows it, and conjuncts combined
    from two places (a filter pushed onto another, a join condition's onto a WHERE
    clause's) must not lose the guard they had. Moving a conjunct that cannot raise ahead
    changes no row and only spares the others rows to evaluate: no order of these
    conjuncts raises where the given order did not. The ones that may raise keep their
    order among themselves (a guard that may raise still guards)."""
    safe = [c for c in conjuncts if cannot_raise(c)]
    if len(safe) in (0, len(conjuncts)):
        return conjuncts
    return safe + [c for c in conjuncts if not cannot_raise(c)]


def alias_map(named: Iterable[Expression]) -> dict:
    """expression id -> the expression an alias names (``x AS a`` gives ``{a: x}``)."""
    return {e.expr_id: e.child for e in named if isinstance(e, Alias)}


def replace_aliases(e: Expression, aliases: dict) -> Expression:
    """``e`` with every attribute that names an alias replaced by the aliased expression
    (so it can be evaluated below the node that defines the alias)."""
    return replace_attributes(e, aliases)


def replace_attributes(e: Expression, mapping: dict) -> Expression:
    """``e`` with attributes replaced by id (``mapping``: expr_id -> expression).

    An opaque expression whose references are not its children's (a correlated subquery)
    gets its references restated too: left stale, they would hide the moved columns from
    every later decision (what a filter reads, which columns pruning keeps)."""
    if not (e.references & mapping.keys()):
        return e

    def swap(x):
        if isinstance(x, AttributeReference):
            return mapping.get(x.expr_id, x)
        if isinstance(x, OpaqueExpression) and x.references_ is not None \
                and x.references_ & mapping.keys():
            refs = frozenset().union(*(mapping[i].references if i in mapping else {i}
                                       for i in x.references_))
            return x.copy(references_=refs)
        return x
    return e.transform_up(swap)


def opaque_inside(e: Expression) -> frozenset[tuple[str, bool, bool]]:
    """``(cls, is a subquery, reads the query around it)`` of every opaque expression in
    ``e`` (``e`` included), kept on ``e``: the same conjunct objects are asked about again in
    the constraints of every node above them and on every round of a rule."""
    return _OPAQUE_INSIDE.get(e)


_OPAQUE_INSIDE: CacheSlot[frozenset[tuple[str, bool, bool]]] = CacheSlot(
    "opaque_inside", lambda e: frozenset(
        (x.cls, x.is_subquery, x.is_subquery and bool(x.children_))
        for x in e.walk() if isinstance(x, OpaqueExpression)))


def contains_subquery(e: Expression) -> bool:
    return any(subquery for _, subquery, _ in opaque_inside(e))


def contains_correlated_subquery(e: Expression) -> bool:
    """A subquery that reads columns of the query around it (its children are those)."""
    return any(correlated for _, _, correlated in opaque_inside(e))


def contains_aggregate(e: Expression) -> bool:
    """An aggregate function call anywhere in ``e``. In Spark 4 every aggregate, pandas
    grouped-aggregate UDFs (``PythonUDAF``) included, sits inside an AggregateExpression."""
    return any(cls == names.AGGREGATE_EXPRESSION for cls, _, _ in opaque_inside(e))


def subquery_outputs(e: Expression) -> frozenset:
    """The output ids of every subquery plan inside ``e``."""
    ids: set = set()
    for x in e.walk():
        if isinstance(x, OpaqueExpression) and x.subquery_output is not None:  # a subquery
            ids.update(a.expr_id for a in x.subquery_output)
    return frozenset(ids)


def can_move_next_to(e: Expression, output_ids: frozenset) -> bool:
    """A predicate with a subquery must not be moved next to attributes with the ids of the
    subquery's own output: the rewrite of the subquery into a join would then see one
    attribute on both sides (Catalyst's ``canPushThroughCondition``)."""
    return not (subquery_outputs(e) & output_ids)


def semantic_set(exprs: Iterable[Expression]) -> set:
    return {e.semantic_key() for e in exprs}


# Predicates whose result is the same for every representative of a class of values that
# compare equal: Spark compares floating point with -0.0 = 0.0 and NaN = NaN (and NaN above
# every other value), so a comparison cannot tell -0.0 from 0.0 or one NaN from another.
# InSet is left out: it looks values up in a hash set, and whether that set puts -0.0 and
# 0.0 together has not been checked on every Spark line (In compares with EqualTo's
# semantics, so it is in).
_NORMALISATION_BLIND = (BinaryComparison, IsNull, IsNotNull, IsNaN, In)


def normalised_keys(attrs: Iterable[AttributeReference]) -> frozenset:
    """The ids of the columns among ``attrs`` whose values grouping normalises: those whose
    equal values are not all the same value (``DataType.equality_is_identity``): a float
    or double, a string under a collation other than UTF8_BINARY (``'A' = 'a'`` in
    UTF8_LCASE), or a nested type holding one."""
    return frozenset(a.expr_id for a in attrs if not a.data_type.equality_is_identity)


def normalised_columns(grouping: Iterable[Expression]) -> frozenset:
    """The ids of the columns whose values grouping by ``grouping`` normalises: those
    (floating point, collated strings: :func:`normalised_keys`) read by a grouping expression
    whose own equality is not identity. Everything the grouping node outputs is computed
    from the normalised key, so below it a predicate must not tell their values apart
    (grouping by ``CAST(d AS STRING)`` normalises nothing: -0.0 and 0.0 are two keys)."""
    return frozenset(a.expr_id for g in grouping if not g.data_type.equality_is_identity
                     for a in g.walk() if isinstance(a, AttributeReference)
                     and not a.data_type.equality_is_identity)


def blind_to_normalisation(e: Expression, ids: frozenset) -> bool:
    """Whether ``e`` gives the same result whichever representative of its equality class
    (``-0.0`` or ``0.0``; one NaN or another; ``'A'`` or ``'a'`` under UTF8_LCASE) each
    column of ``ids`` holds.

    Grouping (Aggregate, Distinct, Deduplicate, a Window's partitions) puts ``-0.0`` and
    ``0.0`` in one group, and all NaNs in one, and outputs one value for the group: a
    predicate over such a key may move across the grouping only when it cannot tell the
    members of a group apart. It cannot when every path from a column of ``ids`` up to the
    predicate's root passes a comparison (``=, <, <=, >, >=, <=>``, ``IN``), ``IsNull``,
    ``IsNotNull`` or ``IsNaN`` first, through nothing but casts to numeric types (which map
    equal values to equal values). Anything else (a cast to string, arithmetic, a function)
    is taken to see the difference: ``CAST(-0.0 AS STRING)`` is ``'-0.0'``."""
    if not ids or not (e.references & ids):
        return True

    def blind(x: Expression, consumed_by_comparison: bool) -> bool:
        if isinstance(x, AttributeReference):
            return consumed_by_comparison or x.expr_id not in ids
        if not (x.references & ids):
            return True
        if isinstance(x, Cast) and x.to.is_numeric and x.child.data_type.has_floating_point:
            # Equal floating-point values cast to equal numbers; strings that a collation
            # calls equal need not (one may parse as a number, the other not).
            return blind(x.child, consumed_by_comparison)
        if isinstance(x, OpaqueExpression) and x.references_ is not None:
            return False  # a subquery reading the column: what it does with it is unknown
        below = isinstance(x, _NORMALISATION_BLIND)
        return all(blind(c, below) for c in x.children)
    return blind(e, False)
