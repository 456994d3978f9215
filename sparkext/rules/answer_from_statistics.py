"""answer_from_statistics: a global ``min``, ``max`` or ``count`` of a file relation,
answered from its files' exact statistics instead of a scan.

    Aggregate [], [max(ts) AS last, count(1) AS n]          LocalRows [last, n]
    +- Relation events [ts, ...]                    ==>       (2026-11-27 23:59:59, 20000000)

Legal because each answer is what the statistics say exactly (``needs=("files",)``,
:mod:`sparkext.facts`): ``count(*)`` is the sum of the files' row counts, ``count(x)`` that
minus their NULL counts, ``min(x)`` the least of the files' minimums (a file of NULLs only
has none; a relation without a value gives NULL), ``max(x)`` likewise. An aggregate with no
grouping gives exactly one row, also over no rows (count 0, min and max NULL), as the one
row built here does. The columns keep their ids, names and types.

Fires only where it is sure:

- an Aggregate without grouping whose every output is ``count(*)``, ``count(1)``,
  ``count(x)``, ``min(x)`` or ``max(x)`` of a column (no DISTINCT count, no FILTER clause),
  aliased;
- over deterministic Projects (columns passed up or renamed) and Filters whose conjuncts
  read partition columns alone, down to a file relation whose facts list its files;
- every file has an exact row count, and, for each column aggregated, an exact NULL count
  and bounds (a file of NULLs only needs none); for a partition column, its value;
- not for floating point: parquet-java widens a zero bound (a file of ``0.0`` says
  ``-0.0``), which Spark's ``min`` would not return.
"""

from __future__ import annotations

from typing import Any

from sparkext import catalyst_names as names
from sparkext.expressions import Alias, AttributeReference, Expression, OpaqueExpression
from sparkext.optimizer import because
from sparkext.plan import Aggregate, LocalRows, LogicalPlan, Relation
from sparkext.rules._file_scans import scan_under

__all__ = ["answer_from_statistics"]

_FLOATING = ("float", "double")


def answer_from_statistics(plan: LogicalPlan) -> LogicalPlan:
    """Replaces each global aggregate it can answer exactly; returns ``plan`` itself when
    there is none."""
    return plan.transform_up(_answer)


def _answer(node: LogicalPlan) -> LogicalPlan:
    match node:
        case Aggregate(grouping_expressions=(), aggregate_expressions=aggs, child=child):
            calls = [_call(e) for e in aggs]
            if not calls or any(c is None for c in calls):
                return node
            columns = {c[1].expr_id: c[1] for c in calls if c is not None and c[1] is not None}
            scan = scan_under(child, list(columns.values()))
            if scan is None:
                return node
            relation, mapping = scan
            values = []
            for (fn, column), out in zip(calls, node.output):  # type: ignore[misc]
                v = _value(relation, fn, None if column is None else mapping[column.expr_id])
                if v is _UNKNOWN:
                    return node
                values.append(v)
            files = relation.facts.files or ()
            because(f"{', '.join(f'{e.name} = {v!r}' for e, v in zip(node.output, values))} "
                    f"from the statistics of {len(files)} files")
            return LocalRows(node.output, (tuple(values),))
        case _:
            return node


_UNKNOWN = object()


def _call(e: Expression) -> tuple[str, AttributeReference | None] | None:
    """``("count" | "min" | "max", column or None)`` of an output entry, or None."""
    if not isinstance(e, Alias) or not isinstance(e.child, OpaqueExpression):
        return None
    agg = e.child
    if agg.cls != names.AGGREGATE_EXPRESSION or len(agg.children_) != 1 or agg.distinct:
        return None  # (a second child is a FILTER clause)
    fn = agg.children_[0]
    if not isinstance(fn, OpaqueExpression) or len(fn.children_) != 1:
        return None
    (arg,) = fn.children_
    if fn.cls == "Count":
        if isinstance(arg, AttributeReference):
            return "count", arg
        if arg.foldable and not arg.nullable:
            return "count", None  # count(*), count(1)
        return None
    if fn.cls in ("Min", "Max") and isinstance(arg, AttributeReference) \
            and arg.data_type.name not in _FLOATING:
        return fn.cls.lower(), arg
    return None


def _value(relation: Relation, fn: str, column: AttributeReference | None) -> Any:
    files = relation.facts.files or ()
    if any(f.row_count is None for f in files):
        return _UNKNOWN
    if column is None:
        return sum(f.row_count or 0 for f in files)
    partition = any(a.expr_id == column.expr_id for a in relation.facts.partition_columns)
    nulls, lows, highs = 0, [], []
    for f in files:
        rows = f.row_count or 0
        if partition:
            v = f.partition_value(column)
            lo = hi = v
            n = rows if v is None else 0
        else:
            s = f.stats(column)
            if s is None or s.null_count is None:
                return _UNKNOWN
            n = s.null_count
            if n < rows and not s.has_bounds:
                return _UNKNOWN
            lo, hi = s.min, s.max
        nulls += n
        if n < rows:
            lows.append(lo)
            highs.append(hi)
    total = sum(f.row_count or 0 for f in files)
    if fn == "count":
        return total - nulls
    if not lows:
        return None
    return min(lows) if fn == "min" else max(highs)
