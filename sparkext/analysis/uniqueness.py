"""Unique keys: sets of expressions no two rows of a plan tie on (functional dependencies,
as DataFusion's ``FunctionalDependencies`` and Calcite's ``RelMdColumnUniqueness``).

A unique key ``K`` of a node's rows says: two different rows differ on some member of
``K``, where NULL ties with NULL (as in a sort, a grouping and ``dropDuplicates``). Every
other column then depends functionally on ``K``, and in a sort, once the keys so far tie
on all of ``K`` no later key is ever consulted: an order by ``k`` satisfies ``(k,
anything)``, and ``simplify_sort_keys`` drops the keys after ``k``. The empty key says
the node has at most one row.

Derivation per node (anything not listed has none):

| node | unique keys |
| --- | --- |
| Aggregate | its grouping expressions, when every one is an output column (one row per group; a NULL group is one group); with no grouping, the empty key (exactly one row) |
| Deduplicate (``dropDuplicates(keys)``) | its keys, and the child's |
| Distinct | all its columns, and the child's |
| Project | a child's key whose every member is an output column, or an alias of it, or of a strict function of it (``k + 1 AS j``: injective, :meth:`Expression.strict_arguments <sparkext.expressions.Expression.strict_arguments>`) |
| Filter, Sort, GlobalLimit, LocalLimit, SubqueryAlias, Repartition*, RebalancePartitions (``keeps_child_unique_keys`` on the class), Sample without replacement | the child's (each input row comes out at most once) |
| Window (``keeps_child_unique_keys`` too) | the child's; and for each ``row_number()`` column: the partition keys (when all are columns) and it (numbered 1, 2, ... within each partition, a NULL partition key being one partition) |
| Sample with replacement, Generate, Expand, Union | none (they repeat rows, or mix inputs) |
| Join | semi, anti and existence joins: the left's (left rows, each once). Otherwise, the left's keys when the right side is unique on the right-hand sides of the condition's equalities (each left row meets at most one right row) and the join pads no left side (no right-only rows, whose NULL left columns would tie): inner, cross, left outer, left single. The right's likewise, mirrored: inner, cross, right outer. Full outer: none. |

NULL join keys: ``l.k = r.k`` never matches a NULL, and ``l.k <=> r.k`` matches a NULL
left key with the right side's one NULL row at most, so either way a left row meets at
most one right row. A condition's other conjuncts only remove matches.

Uniqueness here is about the values the grouping or the join compared; the ordering
analysis keeps only keys of exactly comparable types
(:func:`sparkext.analysis.ordering.properties`), where a tie in a sort is the same thing.
"""

from __future__ import annotations

from sparkext import catalyst_names as names
from sparkext._tree import CacheSlot
from sparkext.expressions import Alias, AttributeReference, EqualNullSafe, EqualTo, Expression
from sparkext.plan import (
    Aggregate,
    Deduplicate,
    Distinct,
    Join,
    LogicalPlan,
    Project,
    Sample,
    Window,
)
from sparkext.predicates import split_conjuncts

__all__ = ["UniqueKey", "unique_keys"]

#: Members no two rows tie on all of (the empty key: at most one row).
UniqueKey = tuple[Expression, ...]

#: Keys kept per node: a bound on the work, far above what real plans produce.
_MAX_KEYS = 8


def unique_keys(plan: LogicalPlan) -> tuple[UniqueKey, ...]:
    """The unique keys of ``plan``'s rows (kept on the node)."""
    return _UNIQUE_KEYS.get(plan)


_UNIQUE_KEYS: CacheSlot[tuple[UniqueKey, ...]] = CacheSlot(
    "unique_keys", lambda plan: _dedupe(_derive(plan)))


# A new node kind making unique keys must be admitted by the JVM's "ordering" pre-check
# too (Prechecks.scala: it expects them from grouped Aggregates and from the window
# functions catalyst_names.ORDERING_PRECHECK sends it; see ordering._derive).
def _derive(plan: LogicalPlan) -> tuple[UniqueKey, ...]:
    match plan:
        case Aggregate(grouping_expressions=groups, aggregate_expressions=aggs):
            key = _grouping_key(groups, aggs)
            return () if key is None else (key,)
        case Deduplicate(keys=keys, child=child):
            return (tuple(keys), *unique_keys(child))
        case Distinct(child=child):
            return (tuple(child.output), *unique_keys(child))
        case Project(project_list=exprs, child=child):
            mapped = (_through_project(key, exprs) for key in unique_keys(child))
            return tuple(k for k in mapped if k is not None)
        case Sample(with_replacement=False, child=child):
            return unique_keys(child)
        case Join(left=left, right=right, join_type=jt, condition=cond):
            return _join(left, right, jt.facts.keeps_right, jt.facts.null_padded, cond)
        case Window(partition_spec=part, child=child):
            numbered: tuple[UniqueKey, ...] = ()
            if all(isinstance(e, AttributeReference) for e in part):
                numbered = tuple((*part, rn) for rn, _ in
                                 plan.columns_of(names.DISTINCT_IN_PARTITION_WINDOW_FUNCTIONS))
            return (*numbered, *unique_keys(child))
        case _ if plan.keeps_child_unique_keys:  # (a class fact: sparkext.plan)
            return unique_keys(plan.children[0])
        case _:
            return ()


def _dedupe(keys: tuple[UniqueKey, ...]) -> tuple[UniqueKey, ...]:
    out: list[UniqueKey] = []
    seen: set = set()
    for key in keys:
        sk = frozenset(m.semantic_key() for m in key)
        if sk not in seen and len(out) < _MAX_KEYS:
            seen.add(sk)
            out.append(key)
    return tuple(out)


def _output_for(e: Expression, exprs: tuple[Expression, ...]) -> Expression | None:
    """The output column of ``exprs`` (a projection or aggregate list) that holds ``e``,
    or an injective function of it."""
    for x in exprs:
        if x.semantic_equals(e):
            return x
        if isinstance(x, Alias) and (x.child.semantic_equals(e) or any(
                a.semantic_equals(e) for a in x.child.strict_arguments())):
            return x.to_attribute()
    return None


def _grouping_key(groups: tuple[Expression, ...],
                  aggs: tuple[Expression, ...]) -> UniqueKey | None:
    key = [_output_for(g, aggs) for g in groups]
    return None if any(k is None for k in key) else tuple(k for k in key if k is not None)


def _through_project(key: UniqueKey, exprs: tuple[Expression, ...]) -> UniqueKey | None:
    mapped = [_output_for(m, exprs) for m in key]
    return None if any(m is None for m in mapped) else tuple(m for m in mapped if m is not None)


def _join(left: LogicalPlan, right: LogicalPlan, keeps_right: bool,
          null_padded: tuple[bool, bool], cond: Expression | None) -> tuple[UniqueKey, ...]:
    if not keeps_right:
        return unique_keys(left)  # semi, anti, existence: left rows, each at most once
    left_sides, right_sides = _equi_sides(cond, left, right)
    pad_left, pad_right = null_padded
    out: list[UniqueKey] = []
    if not pad_left and _unique_on(unique_keys(right), right_sides):
        out.extend(unique_keys(left))
    if not pad_right and _unique_on(unique_keys(left), left_sides):
        out.extend(unique_keys(right))
    return tuple(out)


def _equi_sides(cond: Expression | None, left: LogicalPlan,
                right: LogicalPlan) -> tuple[list[Expression], list[Expression]]:
    """The two sides of the condition's conjuncts ``l = r`` and ``l <=> r`` with ``l``
    over the left side alone and ``r`` over the right alone (either way round)."""
    lefts: list[Expression] = []
    rights: list[Expression] = []
    if cond is None:
        return lefts, rights
    lo, ro = left.output_ids, right.output_ids
    for c in split_conjuncts(cond):
        if not isinstance(c, (EqualTo, EqualNullSafe)):
            continue
        for a, b in ((c.left, c.right), (c.right, c.left)):
            if a.references and b.references and a.references <= lo and b.references <= ro:
                lefts.append(a)
                rights.append(b)
    return lefts, rights


def _unique_on(keys: tuple[UniqueKey, ...], sides: list[Expression]) -> bool:
    """Whether rows with given values of ``sides`` are at most one: some key has every
    member among them, or among what a side is an injective function of."""
    reachable = [x for s in sides for x in (s, *s.strict_arguments())]
    return any(all(any(m.semantic_equals(x) for x in reachable) for m in key)
               for key in keys)
