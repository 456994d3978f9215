"""Constraints: the predicates known to hold on every row a plan node produces.

This is Catalyst's ``QueryPlanConstraints``, kept apart from the rules that use it
(``infer_filters`` adds what is implied but not yet there; ``push_down_filters`` does not
push a predicate the target side already guarantees).

Derivation per node (only deterministic predicates over the node's own output are kept):

| node | constraints |
| --- | --- |
| Relation | ``IsNotNull`` of its non-nullable columns |
| Filter | the child's, plus the filter's conjuncts (not those with correlated subqueries) |
| Project, Aggregate | the child's, re-expressed through aliases (``x AS a`` adds ``a <=> x`` and every constraint on ``x`` as one on ``a``); an aggregate's only through its grouping outputs |
| Join | inner: both sides' and the condition's conjuncts; left semi: left's and the condition's; left outer/single, anti, existence: left's; right outer: right's; full outer: none |
| Union | those every child has (columns matched by position) |
| Window, Generate, Sort, limits, Sample, repartitioning, SubqueryAlias, Distinct, Deduplicate | the child's (restricted to the output) |
| Expand, Opaque | none |

Each set is closed under two inferences, as in Catalyst: ``IsNotNull(a)`` for every column a
null-intolerant constraint reads (``a > 5`` is never true for a NULL ``a``), and for every
``a = b`` between columns, each constraint on ``a`` restated on ``b`` and back
(``a = b AND a = 5`` gives ``b = 5``).
"""

from __future__ import annotations

from sparkext.expressions import (
    Alias,
    AttributeReference,
    EqualNullSafe,
    EqualTo,
    Expression,
    IsNotNull,
    Literal,
)
from sparkext.plan import (
    Aggregate,
    Deduplicate,
    Distinct,
    ExistenceJoin,
    Filter,
    Generate,
    GlobalLimit,
    Join,
    LocalLimit,
    LogicalPlan,
    Project,
    RebalancePartitions,
    Repartition,
    RepartitionByExpression,
    Sample,
    Sort,
    SubqueryAlias,
    Union,
    Window,
)
from sparkext.predicates import (
    contains_aggregate,
    contains_correlated_subquery,
    replace_attributes,
    split_conjuncts,
)

_PASS_THROUGH = (Window, Generate, Sort, GlobalLimit, LocalLimit, Sample, Repartition,
                 RepartitionByExpression, RebalancePartitions, SubqueryAlias, Distinct,
                 Deduplicate)


class Constraints:
    """A set of predicates, compared by meaning (``semantic_key``), keeping insertion order."""

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


def constraints(plan: LogicalPlan) -> Constraints:
    """The constraints of ``plan``'s output (cached on the node)."""
    return plan._cached("constraints", lambda: _close(_valid(plan), plan.output))


def is_not_null_inferences(exprs, output=None) -> list[Expression]:
    """``IsNotNull`` for the columns the null-intolerant predicates in ``exprs`` read, and
    for the non-nullable columns of ``output``."""
    out = []
    for e in exprs:
        if isinstance(e, IsNotNull):
            continue
        out.extend(IsNotNull(a) for a in _null_intolerant_attributes(e))
    if output is not None:
        out.extend(IsNotNull(a) for a in output if not a.nullable)
    return out


def equality_inferences(exprs) -> list[Expression]:
    """For every ``a = b`` between columns, the other predicates restated with ``a`` and
    ``b`` swapped (Catalyst's ``inferAdditionalConstraints``)."""
    preds = [e for e in exprs if not isinstance(e, IsNotNull)]
    out: list[Expression] = []
    for eq in preds:
        if isinstance(eq, EqualTo) and isinstance(eq.left, AttributeReference) \
                and isinstance(eq.right, AttributeReference):
            left, right = eq.left, eq.right
            others = [p for p in preds if p is not eq and not _same_pair(p, left, right)]
            out.extend(_restate(others, left, right))
            out.extend(_restate(others, right, left))
    return out


def _same_pair(p, a, b) -> bool:
    return isinstance(p, EqualNullSafe) and {p.left.semantic_key(), p.right.semantic_key()} == \
        {a.semantic_key(), b.semantic_key()}


def _restate(preds, source: AttributeReference, target: AttributeReference):
    for p in preds:
        if source.expr_id in p.references:
            yield replace_attributes(p, {source.expr_id: target})


def _null_intolerant_attributes(e: Expression) -> list[AttributeReference]:
    if isinstance(e, AttributeReference):
        return [e]
    if e.null_intolerant:
        return [a for c in e.children for a in _null_intolerant_attributes(c)]
    return []


def _close(valid: list[Expression], output) -> Constraints:
    ids = frozenset(a.expr_id for a in output)
    base = Constraints(valid)
    inferred = equality_inferences(list(base))
    allc = base.union(inferred)
    allc = allc.union(is_not_null_inferences(list(allc), output))
    return Constraints(c for c in allc
                       if c.references and c.references <= ids and c.deterministic)


def _valid(plan: LogicalPlan) -> list[Expression]:
    match plan:
        case Filter(condition=cond, child=child):
            return [*constraints(child),
                    *(c for c in split_conjuncts(cond) if not contains_correlated_subquery(c))]
        case Project(project_list=exprs, child=child):
            return _aliased(constraints(child), exprs)
        case Aggregate(aggregate_expressions=exprs, child=child):
            grouping_outputs = [e for e in exprs if not contains_aggregate(e)]
            return _aliased(constraints(child), grouping_outputs)
        case Join(left=left, right=right, join_type=jt, condition=cond):
            on = [c for c in split_conjuncts(cond) if not contains_correlated_subquery(c)]
            if jt in ("Inner", "Cross"):
                return [*constraints(left), *constraints(right), *on]
            if jt == "LeftSemi":
                return [*constraints(left), *on]
            if jt in ("LeftOuter", "LeftSingle", "LeftAnti") or isinstance(jt, ExistenceJoin):
                return list(constraints(left))
            if jt == "RightOuter":
                return list(constraints(right))
            return []
        case Union(children=children):
            return _common(plan.output, children)
        case _ if isinstance(plan, _PASS_THROUGH):
            return list(constraints(plan.children[0]))
        case _:
            return []


def _aliased(child: Constraints, named) -> list[Expression]:
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
    return e.exists(lambda x: isinstance(x, Expression) and x.semantic_key() == key)


def _replace_expr(e: Expression, key, attr) -> Expression:
    return e.transform_down(lambda x: attr if x.semantic_key() == key else x)


def _common(output, children) -> list[Expression]:
    common = None
    for child in children:
        mapping = {a.expr_id: first for a, first in zip(child.output, output)}
        mapped = Constraints(replace_attributes(c, mapping) for c in constraints(child))
        common = mapped if common is None else Constraints(c for c in common if c in mapped)
    return list(common or ())
