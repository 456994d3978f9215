"""eliminate_sorts: remove sorts whose order is already there, or that nothing can see.

    Sort [host ASC, ts ASC], true                Filter (host = 'h1')
    +- Filter (host = 'h1')              ==>     +- InMemoryRelation events [host, ts]
       +- InMemoryRelation events [host, ts]        (cached sorted by ts, range-partitioned)

A Sort goes when (:mod:`sparkext.ordering` decides the first two):

| case | why it is safe |
| --- | --- |
| every key is constant | all rows tie: any order is the sorted order |
| a global sort whose input is already in that order across partitions | the rows come out in that order without it |
| a local sort whose input is already in that order within each partition | likewise, per partition |
| it sits under a later sort with only order-preserving nodes between (deterministic Project and Filter; any repartitioning for a global outer sort) | the later sort decides the order |
| it sits under a join with a deterministic condition, or under an aggregate whose functions ignore order (min, max, count, integral sum, bit aggregates, HyperLogLog) | neither passes an order on |

A Sort directly under a Limit (through deterministic Projects and Filters) always stays:
the pair is a top-k; without the sort a limit outside the root reads its single
partition's blocks in any order. This covers everything Catalyst's own ``EliminateSorts``
does, so Catalyst's can be switched off with nothing lost.
"""

from __future__ import annotations

from sparkext.expressions import OpaqueExpression
from sparkext.ordering import properties
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
)

__all__ = ["eliminate_sorts"]

_ORDER_INSENSITIVE = {"Min", "Max", "Count", "BitAndAgg", "BitOrAgg", "BitXorAgg",
                      "HyperLogLogPlusPlus"}


def eliminate_sorts(plan: LogicalPlan) -> LogicalPlan:
    """Removes redundant Sort nodes; returns ``plan`` itself when none is redundant."""
    return _down(plan, under_limit=False)


def _down(node: LogicalPlan, under_limit: bool) -> LogicalPlan:
    match node:
        case Sort(order=order, is_global=is_global, child=child):
            props = properties(child)
            if all(props.constant(o.child) is not None for o in order):
                return _down(child, under_limit)
            if not under_limit and props.ordering_satisfy(order, require_global=is_global):
                return _down(child, under_limit)
            new_child = _down(_remove_overridden(child, is_global), False)
            return node if new_child is child else node.copy(child=new_child)
        case GlobalLimit(child=child) | LocalLimit(child=child):
            return _with_child(node, _down(child, True))
        case (Project() | Filter()) if under_limit and node.deterministic:
            return _with_child(node, _down(node.children[0], True))
        case Join(left=left, right=right, condition=cond) if cond is None or cond.deterministic:
            new_left = _down(_remove_overridden(left, True), False)
            new_right = _down(_remove_overridden(right, True), False)
            if new_left is left and new_right is right:
                return node
            return node.copy(left=new_left, right=new_right)
        case Aggregate(aggregate_expressions=aggs, child=child) if _order_insensitive(aggs):
            return _with_child(node, _down(_remove_overridden(child, True), False))
        case _:
            return node.with_new_children([_down(c, False) for c in node.children])


def _with_child(node: LogicalPlan, child: LogicalPlan) -> LogicalPlan:
    return node if child is node.children[0] else node.with_new_children([child])


def _remove_overridden(plan: LogicalPlan, can_remove_global: bool) -> LogicalPlan:
    """``plan`` without the sorts a sort (or join, or aggregate) above it overrides."""
    match plan:
        case Sort(is_global=is_global, child=child) if can_remove_global or not is_global:
            return _remove_overridden(child, can_remove_global)
        case (Project() | Filter()) if plan.deterministic:
            return _with_child(plan, _remove_overridden(plan.children[0], can_remove_global))
        case (RepartitionByExpression() | RebalancePartitions() | Repartition()) if \
                plan.deterministic:
            # A repartition shuffles: no order below it survives anyway.
            return _with_child(plan, _remove_overridden(plan.children[0], True))
        case _:
            return plan


def _order_insensitive(aggs) -> bool:
    found = False
    for e in aggs:
        for x in e.walk():
            if isinstance(x, OpaqueExpression) and x.cls == "AggregateExpression":
                found = True
                fn = x.children_[0]
                name = fn.cls if isinstance(fn, OpaqueExpression) else type(fn).__name__
                if name == "Sum":
                    if not fn.data_type.is_integral:
                        return False
                elif name not in _ORDER_INSENSITIVE:
                    return False
    return found
