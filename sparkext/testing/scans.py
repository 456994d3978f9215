"""What a query's file scans read: columns and pushed filters, from the physical plan.

    from sparkext.testing.scans import file_scans
    for scan in file_scans(df):
        print(scan.table, scan.columns, scan.data_filters)

Use it to pin, in a test, that a filter still reaches the scan or that a scan still reads
only the columns it needs: the failure modes plan snapshots catch only indirectly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

_IDS = re.compile(r"#\d+L?")


@dataclass(frozen=True)
class FileScan:
    #: the table name, or the file/folder name without extension for path-based reads
    table: str
    #: the columns the scan reads (its read schema), in order
    columns: tuple[str, ...]
    #: filters handed to the data source (``PushedFilters``), as Spark prints them
    pushed_filters: tuple[str, ...]
    #: Catalyst filters evaluated at the scan (``DataFilters``), expression ids removed
    data_filters: tuple[str, ...]


def _seq(jseq) -> list:
    it = jseq.iterator()
    out = []
    while it.hasNext():
        out.append(it.next())
    return out


def _table(scan) -> str:
    ident = scan.tableIdentifier()
    if ident.isDefined():
        return ident.get().table()
    paths = _seq(scan.relation().location().rootPaths())
    if paths:
        return PurePosixPath(paths[0].toString()).name.split(".")[0]
    return "?"


def _pushed(scan) -> tuple[str, ...]:
    # Translating a filter with a subquery needs the subquery's result: before the query
    # ran, only the filters without one can be listed.
    try:
        return tuple(sorted(f.toString() for f in _seq(scan.pushedDownFilters())))
    except Exception:  # noqa: BLE001 - py4j raises the JVM's IllegalArgumentException
        return ()


def _walk(plan, out: list, seen: set) -> None:
    key = plan.hashCode(), plan.toString()
    if key in seen:
        return
    seen.add(key)
    name = plan.getClass().getSimpleName()
    if name == "FileSourceScanExec":
        out.append(FileScan(
            _table(plan),
            tuple(plan.requiredSchema().fieldNames()),
            _pushed(plan),
            tuple(sorted(_IDS.sub("", f.toString()) for f in _seq(plan.dataFilters()))),
        ))
    if name == "AdaptiveSparkPlanExec":
        # After execution, the plan it settled on; before, the plan it started from.
        _walk(plan.executedPlan() if plan.isFinalPlan() else plan.initialPlan(), out, seen)
    if name.endswith("QueryStageExec"):
        _walk(plan.plan(), out, seen)
    for child in _seq(plan.children()):
        _walk(child, out, seen)
    for sub in _seq(plan.subqueries()):
        _walk(sub, out, seen)


def file_scans(df) -> list[FileScan]:
    """Every file scan in ``df``'s physical plan, subqueries included (run the query
    first to see the plan adaptive execution settled on)."""
    out: list[FileScan] = []
    _walk(df._jdf.queryExecution().executedPlan(), out, set())
    return out
