"""simplify_sort_keys: drop sort keys that cannot change the order.

    Sort [host ASC, day ASC, host DESC, ts ASC], true          Sort [day ASC, ts ASC], true
    +- Filter (host = 'h1')                            ==>     +- Filter (host = 'h1')

The sort stays (with a cheaper comparator). A key goes when, among the rows that tie on
the keys before it, it has one value:

- it is constant (``host = 'h1'`` above, a literal);
- it is equal to an earlier key (the same expression again, or one known equal: ``a = b``,
  ``x AS y``), whatever its direction;
- it is a deterministic function of earlier keys of exactly comparable types (``order by
  a, b, a + b``). Not for floating point or collated strings: rows that tie on a
  ``double`` may hold ``0.0`` and ``-0.0``;
- an earlier key is a strict function of it (``order by a + 1, a``): a strict function is
  injective, so rows that tie on ``a + 1`` tie on ``a``;
- the earlier keys cover a unique key of the input (:mod:`sparkext.analysis.uniqueness`: ``order
  by k, total`` after ``groupBy(k)``): no two rows tie on them, so no later key is ever
  consulted.

A Sort whose keys are all constant is left to ``eliminate_sorts``. No order from below is
read (the JVM's "ordering" pre-check relies on it for a Sort under a limit).
"""

from __future__ import annotations

from sparkext.analysis.ordering import properties, windows_pruned
from sparkext.optimizer import OrderFact, relies_on
from sparkext.plan import LogicalPlan, Sort

__all__ = ["simplify_sort_keys"]


def simplify_sort_keys(plan: LogicalPlan) -> LogicalPlan:
    """Drops redundant sort keys; returns ``plan`` itself when there are none, or when
    dropping them would leave a Window that nothing needs any more (a dropped key was the
    only reader of its column): Catalyst's later column pruning would remove it, and a
    sort ``eliminate_sorts`` removed on the strength of its order would be wrong."""
    result = plan.transform_up(_simplify, only_into=(Sort,))
    if result is not plan and windows_pruned(result) > windows_pruned(plan):
        return plan
    return result


def _simplify(node: LogicalPlan) -> LogicalPlan:
    match node:
        case Sort(order=order, child=child):
            # What is known of the rows compared at each key: constants so far, and the
            # keys already kept (ordering.EquivalenceProperties.tie).
            ties = properties(child).copy()
            kept: list[int] = []
            for i, o in enumerate(order):
                if ties.one_row_per_tie() or ties.constant(o.child) is not None:
                    continue
                kept.append(i)
                ties.tie(o.child)
            if len(kept) == len(order) or not kept:
                return node
            relies_on(OrderFact(node, tuple(kept)))
            return node.copy(order=tuple(order[i] for i in kept))
        case _:
            return node
