"""eliminate_sorts: remove sorts whose order is already there, or that nothing can see.

    Sort [host ASC, ts ASC], true                Filter (host = 'h1')
    +- Filter (host = 'h1')              ==>     +- InMemoryRelation events [host, ts]
       +- InMemoryRelation events [host, ts]        (cached sorted by ts, range-partitioned)

A Sort goes when (:mod:`sparkext.analysis.ordering` decides the first two):

| case | why it is safe |
| --- | --- |
| every key is constant | all rows tie: any order is the sorted order |
| a global sort whose input is already in that order across partitions | the rows come out in that order without it |
| a local sort whose input is already in that order within each partition | likewise, per partition |
| it sits under a later sort with only order-preserving nodes between (deterministic Project and Filter; any repartitioning for a global outer sort) | the later sort decides the order |
| it sits under a join with a deterministic condition, or under an aggregate whose functions ignore order (min, max, count, bit aggregates, HyperLogLog; sum, avg and the moments unless over floating point; none at all, as in a DISTINCT) | neither passes an order on |
| a global sort under a later local sort | becomes a repartition by ranges of its keys: the local sort decides the order, the partitioning stays |

A Sort directly under a Limit (through Projects, deterministic or not, and deterministic
Filters) always stays:
the pair is a top-k; without the sort a limit outside the root reads its single
partition's blocks in any order. This covers everything Catalyst's own ``EliminateSorts``
does, so Catalyst's can be switched off with nothing lost.
"""

from __future__ import annotations

from sparkext import catalyst_names as names
from sparkext.analysis.ordering import properties, windows_pruned
from sparkext.expressions import OpaqueExpression
from sparkext.optimizer import OrderFact, relies_on
from sparkext.plan import (
    Aggregate,
    Filter,
    GlobalLimit,
    Join,
    LocalLimit,
    LogicalPlan,
    Project,
    RebalancePartitions,
    Repartition,
    RepartitionByExpression,
    Sort,
    Window,
)

__all__ = ["eliminate_sorts"]

_FLOATING = ("float", "double")


def eliminate_sorts(plan: LogicalPlan) -> LogicalPlan:
    """Removes redundant Sort nodes; returns ``plan`` itself when none is redundant.

    A Window's order holds only while the Window stays: when removing sorts would leave a
    Window that Catalyst's later column pruning removes (``ordering.windows_pruned``: a
    sort was what needed its column), no sort above a Window is removed, and if even that
    leaves more such Windows than ``plan`` had, nothing is."""
    result = _down(plan, under_limit=False, over_windows=True)
    if result is plan or not windows_pruned(result):
        return result
    result = _down(plan, under_limit=False, over_windows=False)
    return result if windows_pruned(result) <= windows_pruned(plan) else plan


def _down(node: LogicalPlan, under_limit: bool, over_windows: bool) -> LogicalPlan:
    if not node.contains_any((Sort,)):
        return node  # only sorts are removed (or, under a sort, kept as a repartition)

    def down(child: LogicalPlan, under: bool) -> LogicalPlan:
        return _down(child, under, over_windows)

    match node:
        case Sort(order=order, is_global=is_global, child=child):
            if over_windows or not child.contains_any((Window,)):
                props = properties(child)
                if all(props.constant(o.child) is not None for o in order):
                    relies_on(OrderFact(node, ()))
                    return down(child, under_limit)
                # (Under a limit no order from below counts: the JVM's "ordering" pre-check
                # relies on it, Prechecks.scala `loneSort`.)
                if not under_limit and props.ordering_satisfy(order, require_global=is_global):
                    relies_on(OrderFact(node))
                    return down(child, under_limit)
            new_child = down(_remove_overridden(child, is_global), False)
            return node if new_child is child else node.copy(child=new_child)
        case GlobalLimit(child=child) | LocalLimit(child=child):
            return _with_child(node, down(child, True))
        case Project() if under_limit:
            # Spark plans Limit(Project(Sort)) as one top-k whatever the projection
            # computes (rand() included): the sort under it is part of the top-k.
            return _with_child(node, down(node.children[0], True))
        case Filter() if under_limit and node.deterministic:
            return _with_child(node, down(node.children[0], True))
        case Join(left=left, right=right, condition=cond) if cond is None or cond.deterministic:
            new_left = down(_remove_overridden(left, True), False)
            new_right = down(_remove_overridden(right, True), False)
            if new_left is left and new_right is right:
                return node
            return node.copy(left=new_left, right=new_right)
        case Aggregate(aggregate_expressions=aggs, child=child) if _order_insensitive(aggs):
            return _with_child(node, down(_remove_overridden(child, True), False))
        case _:
            return node.with_new_children([down(c, False) for c in node.children])


def _with_child(node: LogicalPlan, child: LogicalPlan) -> LogicalPlan:
    return node if child is node.children[0] else node.with_new_children([child])


def _remove_overridden(plan: LogicalPlan, can_remove_global: bool) -> LogicalPlan:
    """``plan`` without the sorts a sort (or join, or aggregate) above it overrides."""
    match plan:
        case Sort(is_global=is_global, child=child) if can_remove_global or not is_global:
            return _remove_overridden(child, can_remove_global)
        case Sort(order=order, child=child):
            # A global sort under a local one: its order is overridden, its partitioning
            # (ranges of its keys) is not. Keep the partitioning alone, as Catalyst does.
            return RepartitionByExpression(order, _remove_overridden(child, True), None)
        case (Project() | Filter()) if plan.deterministic:
            return _with_child(plan, _remove_overridden(plan.children[0], can_remove_global))
        case (RepartitionByExpression() | RebalancePartitions() | Repartition()) if \
                plan.deterministic:
            # A repartition shuffles: no order below it survives anyway.
            return _with_child(plan, _remove_overridden(plan.children[0], True))
        case _:
            return plan


def _order_insensitive(aggs) -> bool:
    """Whether no aggregate in ``aggs`` can see the order of its input rows (Catalyst's
    ``isOrderIrrelevantAggs``); grouping columns alone (a DISTINCT) see none."""
    def ignores_order(x) -> bool:
        if isinstance(x, OpaqueExpression) and x.cls in names.USER_DEFINED:
            return False  # as Catalyst: a user's function may keep state across rows
        if isinstance(x, OpaqueExpression) and x.cls == names.AGGREGATE_EXPRESSION:
            fn = x.children_[0]
            name = fn.cls if isinstance(fn, OpaqueExpression) else type(fn).__name__
            if name in names.ORDER_INSENSITIVE_AGGREGATES:
                return True
            return name in names.ORDER_INSENSITIVE_UNLESS_FLOATING and not any(
                c.data_type.name in _FLOATING for c in fn.children)
        return all(ignores_order(c) for c in x.children)
    return all(e.deterministic and ignores_order(e) for e in aggs)
