"""bound_top_k: bound a top-K's first sort key from file statistics, so that the scan skips
what cannot reach the top.

    GlobalLimit 100                              GlobalLimit 100
    +- LocalLimit 100                            +- LocalLimit 100
       +- Sort [ts DESC NULLS LAST], true   ==>     +- Sort [ts DESC NULLS LAST], true
          +- Relation events [ts, ...]                 +- Filter (ts >= T)
                                                          +- Relation events [ts, ...]

Legal because of what the statistics prove (``needs=("files",)``, exact statistics only,
:mod:`sparkext.facts`): with the row groups (or files) whose minimum of ``ts`` is at least
``T`` holding at least ``k`` non-NULL rows between them, at least ``k`` rows rank at or
before any row with ``ts >= T``, so every row of the top ``k`` (``k`` counts an offset's
rows too) has ``ts >= T``: the filter keeps every row the limit can return, ties at ``T``
included, and changes no row of the result. Spark's parquet reader then skips every row
group whose maximum is below ``T`` (the filter is one of the scan's data filters), and a
``T`` on a partition column prunes whole partitions. The other directions and NULL
placements follow the same argument:

| order | counted toward ``k`` | filter |
| --- | --- | --- |
| ``x DESC NULLS LAST`` | non-NULL rows of units whose min ``>= T`` | ``x >= T`` |
| ``x DESC NULLS FIRST`` | every NULL first, then as above | ``x IS NULL OR x >= T`` |
| ``x ASC NULLS FIRST`` | every NULL first, then non-NULL rows of units whose max ``<= T`` | ``x IS NULL OR x <= T`` |
| ``x ASC NULLS LAST`` | non-NULL rows of units whose max ``<= T`` | ``x <= T`` |

When the NULLs alone fill the top, the filter is ``x IS NULL``. Only the first key is
bounded: it dominates the order, so the argument holds whatever keys follow.

Fires only where it is sure, and does nothing otherwise:

- a ``Limit`` (an offset's limit counted in) directly over a global ``Sort``, through
  deterministic Projects; the first key is a column of a file relation, passed up
  unchanged or renamed;
- between the Sort and the relation, only deterministic Projects and Filters whose every
  conjunct reads partition columns alone (those prune the files the facts list; any other
  filter would make the counts wrong);
- every unit (a parquet row group, or a file) has an exact row count, NULL count and bounds
  of the column (``ColumnStats``; a unit of NULLs only needs no bounds); NaN, INT96, a
  collation or a file missing statistics leaves a unit without them, and the rule does
  nothing;
- the filter must skip something: some unit lies wholly beyond ``T``. Otherwise (data in
  random order) the plan stays as it was.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sparkext.analysis.ordering import top_k_rows
from sparkext.expressions import (
    AttributeReference,
    Expression,
    GreaterThanOrEqual,
    IsNull,
    LessThanOrEqual,
    Literal,
    NullOrdering,
    Or,
    SortDirection,
)
from sparkext.facts import ColumnStats, DataFile, Format
from sparkext.optimizer import because
from sparkext.plan import Filter, LogicalPlan, Relation, Sort
from sparkext.predicates import split_conjuncts
from sparkext.rules._file_scans import scan_under

__all__ = ["bound_top_k"]


def bound_top_k(plan: LogicalPlan) -> LogicalPlan:
    """Adds the statistics' bound under every top-K it can prove one for; returns
    ``plan`` itself when there is none."""
    return plan.transform_down(_bound)


def _bound(node: LogicalPlan) -> LogicalPlan:
    found = top_k_rows(node)
    if found is None:
        return node
    rows, sort = found
    new_sort = _bounded(sort, rows)
    if new_sort is None:
        return node
    return node.transform_down(lambda n: new_sort if n is sort else n)


@dataclass(frozen=True)
class _Unit:
    """A row group, or a file: its rows, NULLs and bounds of the sort column."""

    rows: int
    nulls: int
    low: Any
    high: Any

    @property
    def values(self) -> int:
        return self.rows - self.nulls


def _bounded(sort: Sort, rows: int) -> Sort | None:
    key = sort.order[0]
    if not isinstance(key.child, AttributeReference):
        return None
    found = scan_under(sort.child, [key.child])
    if found is None:
        return None
    relation, columns = found
    column = columns[key.child.expr_id]
    per_file = _units(relation, column)
    if per_file is None:
        return None
    units = [u for _, us in per_file for u in us]
    descending = key.direction is SortDirection.DESC
    nulls_first = key.null_ordering is NullOrdering.FIRST
    nulls = sum(u.nulls for u in units) if nulls_first else 0
    needed = rows - nulls
    if needed <= 0:
        condition: Expression = IsNull(column)
        reason = f"the NULLs of {column.name} alone fill the top {rows}"

        def passes(u: _Unit) -> bool:
            return u.nulls > 0
    else:
        bound = _threshold(units, needed, descending)
        if bound is None:
            return None
        threshold, used = bound

        def passes(u: _Unit) -> bool:
            """Whether the unit may hold a row the filter keeps."""
            beyond = u.values > 0 and (u.high >= threshold if descending else u.low <= threshold)
            return beyond or (nulls_first and u.nulls > 0)
        if all(passes(u) for u in units):
            return None  # nothing would be skipped (data in random order)
        t = Literal(threshold, column.data_type)
        condition = GreaterThanOrEqual(column, t) if descending else LessThanOrEqual(column, t)
        if nulls_first:
            condition = Or(IsNull(column), condition)
        reason = (f"{column.name} {'>=' if descending else '<='} "
                  f"{shown(threshold, column.data_type)} from {used} of {len(units)} "
                  f"{'files' if _is_partition(relation, column) else 'row groups'}")
    if any(c.semantic_equals(condition) for c in _conjuncts_above(sort.child, relation)):
        return None  # bounded already (a bound on a partition column reads as a partition filter)
    # The files holding no unit the filter keeps are not read at all (the filter would skip
    # every row group of theirs, but Spark would still schedule and open each): where the
    # bound is on a partition column, pruning drops them already.
    scan: LogicalPlan = relation
    kept = [f for f, us in per_file if any(passes(u) for u in us)]
    if relation.facts.format is Format.PARQUET and not _is_partition(relation, column) \
            and kept and len(kept) < len(per_file):
        scan = relation.reading_only(kept)
        reason += f", {len(kept)} of {len(per_file)} files read"
    because(reason)
    return sort.copy(child=_under(sort.child, relation, Filter(condition, scan)))


def _threshold(units: list[_Unit], needed: int, descending: bool
               ) -> tuple[Any, int] | None:
    """The least ``T`` (greatest, ascending) such that the units wholly at or beyond it
    hold ``needed`` values, and how many units that takes."""
    with_values = [u for u in units if u.values]
    ranked = sorted(with_values, key=lambda u: u.low if descending else u.high,
                    reverse=descending)
    total = 0
    for i, u in enumerate(ranked, 1):
        total += u.values
        if total >= needed:
            return (u.low if descending else u.high), i
    return None


def _conjuncts_above(node: LogicalPlan, relation: Relation) -> list[Expression]:
    """The conjuncts of the Filters between ``node`` and ``relation``."""
    return [c for n in node.walk() if isinstance(n, Filter) and relation in n.walk()
            for c in split_conjuncts(n.condition)]


def _units(relation: Relation, column: AttributeReference
           ) -> list[tuple[DataFile, list[_Unit]]] | None:
    """Every file the scan reads with its row groups (or itself, as one unit), each with
    exact statistics of ``column``; None when one lacks them."""
    files = relation.facts.files
    assert files is not None
    partition = _is_partition(relation, column)
    out = []
    for f in files:
        if partition:
            if f.row_count is None:
                return None
            v = f.partition_value(column)
            out.append((f, [_Unit(f.row_count, f.row_count if v is None else 0, v, v)]))
            continue
        parts: Iterable[tuple[int | None, ColumnStats | None]]
        if f.row_groups is not None:
            parts = ((g.row_count, g.stats(column)) for g in f.row_groups)
        else:
            parts = ((f.row_count, f.stats(column)),)
        units = [_unit(rows, s) for rows, s in parts]
        if any(u is None for u in units):
            return None
        out.append((f, [u for u in units if u is not None]))
    return out


def _unit(rows: int | None, s: ColumnStats | None) -> _Unit | None:
    if rows is None or s is None or s.null_count is None:
        return None
    if s.null_count == rows:
        return _Unit(rows, rows, None, None)
    if not s.has_bounds:
        return None
    return _Unit(rows, s.null_count, s.min, s.max)


def _is_partition(relation: Relation, column: AttributeReference) -> bool:
    return any(a.expr_id == column.expr_id for a in relation.facts.partition_columns)


def shown(value: Any, data_type) -> str:
    """A statistic as a reader wants it: dates and timestamps (UTC) in ISO form."""
    if data_type.name == "date":
        return (datetime.date(1970, 1, 1) + datetime.timedelta(days=value)).isoformat()
    if data_type.name in ("timestamp", "timestamp_ntz"):
        return (datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=value)).isoformat(" ")
    return repr(value)


def _under(node: LogicalPlan, relation: Relation, replacement: LogicalPlan) -> LogicalPlan:
    """``node`` with ``relation`` replaced (the chain of Projects and Filters kept)."""
    return node.transform_up(lambda n: replacement if n is relation else n)
