"""Constraints: the predicates known to hold on every row a plan node produces.

This is Catalyst's ``QueryPlanConstraints``, kept apart from the rules that use it
(``infer_filters`` adds what is implied but not yet there; ``push_down_filters`` does not
push a predicate the target side already guarantees).

Derivation per node (only deterministic predicates over the node's own output are kept):

| node | constraints |
| --- | --- |
| Relation | ``IsNotNull`` of its non-nullable columns |
| Filter | the child's, plus the filter's conjuncts (not those with correlated subqueries) |
| Project, Aggregate | the child's, re-expressed through aliases (``x AS a`` adds ``a <=> x`` and every constraint on ``x`` as one on ``a``); an aggregate's only through its grouping outputs, and only those that cannot tell ``-0.0`` from ``0.0`` or one NaN from another in a floating-point key (grouping outputs one of them) |
| Distinct, Deduplicate | the child's that cannot tell apart the values grouping normalises in a key (as for Aggregate) |
| Join | inner: both sides' and the condition's conjuncts; left semi: left's and the condition's; left outer/single, anti, existence: left's; right outer: right's; full outer: none |
| Union | those every child has (columns matched by position) |
| Window, Generate, Sort, limits, Sample, repartitioning, SubqueryAlias (``keeps_child_rows`` on the class) | the child's (restricted to the output) |
| Expand, Opaque | none |

Each set is closed under the inferences of Catalyst 4.3's ``ConstraintHelper``:

* ``IsNotNull`` of every column (or struct field of a column) a null-intolerant constraint
  reads: ``a > 5`` is never true for a NULL ``a`` (``is_not_null_inferences``);
* restatement across equalities: ``a = b AND a = 5`` gives ``b = 5``, ``a = 5 AND b >= a``
  gives ``b >= 5`` (``equality_inferences``), where equal values are the same value: not
  across floating-point or collated-string equalities, where Catalyst's restatement can
  drop rows (see ``equality_inferences``).

What is inferred is simplified (``simplify_inferred``): comparisons of an expression with
itself and of two literals are decided, without evaluating anything that could raise. A
contradiction is the literal ``false``, a constraint that reads no column: it says no row
gets here, and is carried up through every node that gives no row for no input (not
through a global aggregate, which gives one).
"""

from __future__ import annotations

from collections.abc import Iterable

from sparkext import catalyst_names as names
from sparkext._tree import CacheSlot
from sparkext.analysis.evaluation import compare_constants
from sparkext.expressions import (
    FALSE,
    TRUE,
    Alias,
    And,
    AttributeReference,
    BinaryComparison,
    Cast,
    EqualNullSafe,
    EqualTo,
    Expression,
    GetStructField,
    IsNotNull,
    Literal,
    Not,
    OpaqueExpression,
    Or,
)
from sparkext.plan import (
    Aggregate,
    Deduplicate,
    Distinct,
    Filter,
    Join,
    LogicalPlan,
    Project,
    Union,
)
from sparkext.predicates import (
    blind_to_normalisation,
    contains_aggregate,
    contains_correlated_subquery,
    normalised_columns,
    normalised_keys,
    replace_attributes,
    split_conjuncts,
)
from sparkext.types import BOOLEAN


class Constraints:
    """A set of predicates, compared by meaning (``semantic_key``), keeping insertion order.
    Those :func:`constraints` keeps on a node are frozen (:meth:`freeze`): every caller
    reads the same object; :meth:`union` builds a new set."""

    __slots__ = ("_by_key",)

    def __init__(self, exprs=()):
        self._by_key: dict = {}
        for e in exprs:
            self.add(e)

    def add(self, e: Expression) -> None:
        self._by_key.setdefault(e.semantic_key(), e)

    def __contains__(self, e: Expression) -> bool:
        return e.semantic_key() in self._by_key

    def __iter__(self):
        return iter(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)

    def keys(self):
        return self._by_key.keys()

    def union(self, other) -> Constraints:
        return Constraints([*self, *other])

    def retain(self, keep) -> Constraints:
        """Keeps only the predicates ``keep`` accepts (in place; returns ``self``)."""
        self._by_key = {k: e for k, e in self._by_key.items() if keep(e)}
        return self

    def freeze(self) -> Constraints:
        """Makes this set read-only, in place (returns it): ``add`` and ``retain`` refuse."""
        self.__class__ = _FrozenConstraints
        return self


class _FrozenConstraints(Constraints):
    """Constraints shared through the node cache (:func:`constraints`)."""

    __slots__ = ()

    def add(self, e: Expression) -> None:
        raise TypeError("these constraints are kept on a plan node and shared: build a new "
                        "set (Constraints(...), union) instead of adding to them")

    def retain(self, keep) -> Constraints:
        raise TypeError("these constraints are kept on a plan node and shared: build a new "
                        "set (Constraints(...), union) instead of changing them")


def constraints(plan: LogicalPlan) -> Constraints:
    """The constraints of ``plan``'s output (kept on the node, frozen)."""
    return _CONSTRAINTS.get(plan)


_CONSTRAINTS: CacheSlot[Constraints] = CacheSlot(
    "constraints", lambda plan: _close(_valid(plan), plan.output).freeze())


def is_not_null_inferences(exprs, output=None) -> list[Expression]:
    """``IsNotNull`` for what the null-intolerant predicates in ``exprs`` read, and for the
    non-nullable columns of ``output``. What they read is a column, or a field of a struct
    column: ``s.f = 1`` gives ``isnotnull(s.f)`` and says nothing of ``s`` (a struct holding
    a NULL field), as Catalyst's ``scanNullIntolerantAttribute``."""
    out: list[Expression] = []
    for e in exprs:
        out.extend(_not_null_implied(e))
    if output is not None:
        out.extend(IsNotNull(a) for a in output if not a.nullable)
    return out


def _not_null_implied(e: Expression) -> tuple[Expression, ...]:
    # Kept on ``e``: an inherited constraint is asked again in the closure of every node above.
    # isnotnull(a + b) is itself a null-intolerant predicate over a + b: so a and b.
    return _NOT_NULL_IMPLIED.get(e)


_NOT_NULL_IMPLIED: CacheSlot[tuple[Expression, ...]] = CacheSlot(
    "not_null_implied", lambda e: tuple(IsNotNull(x) for x in _null_intolerant_inputs(
        e.child if isinstance(e, IsNotNull) else e)))


def _null_intolerant_inputs(e: Expression) -> list[Expression]:
    if isinstance(e, AttributeReference) or _is_field_of_column(e):
        return [e]
    if e.null_intolerant:
        return [x for c in e.children for x in _null_intolerant_inputs(c)]
    return []


def _is_field_of_column(e: Expression) -> bool:
    """``s.f``, ``s.f.g`` or ``arr.f`` (a field of every struct in an array) over a column."""
    if not _is_field_access(e):
        return False
    while _is_field_access(e):
        e = e.children[0]
    return isinstance(e, AttributeReference)


def _is_field_access(e: Expression) -> bool:
    return isinstance(e, GetStructField) or (
        isinstance(e, OpaqueExpression) and e.cls == names.GET_ARRAY_STRUCT_FIELDS)


def equality_inferences(exprs) -> list[Expression]:
    """Other predicates restated across equalities (Catalyst's ``inferAdditionalConstraints``
    and ``inferConstraintsFromLiteralBindings``):

    * for ``a = b`` between columns, each predicate on ``a`` restated on ``b`` and back;
      for ``CAST(a AS t) = b``, each predicate on ``b`` restated on ``CAST(a AS t)``;
    * for ``a = <literal>``, each predicate on ``a`` other than a column equality restated
      on the literal (``a = 5 AND b >= a`` gives ``b >= 5``).

    Each result is simplified (:func:`simplify_inferred`): a contradiction comes out as
    the literal ``false``.

    Only where equal values are the same value (``DataType.equality_is_identity``): unlike
    Catalyst, which restates across ``DOUBLE`` columns too and so drops rows where one side
    is ``-0.0`` and the other ``0.0`` (``a = b AND CAST(a AS STRING) = '-0.0'`` gains
    ``CAST(b AS STRING) = '-0.0'``, false for ``b = 0.0``)."""
    preds = [e for e in exprs if not isinstance(e, IsNotNull)]
    # What is restated is always a column: only the predicates that read it can mention
    # it. Each list keeps the order of ``preds``, so the result's order is the same as a
    # scan of all of them would give (and the work linear in the equalities, not quadratic).
    reading: dict = {}
    for p in preds:
        for ref in p.references:
            reading.setdefault(ref, []).append(p)

    def restate(source: AttributeReference, target: Expression, keep
                ) -> list[Expression | None]:
        key = source.semantic_key()
        return [_restated(p, key, target) for p in reading.get(source.expr_id, ())
                if keep(p) and _mentions(p, key)]

    out: list[Expression | None] = []  # (None: nothing worth adding)
    for eq in preds:
        if not isinstance(eq, EqualTo):
            continue
        left, right = eq.left, eq.right

        def other(p, eq=eq, left=left, right=right) -> bool:
            return p.semantic_key() != eq.semantic_key() and not _same_pair(p, left, right)
        if isinstance(right, AttributeReference) and _identity(right):
            if isinstance(left, AttributeReference):
                out.extend(restate(left, right, other))
                out.extend(restate(right, left, other))
            elif _is_cast_of_column(left):
                out.extend(restate(right, left, other))
        if isinstance(left, AttributeReference) and _identity(left) and _is_cast_of_column(right):
            out.extend(restate(left, right, other))

    def restatable(p) -> bool:
        return not _is_column_equality(p) and not isinstance(p, EqualNullSafe)
    for attr, lit in _literal_bindings(preds):
        out.extend(restate(attr, lit, restatable))
    return [p for p in out if p is not None]


def _restated(p: Expression, key, target: Expression) -> Expression | None:
    """``p`` with ``target`` in place of what has semantic key ``key``, simplified
    (:func:`simplify_inferred`). Kept on ``p``, by the identity of ``target``: the
    constraints inherited from below, and the equalities among them, are the same objects in
    the closure of every node above, which restates them again (and an equal but distinct
    target, an attribute with another nullability or qualifier, would give another result)."""
    memo = _RESTATED.get(p)
    hit = memo.get((key, id(target)))
    if hit is not None and hit[0] is target:  # (the entry holds target: its id is not reused)
        return hit[1]
    out = simplify_inferred(_replace_expr(p, key, target))
    memo[(key, id(target))] = (target, out)
    return out


#: The one slot whose value grows: a memo private to :func:`_restated` (``(key,
#: id(target)) -> (target, restated p)``), never handed out; an entry never changes once
#: written.
_RESTATED: CacheSlot[dict] = CacheSlot("restated", lambda p: {})


# What a comparison of a deterministic expression with itself gives for a non-NULL value:
# true for =, <=, >= (Spark compares NaN = NaN as true, and NaN <= NaN), false for < and >.
# For a NULL value every one of them is NULL; <=> is true either way.
_SELF = {"EqualTo": True, "LessThanOrEqual": True, "GreaterThanOrEqual": True,
         "LessThan": False, "GreaterThan": False}


def simplify_inferred(e: Expression) -> Expression | None:
    """An inferred predicate made ready to add, without any evaluation that could raise:
    comparisons of an expression with itself and between two literals decided, the
    AND/OR/NOT above them simplified. Returns None when nothing is worth adding (it is
    true, or it could only be kept by evaluating what it compares), the literal ``false``
    when no row can satisfy it, else the (simplified) predicate.

    ``e > e`` and ``e < e`` are false for a non-NULL ``e`` and NULL for a NULL one: where
    NULL and false mean the same (the predicate itself, or under AND/OR from there, as a
    filter reads it) both are ``false``. ``e = e``, ``e <= e`` and ``e >= e`` are true or
    NULL: true when ``e`` cannot be NULL, else they say only that ``e`` is not NULL, which
    cannot be stated without evaluating ``e`` (``v * -730`` may overflow), so the predicate
    is dropped. ``e <=> e`` is true.

    Restating ``z > y`` across ``y = z`` gives ``z > z``; a literal restated into
    ``a = 1999 OR (a = 1998 AND m = 12)`` gives ``1999 = 1999 OR ...``: true, nothing
    learned. Catalyst folds both in the batch after it infers them; sparkext's rules run
    after those batches, so it folds what it infers itself (a rule that added a true
    predicate on every round would never reach a fixed point, and one that added
    ``(v * -730) > (v * -730)`` would evaluate a product the query never needed)."""
    gave_up = False

    def fold(x: Expression, null_is_false: bool):
        nonlocal gave_up
        if isinstance(x, (And, Or)):
            left, right = fold(x.left, null_is_false), fold(x.right, null_is_false)
            if gave_up:
                return x
            absorbing = isinstance(x, Or)  # true absorbs OR, false absorbs AND
            for a, b in ((left, right), (right, left)):
                if _is_bool(a, absorbing):
                    return a
                if _is_bool(a, not absorbing):
                    return b
            return x if (left, right) == (x.left, x.right) else x.copy(left=left, right=right)
        if isinstance(x, Not):
            child = fold(x.child, False)
            if isinstance(child, Literal) and isinstance(child.value, bool):
                return Literal(not child.value, child.data_type)
            return x if child is x.child else x.copy(child=child)
        if isinstance(x, BinaryComparison) and x.left.deterministic \
                and x.left.semantic_key() == x.right.semantic_key():
            if isinstance(x, EqualNullSafe):
                return TRUE
            value = _SELF[type(x).__name__]
            if not x.left.nullable or (null_is_false and not value):
                return Literal(value, BOOLEAN)
            gave_up = True
            return x
        if isinstance(x, BinaryComparison) and x.left.foldable and x.right.foldable:
            decided = _compare_literals(x)
            if decided is None:
                gave_up = True
                return x
            return decided
        return x
    folded = fold(e, True)
    if gave_up or _is_bool(folded, True):
        return None
    return FALSE if _is_bool(folded, False) else folded


def is_false(e: Expression) -> bool:
    """The literal ``false``: what a contradiction among a node's predicates is."""
    return _is_bool(e, False)


def _is_bool(e: Expression, value: bool) -> bool:
    return isinstance(e, Literal) and e.value is value


def _compare_literals(c) -> Literal | None:
    """Two literals of one type compared, where the one folder decides it
    (:func:`sparkext.analysis.evaluation.compare_constants`); else None."""
    left, right = c.left, c.right
    if not (isinstance(left, Literal) and isinstance(right, Literal)) \
            or left.data_type != right.data_type:
        return None
    decided = compare_constants(type(c).__name__, left.value, right.value, left.data_type)
    return None if decided is None else Literal(decided, BOOLEAN)


def _identity(e: Expression) -> bool:
    return e.data_type.equality_is_identity


def _is_cast_of_column(e: Expression) -> bool:
    return isinstance(e, Cast) and isinstance(e.child, AttributeReference)


def _is_column_equality(p: Expression) -> bool:
    """``a = b`` or ``CAST(a AS t) = b`` (either way round): restated by the transitive case;
    restating them on a literal would only repeat what that case derives."""
    if not isinstance(p, EqualTo):
        return False
    sides = (p.left, p.right)
    return all(isinstance(x, AttributeReference) or _is_cast_of_column(x) for x in sides) \
        and any(isinstance(x, AttributeReference) for x in sides)


def _literal_bindings(preds) -> list[tuple[AttributeReference, Literal]]:
    out = []
    for p in preds:
        if isinstance(p, EqualTo):
            for a, lit in ((p.left, p.right), (p.right, p.left)):
                if isinstance(a, AttributeReference) and isinstance(lit, Literal) \
                        and _identity(a):
                    out.append((a, lit))
    return out


def _same_pair(p, a, b) -> bool:
    return isinstance(p, EqualNullSafe) and {p.left.semantic_key(), p.right.semantic_key()} == \
        {a.semantic_key(), b.semantic_key()}


def with_inferences(exprs: Iterable[Expression], output=None) -> Constraints:
    """``exprs`` and what they imply: one round of :func:`equality_inferences`, then
    :func:`is_not_null_inferences` of all of it (and of ``output``'s non-nullable columns)."""
    out = Constraints(exprs)
    for e in equality_inferences(list(out)):
        out.add(e)
    # Catalyst infers IsNotNull from the base constraints only; from the restated ones too,
    # so that adding what is inferred (b = 1) brings no new inference (isnotnull(b)) on the
    # next round: a fixed-point rule must add everything at once.
    for e in is_not_null_inferences(list(out), output):
        out.add(e)
    return out


def _close(valid: list[Expression], output) -> Constraints:
    ids = frozenset(a.expr_id for a in output)
    # ``false`` (a contradiction) reads no column and still says something: no row gets here.
    return with_inferences(valid, output).retain(
        lambda c: (c.references and c.references <= ids and c.deterministic) or is_false(c))


def _valid(plan: LogicalPlan) -> list[Expression]:
    match plan:
        case Filter(condition=cond, child=child):
            return [*constraints(child),
                    *(c for c in split_conjuncts(cond) if not contains_correlated_subquery(c))]
        case Project(project_list=exprs, child=child):
            return _aliased(constraints(child), exprs)
        case Aggregate(aggregate_expressions=exprs, child=child):
            grouping_outputs = [e for e in exprs if not contains_aggregate(e)]
            # Every output is computed from the normalised keys: what the child's rows
            # satisfy holds above only where it cannot tell normalised values apart.
            normalised = normalised_columns(plan.grouping_expressions)
            below = _grouped(constraints(child), (), normalised)
            inherited = _aliased(below, grouping_outputs)
            if not plan.grouping_expressions:
                # A global aggregate gives one row even for no input rows.
                inherited = [c for c in inherited if not is_false(c)]
            return _grouped(inherited, plan.output)
        case Distinct(child=child):
            return _grouped(constraints(child), plan.output)
        case Deduplicate(keys=keys, child=child):
            return _grouped(constraints(child), keys)
        case Join(left=left, right=right, join_type=jt, condition=cond):
            from_left, from_right, from_condition = jt.facts.constraints_from
            on = [c for c in split_conjuncts(cond) if not contains_correlated_subquery(c)]
            return [*(constraints(left) if from_left else ()),
                    *(constraints(right) if from_right else ()),
                    *(on if from_condition else ())]
        case Union(children=children):
            return _common(plan.output, children)
        case _ if plan.keeps_child_rows:
            return list(constraints(plan.children[0]))
        case _:
            return []


def _grouped(child, keys, ids=frozenset()) -> list[Expression]:
    """What holds of every row below a grouping and still holds of the one value it
    outputs for each group: grouping outputs one representative of ``-0.0``/``0.0`` and of
    the NaNs, so a predicate that can tell them apart (``CAST(d AS STRING) = '-0.0'``) holds
    below and not above. ``keys``: the grouping columns; ``ids``: more column ids."""
    ids = normalised_keys(keys) | ids
    return [c for c in child if blind_to_normalisation(c, ids)]


def _aliased(child: Iterable[Expression], named) -> list[Expression]:
    out = list(child)
    for ne in named:
        if not isinstance(ne, Alias):
            continue
        attr = ne.to_attribute()
        if isinstance(ne.child, Literal):
            out.append(EqualNullSafe(attr, ne.child))
        elif ne.child.deterministic:
            key = ne.child.semantic_key()
            out.extend(_replace_expr(c, key, attr) for c in list(out) if _mentions(c, key))
            out.append(EqualNullSafe(ne.child, attr))
    return out


def _mentions(e: Expression, key) -> bool:
    """Whether a subexpression of ``e`` has semantic key ``key``. The keys are kept on
    ``e``: a constraint is one shared object in the closures of every node above the one
    that introduced it, and each closure asks this of it for every equality and alias."""
    return key in _SUBEXPRESSION_KEYS.get(e)


_SUBEXPRESSION_KEYS: CacheSlot[frozenset] = CacheSlot(
    "subexpression_keys", lambda e: frozenset(
        x.semantic_key() for x in e.walk() if isinstance(x, Expression)))


def _replace_expr(e: Expression, key, replacement: Expression) -> Expression:
    """``e`` with every subexpression of semantic key ``key`` replaced. Children first, so
    that a replacement is never looked into: ``cast(a AS INT)`` in place of ``a`` holds
    ``a`` again (a match cannot hold another match, so nothing else differs from
    replacing parents first). Such an identity cast (left in place when Catalyst's
    SimplifyCasts is off) still gains one more cast in each plan node's constraints above
    it, ``cast(cast(a AS INT) AS INT) > 1``: bounded by the plan's depth, and true of every
    row. Catalyst's own inference overflows its stack on the same predicate."""
    return e.transform_up(lambda x: replacement if x.semantic_key() == key else x)


def _common(output, children) -> list[Expression]:
    common = None
    for child in children:
        mapping = {a.expr_id: first for a, first in zip(child.output, output)}
        mapped = Constraints(replace_attributes(c, mapping) for c in constraints(child))
        common = mapped if common is None else Constraints(c for c in common if c in mapped)
    return list(common or ())
