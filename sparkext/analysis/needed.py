"""Which columns a node needs of each child, given what is needed of its own output: the
needed-column walk that ``prune_columns`` prunes by and ``windows_pruned``
(:mod:`sparkext.analysis.ordering`) counts by (pyfloe's "needed set", Catalyst's
``ColumnPruning``).

A node needs of its child what passes through to a needed column of its own output and
what it reads itself; a node that computes named entries (Project, Aggregate, Window)
reads only for the entries that are needed (:func:`needed_entries`), a Union asks each
child for the needed positions. The two callers differ below the other nodes, each on the
safe side of its own question:

- pruning (the default) narrows an input only below the nodes it knows (Join, Generate,
  Expand, Filter, the ``keeps_child_columns`` nodes) and asks for a child's whole output
  below any other (Distinct, Deduplicate, Opaque: what they compute depends on every
  column), since keeping a column is never wrong;
- ``through_any_node=True`` asks, below every other node, for what it reads plus what is
  needed of it, as Catalyst's ``ColumnPruning`` narrows below any node under a Project: a
  Window it would remove must be counted, so this must not need more than Catalyst does.

    >>> from sparkext import types as T
    >>> from sparkext.expressions import Alias, AttributeReference
    >>> from sparkext.plan import Project, Relation
    >>> a, b = (AttributeReference(n, T.LONG, True, None, i) for i, n in enumerate("ab", 1))
    >>> project = Project((a, Alias(b, "c", 3)), Relation("LocalRelation", (a, b), 1, "t"))
    >>> child_needs(project, frozenset({1}))       # only a is needed: b is not read
    (frozenset({1}),)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sparkext.expressions import Expression, ExprId, to_attribute
from sparkext.plan import (
    Aggregate,
    Expand,
    Filter,
    Generate,
    Join,
    LogicalPlan,
    Project,
    Union,
    Window,
)

__all__ = ["child_needs", "expand_positions", "needed_entries", "references_of",
           "union_positions"]


def references_of(exprs: Iterable[Expression]) -> frozenset:
    """The ids the expressions read, together."""
    return frozenset().union(*(e.references for e in exprs))


def needed_entries(exprs: Sequence[Expression], needed: frozenset) -> tuple:
    """The entries of a Project's, an Aggregate's or a Window's list whose attribute is
    needed, in their order."""
    return tuple(e for e in exprs if to_attribute(e).expr_id in needed)


def union_positions(node: Union, needed: frozenset) -> list[int]:
    """The positions of a Union's output that are needed (its children match by position)."""
    return [i for i, a in enumerate(node.output) if a.expr_id in needed]


def expand_positions(node: Expand, needed: frozenset) -> list[int]:
    """The positions of an Expand's output that are needed, or the first alone when none
    is (an Expand outputs one column at least)."""
    return [i for i, a in enumerate(node.output) if a.expr_id in needed] or [0]


def child_needs(node: LogicalPlan, needed: frozenset, *,
                through_any_node: bool = False) -> tuple[frozenset[ExprId], ...]:
    """For each child of ``node``, the ids of its output that ``node`` needs when ``needed``
    is what is needed of ``node``'s output: ``node`` as it stays, computing only its needed
    entries (a Window with none still reads its keys; pruning removes it instead). See the
    module's docstring for ``through_any_node``."""
    match node:
        case Project(project_list=exprs):
            return (references_of(needed_entries(exprs, needed)),)
        case Aggregate(grouping_expressions=groups, aggregate_expressions=aggs):
            return (references_of(groups) | references_of(needed_entries(aggs, needed)),)
        case Window(window_expressions=wexprs, partition_spec=parts, order_spec=order,
                    child=child):
            return ((needed & child.output_ids) | references_of(needed_entries(wexprs, needed))
                    | references_of(parts) | references_of(order),)
        case Union(children=kids):
            positions = union_positions(node, needed)
            return tuple(frozenset(k.output[i].expr_id for i in positions if i < len(k.output))
                         for k in kids)
        case _ if through_any_node:
            return tuple((needed & c.output_ids) | node.references for c in node.children)
        case Join(left=left, right=right, condition=cond):
            wanted = needed | (cond.references if cond is not None else frozenset())
            return (wanted & left.output_ids, wanted & right.output_ids)
        case Generate(generator=gen, child=child):
            return ((needed & child.output_ids) | gen.references,)
        case Expand(projections=projs):
            keep = expand_positions(node, needed)
            return (references_of(p[i] for p in projs for i in keep),)
        case Filter(child=child):
            return ((needed | node.references) & child.output_ids,)
        case _ if node.keeps_child_columns:
            return ((needed | node.references) & node.children[0].output_ids,)
        case _:
            return tuple(c.output_ids for c in node.children)
