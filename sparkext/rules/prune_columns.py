"""prune_columns: compute only the columns something above needs, and read only those.

The set of needed columns travels from the root down (pyfloe's "needed set", for every
mirrored node); each node keeps what is needed of its own output plus what its own
expressions read, and asks its inputs for exactly that:

    Aggregate [k], [k, sum(v) AS s]               Aggregate [k], [k, sum(v) AS s]
    +- Filter (x > 0)                      ==>    +- Project [k, v]
       +- Relation t [k, v, x, y, z]                 +- Filter (x > 0)
                                                        +- Relation t [k, v, x, y, z]

(the file scan under the Project then reads k, v and x only).

| node | what it drops | what it asks of its input |
| --- | --- | --- |
| Project | unneeded entries (aliases included) | what the kept entries read |
| Aggregate | unneeded aggregate expressions | grouping expressions' and kept aggregates' columns |
| Window | unneeded window expressions (the whole Window if none is left) | needed child columns, plus what the kept window, partition and order expressions read |
| Union | unneeded positions, in every child alike | those positions |
| Generate | child columns only the generator needed (``unrequired_child_index``) | needed child columns plus the generator's |
| Expand | unneeded output positions, in every projection | what the kept projections read |
| Join | — | per side: needed columns plus the condition's |
| Filter | — | needed columns plus what it reads (with ``before_subquery_rewrite``, a filter with an EXISTS or IN subquery gets a Project right below it: Spark turns it into a join later) |
| Sort, limits, Sample, repartitioning, SubqueryAlias (``keeps_child_columns`` on the class) | — | needed columns plus what they read; a relation under them, bare or under filters only, gets a Project |
| Distinct, Deduplicate, Opaque | — | everything (pruning below them would change what is distinct or what they see) |

Where a node consumes an input that still carries columns nobody needs (a filter over a
relation, a join), a Project with just the needed columns goes right above that input —
the shape Catalyst's ``ColumnPruning`` reaches, so Spark's file scan reads fewer columns.
Spark's scan planners narrow a scan only to what a Project/Filter chain directly on the
relation reads, so the needed set must reach every relation through the pass-through
nodes above it:

    Project [a]                                   Project [a]
    +- Sort [d]                            ==>    +- Sort [d]
       +- Filter (b > 0)                             +- Project [a, d]
          +- Relation t [a, b, c, d]                    +- Filter (b > 0)
                                                           +- Relation t [a, b, c, d]

That Project lists attributes only: it computes nothing and moves no filter, so the rows
above are the same, in the same order and partitions. The root keeps its whole output.
"""

from __future__ import annotations

from typing import TypeGuard

from sparkext import catalyst_names as names
from sparkext._tree import CacheSlot
from sparkext.analysis.needed import (
    child_needs,
    expand_positions,
    needed_entries,
    references_of,
    union_positions,
)
from sparkext.expressions import Expression, ExprId, OpaqueExpression
from sparkext.plan import (
    Aggregate,
    Deduplicate,
    Distinct,
    Expand,
    Filter,
    Generate,
    Join,
    LogicalPlan,
    Opaque,
    Project,
    Relation,
    Union,
    Window,
)
from sparkext.predicates import opaque_inside

__all__ = ["prune_columns"]


def prune_columns(plan: LogicalPlan, *, before_subquery_rewrite: bool = False) -> LogicalPlan:
    """Prunes unneeded columns; returns ``plan`` itself when there is nothing to prune.

    ``before_subquery_rewrite``: also put a Project right below every filter with an
    EXISTS or IN subquery, and narrow each EXISTS subquery's plan to the columns its
    correlation reads. Spark turns those filters into joins after sparkext has run, and
    only Catalyst's own ColumnPruning prunes around such joins: when it is switched off,
    this does its work in advance.
    """
    if before_subquery_rewrite and _holds_predicate_subquery(plan):
        plan = _narrow_exists_subqueries(plan)
        return _Pruner(True).prune(plan, plan.output_ids)
    # Without an EXISTS or IN subquery both rules compute this one function of the plan.
    # Kept on the node: the second of them to see a plan, and a fixed point's confirming
    # round, read the first's answer.
    pruned = _PRUNED.get(plan)
    return plan if pruned is None else pruned


def _pruned(plan: LogicalPlan) -> LogicalPlan | None:
    """``plan`` pruned as both rules prune a plan without EXISTS or IN subqueries; None
    when that is ``plan`` itself (a node keeping itself in its own cache would make a
    cycle)."""
    new = _Pruner(False).prune(plan, plan.output_ids)
    return None if new is plan else new


_PRUNED: CacheSlot[LogicalPlan | None] = CacheSlot("pruned", _pruned)


def _holds_predicate_subquery(plan: LogicalPlan) -> bool:
    """Whether an expression of a node of ``plan`` holds an EXISTS or IN subquery."""
    return any(_has_predicate_subquery(e) for n in plan.walk() for e in n.expressions)


class _Pruner:
    def __init__(self, before_subquery_rewrite: bool):
        self.before_subquery_rewrite = before_subquery_rewrite

    def narrow(self, node: LogicalPlan, needed: frozenset) -> LogicalPlan:
        """``node`` pruned to ``needed``, with a Project on top if it still carries more."""
        pruned = self.prune(node, needed)
        out = pruned.output
        if all(a.expr_id in needed for a in out):
            return pruned
        return Project(tuple(a for a in out if a.expr_id in needed), pruned)


    def prune(self, node: LogicalPlan, needed: frozenset) -> LogicalPlan:
        """``node`` computing at least ``needed`` of its output (its output may keep more).
        What it asks of each input is :func:`~sparkext.analysis.needed.child_needs`."""
        match node:
            case Project(project_list=exprs, child=child):
                kept = needed_entries(exprs, needed)
                (wanted,) = child_needs(node, needed)
                new_child = self.prune(child, wanted)
                if len(kept) == len(exprs) and new_child is child:
                    return node
                return Project(kept, new_child)

            case Aggregate(aggregate_expressions=aggs, child=child):
                kept = needed_entries(aggs, needed)
                (wanted,) = child_needs(node, needed)
                new_child = self.narrow(child, wanted)
                if len(kept) == len(aggs) and new_child is child:
                    return node
                return node.copy(aggregate_expressions=kept, child=new_child)

            case Window(window_expressions=wexprs, child=child):
                kept = needed_entries(wexprs, needed)
                if not kept:  # the Window goes: its child gives what passes through it
                    return self.prune(child, needed & child.output_ids)
                (wanted,) = child_needs(node, needed)
                new_child = self.narrow(child, wanted)
                if len(kept) == len(wexprs) and new_child is child:
                    return node
                return node.copy(window_expressions=kept, child=new_child)

            case Join(left=left, right=right):
                wanted_left, wanted_right = child_needs(node, needed)
                new_left = self.narrow(left, wanted_left)
                new_right = self.narrow(right, wanted_right)
                if new_left is left and new_right is right:
                    return node
                return node.copy(left=new_left, right=new_right)

            case Union(children=kids):
                positions = union_positions(node, needed)
                if len(positions) == len(node.output):
                    new_kids = tuple(self.prune(k, k.output_ids) for k in kids)
                else:
                    new_kids = tuple(self.keep_positions(k, positions) for k in kids)
                if all(a is b for a, b in zip(new_kids, kids)):
                    return node
                return node.copy(children=new_kids)

            case Generate(child=child):
                (wanted,) = child_needs(node, needed)
                new_child = self.narrow(child, wanted)
                unrequired = tuple(i for i, a in enumerate(new_child.output)
                                   if a.expr_id not in needed)
                if new_child is child and unrequired == node.unrequired_child_index:
                    return node
                return node.copy(child=new_child, unrequired_child_index=unrequired)

            case Expand(projections=projs, output=out, child=child):
                keep = expand_positions(node, needed)
                new_projs = tuple(tuple(p[i] for i in keep) for p in projs)
                (wanted,) = child_needs(node, needed)
                new_child = self.narrow(child, wanted)
                if len(keep) == len(out) and new_child is child:
                    return node
                return node.copy(projections=new_projs, output=tuple(out[i] for i in keep),
                                 child=new_child)

            case Filter(condition=cond, child=child) if (
                    self.before_subquery_rewrite and _has_predicate_subquery(cond)):
                # Spark turns EXISTS and IN subqueries into joins after sparkext has run; a
                # Project above this filter would then no longer reach the scan below it.
                (wanted,) = child_needs(node, needed)
                new_child = self.narrow(child, wanted)
                return node if new_child is child else node.copy(child=new_child)

            case Filter(child=child):
                # No Project here: the filters directly on a relation are what the file
                # scan planner folds into the scan, with the Project above them, if any.
                (wanted,) = child_needs(node, needed)
                new_child = self.prune(child, wanted)
                return node if new_child is child else node.copy(child=new_child)

            case _ if node.keeps_child_columns:
                child = node.children[0]
                (wanted,) = child_needs(node, needed)
                new_child = self.narrow_scan(child, wanted)
                return node if new_child is child else node.with_new_children([new_child])

            case Relation():
                return node

            case Distinct() | Deduplicate() | Opaque():
                new_kids = tuple(self.prune(k, k.output_ids) for k in node.children)
                return node.with_new_children(new_kids)

            case _:
                return node.with_new_children([self.prune(k, k.output_ids) for k in node.children])


    def narrow_scan(self, node: LogicalPlan, needed: frozenset[ExprId]) -> LogicalPlan:
        """``node`` pruned to ``needed``; a relation, bare or under filters only, that still
        produces more gets a Project with just ``needed`` on top.

        Spark's file scan planner (``FileSourceStrategy``, through ``ScanOperation``) and the
        cache's (``InMemoryScans``) narrow a scan only to what a Project/Filter chain
        directly on the relation reads: under a Sort, limit, Sample or repartitioning the
        relation would be read whole. Every other input prunes itself (a Project to its
        kept entries; Aggregate, Window, Join, Generate, Expand narrow their own inputs).
        The Project lists columns only: nothing is computed, moved or repeated, and the
        node above receives the same rows with fewer columns.
        """
        pruned = self.prune(node, needed)
        if _is_scan(pruned):
            return self.narrow(pruned, needed)
        return pruned

    def keep_positions(self, kid: LogicalPlan, positions: list[int]) -> LogicalPlan:
        """A union child with exactly the given output positions (a union matches by position)."""
        out = kid.output
        ids = [a.expr_id for a in out]
        if len(set(ids)) == len(ids):
            return self.narrow(kid, frozenset(ids[i] for i in positions))
        # The same column at two positions: only an explicit projection keeps positions apart.
        return self.prune(Project(tuple(out[i] for i in positions), kid),
                      frozenset(ids[i] for i in positions))


def _is_scan(node: LogicalPlan) -> bool:
    """A relation, bare or under filters only: what the scan planner folds into one scan."""
    while isinstance(node, Filter):
        node = node.child
    return isinstance(node, Relation)


def _has_predicate_subquery(e: Expression) -> bool:
    return any(cls in names.PREDICATE_SUBQUERIES for cls, _, _ in opaque_inside(e))


def _narrow_exists_subqueries(plan: LogicalPlan) -> LogicalPlan:
    """An EXISTS subquery only needs the columns its correlation reads; narrowing its plan
    lets the scan under it read only those once Spark rewrites it into a semi join."""
    def narrow(e: Expression) -> Expression:
        if _is_exists(e) and e.keep is None and e.subquery_output is not None:
            out = frozenset(a.expr_id for a in e.subquery_output)
            used = references_of(e.children_) & out
            if used != out:
                return e.copy(keep=used)
        return e

    def holds_exists(e: Expression) -> bool:
        return any(cls == names.EXISTS for cls, _, _ in opaque_inside(e))

    def in_node(n: LogicalPlan) -> LogicalPlan:
        return n.transform_expressions_up(narrow) if any(map(holds_exists, n.expressions)) else n
    return plan.transform_up(in_node)


def _is_exists(e: Expression) -> TypeGuard[OpaqueExpression]:
    return isinstance(e, OpaqueExpression) and e.cls == names.EXISTS
