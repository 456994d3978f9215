"""simplify_sort_keys: drop sort keys that cannot change the order.

    Sort [host ASC, day ASC, host DESC, ts ASC], true          Sort [day ASC, ts ASC], true
    +- Filter (host = 'h1')                            ==>     +- Filter (host = 'h1')

The sort stays (with a cheaper comparator). A key goes when, among the rows that tie on
the keys before it, it has one value:

- it is constant (``host = 'h1'`` above, a literal);
- it is equal to an earlier key (the same expression again, or one known equal: ``a = b``,
  ``x AS y``), whatever its direction;
- it is a deterministic function of earlier keys that are plain columns of exactly
  comparable types (``order by a, b, a + b``). Not for floating point or collated
  strings: rows that tie on a ``double`` may hold ``0.0`` and ``-0.0``.

A Sort whose keys are all constant is left to ``eliminate_sorts``.
"""

from __future__ import annotations

from sparkext.expressions import AttributeReference, ExprId, SortOrder
from sparkext.ordering import exactly_comparable, properties
from sparkext.plan import LogicalPlan, Sort

__all__ = ["simplify_sort_keys"]


def simplify_sort_keys(plan: LogicalPlan) -> LogicalPlan:
    """Drops redundant sort keys; returns ``plan`` itself when there are none."""
    return plan.transform_up(_simplify)


def _simplify(node: LogicalPlan) -> LogicalPlan:
    match node:
        case Sort(order=order, child=child):
            props = properties(child)
            kept: list[SortOrder] = []
            tied: set[ExprId] = set()
            for o in order:
                e = o.child
                redundant = (
                    props.constant(e) is not None
                    or any(props.same_group(e, k.child) for k in kept)
                    or (e.deterministic and e.references and not isinstance(
                        e, AttributeReference) and e.references <= tied))
                if redundant:
                    continue
                kept.append(o)
                for member in props.group(e):
                    if isinstance(member, AttributeReference) and exactly_comparable(member):
                        tied.add(member.expr_id)
            if len(kept) == len(order) or not kept:
                return node
            return node.copy(order=tuple(kept))
        case _:
            return node
