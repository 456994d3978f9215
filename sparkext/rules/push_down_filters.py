"""push_down_filters: move each deterministic conjunct of a filter as close to the data as
it can legally go.

    Filter (a > 1 AND c = 'x' AND a = b)         Join Inner (a = b)
    +- Join Inner                          ==>   :- Filter (a > 1)
       :- Relation l [a]                         :  +- Relation l [a]
       +- Relation r [b, c]                      +- Filter (c = 'x')
                                                    +- Relation r [b, c]

**Legal** means: the rows that reach the node's parent are exactly the same with the
conjunct evaluated below the node as above it. A conjunct moves on its own; filters that
meet are combined with the conjuncts that cannot raise first (comparisons, NULL tests,
IN lists of columns and literals: :func:`sparkext.predicates.guards_first`), then the
lower filter's conjuncts before the upper one's (Spark 4 runs in ANSI mode, where a
conjunct can raise, and ``AND`` goes on past a guard that is NULL: a guard must stay
ahead of what it guards, whether it came from below, from above, or from a join's
condition, ``ON r.g <> 0 ... WHERE 100 DIV r.g > 0`` and the other way round). The
conjuncts of one filter are never reordered. A non-deterministic conjunct never moves, and
the conjuncts after it stay after it.

| below this node | a conjunct moves when |
| --- | --- |
| Filter | always (the two are combined, guards first, then lower first, duplicates dropped), unless the lower filter is non-deterministic |
| Project | every projected expression is deterministic; aliases are replaced by what they name |
| Aggregate | it reads only grouping outputs (aliases of grouping expressions replaced); never for a global aggregate, nor when an aggregate or grouping expression is non-deterministic; it cannot tell normalised floating-point keys apart (below) |
| Window | it reads only attributes the window is partitioned by, and every window expression is deterministic; it cannot tell normalised floating-point keys apart |
| Union | always: into every child, columns mapped by position |
| Generate | it reads no generator output and the generator is deterministic |
| Expand | it reads only columns every projection passes through unchanged |
| Sort, Repartition, RepartitionByExpression, RebalancePartitions, SubqueryAlias (``commutes_with_filters`` on the class) | always |
| Distinct | it cannot tell normalised floating-point keys apart |
| Deduplicate | it reads only the deduplication keys, and cannot tell normalised floating-point keys apart |
| Join | by join type, below |
| Limit, Sample, Opaque, Relation | never |

**Floating-point grouping keys.** Grouping (Aggregate, Distinct, Deduplicate, a Window's
partitions) puts ``-0.0`` and ``0.0`` in one group, and every NaN in one, and outputs one
value for the group (Catalyst's ``NormalizeFloatingNumbers``). Below the grouping a
conjunct sees each row's own value: it may move only if it gives the same result for every
member of a group, which :func:`sparkext.predicates.blind_to_normalisation` decides: each
floating-point key (float, double, or a nested type holding one) reaches the conjunct's
root only through a comparison (``=, <, <=, >, >=, <=>``, ``IN``), ``IsNull``,
``IsNotNull`` or ``IsNaN``, with nothing but casts to numeric types on the way. Catalyst
pushes ``CAST(d AS STRING) = '0.0'`` below ``GROUP BY d`` and counts one row of three
(tests/corpus/catalyst_wrong.py). A string key under a collation other than UTF8_BINARY is
normalised the same way (``'A'`` and ``'a'`` are one key under UTF8_LCASE); for it no cast
passes (two strings the collation calls equal may cast to different numbers).

A conjunct with a subquery never moves next to attributes of the subquery's own output ids
(the subquery's rewrite into a join would see them twice), nor into a join condition.

Joins — which conjuncts may go to which side (Catalyst's ``PushPredicateThroughJoin``; the
facts live on the join types, ``where_filters``, ``on_filters`` and
``where_joins_condition`` in :mod:`sparkext.joins`; an opaque join type moves nothing):

| join type | WHERE, left-only | WHERE, right-only | WHERE, both sides | ON, left-only | ON, right-only |
| --- | --- | --- | --- | --- | --- |
| Inner, Cross | left | right | join condition | left | right |
| LeftOuter, LeftSingle | left | stays | stays | stays | right |
| RightOuter | stays | right | stays | left | stays |
| FullOuter | stays | stays | stays | stays | stays |
| LeftSemi | left | — | stays | left | right |
| LeftAnti, ExistenceJoin | left | — | stays | stays | right |

(a preserved side keeps its rows: only WHERE conjuncts may filter it; a null-supplying
side may only lose rows that could not have matched: only ON conjuncts may filter it.)

Before that, an outer join whose null-supplying side a WHERE conjunct rejects becomes an
inner one (Catalyst's ``EliminateOuterJoin``, which cannot see a filter that has not yet
come down to the join): a conjunct that is NULL or false whenever that side's columns are
NULL drops every row the outer join padded with NULLs. As Catalyst does, this is decided
by evaluation (:func:`sparkext.analysis.evaluation.rejects_nulls`): the conjunct is evaluated in
three-valued logic with that side's columns NULL and every other column unknown, through
NULL propagation, IF, CASE WHEN, COALESCE, NULL checks and AND/OR/NOT; what cannot be
evaluated may be true, and does not reject. So ``if(isnull(alwaysTrue), 0, count) > 0``,
the filter a correlated scalar subquery leaves, rejects the NULL-padded rows (``0 > 0``). Left and right
outer joins become inner joins; a full outer join becomes left, right or inner.
A WHERE conjunct that joins the two sides becomes part of an inner join's condition,
after the conjuncts already there. From a join condition conjunct over both sides, the
part each side can check alone is extracted — ``(l.a = 1 AND r.b = 2) OR (l.a = 3)`` implies
``l.a = 1 OR l.a = 3`` on the left — and added to the sides the table lets ON conjuncts
filter, when that side does not already guarantee it (Catalyst's
``PushExtraPredicateThroughJoin``).
"""

from __future__ import annotations

from collections.abc import Callable

from sparkext.analysis.constraints import constraints
from sparkext.analysis.evaluation import rejects_nulls
from sparkext.expressions import And, AttributeReference, Expression, Or
from sparkext.plan import (
    Aggregate,
    Deduplicate,
    Distinct,
    Expand,
    Filter,
    Generate,
    Join,
    LogicalPlan,
    Project,
    Union,
    Window,
)
from sparkext.predicates import (
    alias_map,
    blind_to_normalisation,
    can_move_next_to,
    conjoin,
    conjunction,
    contains_aggregate,
    contains_subquery,
    deterministic_prefix,
    guards_first,
    normalised_columns,
    normalised_keys,
    replace_aliases,
    replace_attributes,
    semantic_set,
    split_conjuncts,
)

__all__ = ["push_down_filters"]

def push_down_filters(plan: LogicalPlan) -> LogicalPlan:
    """Pushes filters down the plan; returns ``plan`` itself when nothing can move."""
    return plan.transform_down(_push)


def _push(node: LogicalPlan) -> LogicalPlan:
    # What arrives at this position may move again (a filter pushed into a join leaves the
    # join's own condition to push): repeat until it stays.
    while True:
        new = _push_once(node)
        if new is node:
            return node
        node = new


def _push_once(node: LogicalPlan) -> LogicalPlan:
    match node:
        case Filter(condition=cond, child=child):
            return _push_filter(node, cond, child)
        case Join(condition=cond) if cond is not None:
            return _push_join_condition(node)
        case _:
            return node


def _above(conjuncts: list, node: LogicalPlan) -> LogicalPlan:
    return Filter(conjunction(conjuncts), node) if conjuncts else node


def _moving(movable: list, target: LogicalPlan, allowed: Callable[[Expression], bool],
            rewrite: Callable[[Expression], Expression] = lambda c: c,
            grouped: frozenset = frozenset()):
    """Splits ``movable`` into (rewritten conjuncts that go to ``target``, the ones that
    stay), both in their original order. ``grouped``: the columns of ``target`` that the
    node being crossed groups by and normalises (floating-point keys); a conjunct that
    could tell their values apart stays above."""
    moved, stay = [], []
    ids = target.output_ids
    for c in movable:
        r = rewrite(c)
        if allowed(r) and r.references <= ids and can_move_next_to(r, ids) \
                and blind_to_normalisation(r, grouped):
            moved.append(r)
        else:
            stay.append(c)
    return moved, stay


def _push_filter(f: Filter, cond: Expression, child: LogicalPlan) -> LogicalPlan:
    movable, pinned = deterministic_prefix(split_conjuncts(cond))
    if not movable:
        return f

    def through(allowed, rebuild, rewrite=lambda c: c, grouped=frozenset()):
        below = child.children[0]
        moved, stay = _moving(movable, below, allowed, rewrite, grouped)
        if not moved:
            return f
        return _above(stay + pinned, rebuild(Filter(conjunction(moved), below)))

    def anything(c):
        return True

    match child:
        case Filter(condition=lower, child=below) if lower.deterministic:
            lower_conjuncts = split_conjuncts(lower)
            seen = semantic_set(lower_conjuncts)
            new = [c for c in movable if c.semantic_key() not in seen]
            merged = Filter(conjunction(guards_first(lower_conjuncts + new)), below) \
                if new else child
            return _above(pinned, _push(merged))

        case Project(project_list=exprs) if all(e.deterministic for e in exprs):
            aliases = alias_map(exprs)
            return through(anything, lambda b: Project(exprs, b),
                           lambda c: replace_aliases(c, aliases))

        case Aggregate(grouping_expressions=groups, aggregate_expressions=aggs) if (
                groups and all(e.deterministic for e in groups + aggs)):
            aliases = {k: v for k, v in alias_map(aggs).items() if not contains_aggregate(v)}
            return through(lambda c: not contains_aggregate(c), lambda b: child.copy(child=b),
                           lambda c: replace_aliases(c, aliases), normalised_columns(groups))

        case Window(window_expressions=wexprs, partition_spec=parts) if all(
                e.deterministic for e in wexprs):
            keys = [p for p in parts if isinstance(p, AttributeReference)]
            key_ids = frozenset(p.expr_id for p in keys)
            return through(lambda c: c.references <= key_ids, lambda b: child.copy(child=b),
                           grouped=normalised_keys(keys))

        case Generate(generator=gen) if gen.deterministic:
            return through(anything, lambda b: child.copy(child=b))

        case Expand(projections=projs, output=out, child=below):
            passing = frozenset(
                a.expr_id for i, a in enumerate(out)
                if a.expr_id in below.output_ids and all(
                    isinstance(x := p[i], AttributeReference) and x.expr_id == a.expr_id
                    for p in projs))
            return through(lambda c: c.references <= passing, lambda b: child.copy(child=b))

        case Deduplicate(keys=keys):
            key_ids = frozenset(k.expr_id for k in keys)
            return through(lambda c: c.references <= key_ids, lambda b: child.copy(child=b),
                           grouped=normalised_keys(keys))

        case Distinct():
            return through(anything, lambda b: child.copy(child=b),
                           grouped=normalised_keys(child.output))

        case _ if child.commutes_with_filters:
            return through(anything, lambda b: child.with_new_children([b]))

        case Union():
            return _push_into_union(f, movable, pinned, child)

        case Join():
            return _push_into_join(f, movable, pinned, child)

        case _:
            return f


def _push_into_union(f: Filter, movable: list, pinned: list, union: Union) -> LogicalPlan:
    outputs = union.output
    per_child = []
    for kid in union.children:
        mapping = {a.expr_id: k for a, k in zip(outputs, kid.output)}
        per_child.append([replace_attributes(c, mapping) for c in movable])
    movable_everywhere = [
        i for i in range(len(movable))
        if all(can_move_next_to(conds[i], kid.output_ids)
               for conds, kid in zip(per_child, union.children))]
    if not movable_everywhere:
        return f
    kids = [Filter(conjunction([conds[i] for i in movable_everywhere]), kid)
            for conds, kid in zip(per_child, union.children)]
    moved = set(movable_everywhere)
    stay = [c for i, c in enumerate(movable) if i not in moved]
    return _above(stay + pinned, union.copy(children=tuple(kids)))


def _without_rejected_outer_sides(join: Join, conjuncts: list) -> Join:
    jt = join.join_type
    if not jt.facts.outer:
        return join
    left_rejected = any(rejects_nulls(c, join.left.output_ids) for c in conjuncts)
    right_rejected = any(rejects_nulls(c, join.right.output_ids) for c in conjuncts)
    new = jt.without_padding(left_rejected, right_rejected)
    return join if new is jt else join.copy(join_type=new)


def _classify(conjuncts: list, left: LogicalPlan, right: LogicalPlan):
    """(left-only, right-only, both/neither) conjuncts, each list in the original order."""
    lc, rc, common = [], [], []
    for c in conjuncts:
        if c.references <= left.output_ids and can_move_next_to(c, left.output_ids):
            lc.append(c)
        elif c.references <= right.output_ids and can_move_next_to(c, right.output_ids):
            rc.append(c)
        else:
            common.append(c)
    return lc, rc, common


def _with_filter(conjuncts: list, node: LogicalPlan) -> LogicalPlan:
    return Filter(conjunction(conjuncts), node) if conjuncts else node


def _push_into_join(f: Filter, movable: list, pinned: list, join: Join) -> LogicalPlan:
    inner = _without_rejected_outer_sides(join, movable)
    if inner is not join:
        return _above(movable + pinned, inner)
    lc, rc, common = _classify(movable, join.left, join.right)
    to_left, to_right = join.join_type.facts.where_filters
    lc, rc = (lc if to_left else []), (rc if to_right else [])
    into_condition = []
    if join.join_type.facts.where_joins_condition:
        into_condition = [c for c in common if not contains_subquery(c)]
    moved = {id(c) for c in lc + rc + into_condition}
    if not moved:
        return f
    condition = conjoin(split_conjuncts(join.condition) + into_condition)
    new_join = join.copy(left=_with_filter(lc, join.left), right=_with_filter(rc, join.right),
                         condition=condition)
    stay = [c for c in movable if id(c) not in moved]
    return _above(stay + pinned, new_join)


def _push_join_condition(join: Join) -> LogicalPlan:
    conjuncts = split_conjuncts(join.condition)
    movable, _ = deterministic_prefix(conjuncts)
    lc, rc, common = _classify(movable, join.left, join.right)
    to_left, to_right = join.join_type.facts.on_filters
    lc, rc = (lc if to_left else []), (rc if to_right else [])
    moved = {id(c) for c in lc + rc}
    left = _with_filter(lc, join.left)
    right = _with_filter(rc, join.right)

    # The part of a two-sided conjunct each side can check alone, where it is new.
    both = [c for c in common if c.references and not contains_subquery(c)]
    if to_left:
        left = _with_extra(both, join.left, left)
    if to_right:
        right = _with_extra(both, join.right, right)

    if not moved and left is join.left and right is join.right:
        return join
    remaining = [c for c in conjuncts if id(c) not in moved]
    return join.copy(left=left, right=right, condition=conjoin(remaining))


def _with_extra(both: list, side: LogicalPlan, current: LogicalPlan) -> LogicalPlan:
    candidates = [e for e in (extract_within(c, side.output_ids) for c in both) if e is not None]
    if not candidates:
        return current  # the usual case (join keys): no need for the side's constraints
    known = constraints(side)
    extra: list[Expression] = []
    for e in candidates:
        if e not in known and e.semantic_key() not in semantic_set(extra):
            extra.append(e)
    return _with_filter(extra, current) if extra else current


def extract_within(e: Expression, ids: frozenset) -> Expression | None:
    """The weakest predicate over ``ids`` alone that ``e`` implies, if there is one
    (Catalyst's ``extractPredicatesWithinOutputSet``)."""
    match e:
        case And(left=a, right=b):
            x, y = extract_within(a, ids), extract_within(b, ids)
            if x is not None and y is not None:
                return And(x, y)
            return x if x is not None else y
        case Or(left=a, right=b):
            x, y = extract_within(a, ids), extract_within(b, ids)
            return Or(x, y) if x is not None and y is not None else None
        case _:
            return e if e.deterministic and e.references <= ids else None
