"""``require_partition_filters``: a partitioned table may be read only with a filter on
its partition columns, so that no query reads such a table whole by accident (what
Iceberg and Paimon users call "no full table scan").

What counts, in the optimized plan a guard sees: a conjunct of a Filter standing directly
on the relation (through Projects and other Filters) that reads partition columns only,
other than ``IS NOT NULL`` and dynamic partition pruning's marker. Spark adds those two
itself (``InferFiltersFromConstraints`` for a join on the column, ``PartitionPruning`` for a
join with a filtered table), and neither restricts the partitions read: the first drops
NULL partitions only, the second is decided at run time and dropped when Spark thinks it
not worth it. A comparison with a scalar subquery counts (Spark prunes with its value).

Catalyst's pushdown puts a filter written anywhere above the table there, through views,
CTEs, joins, unions and derived tables; ``PruneFileSourcePartitions`` keeps it above the
pruned relation. So the guard reads what Spark prunes with::

    SELECT * FROM events WHERE day = '2024-05-01'         -- through a view, a join: allowed
    SELECT * FROM (SELECT * FROM events) e WHERE day > x  -- pushed from outside: allowed
    SELECT count(*) FROM events                           -- refused
    SELECT * FROM events WHERE payload LIKE '%x%'         -- refused: no partition column

A DSv2 table (Iceberg's; a file source read through DSv2) is read by a scan Spark built
before the guards see the plan: the filters its source took are in the scan, and Spark
drops from the plan those the source applies in full. There the guard reads the scan's own
filters (``RelationFacts.pushed_filters``) and counts one that restricts the partitions the
scan reads: for Iceberg, a filter whose projection on the table's partition spec is not
"always true", so a filter on ``ts`` counts for a table partitioned by ``days(ts)``. A scan
whose source does not say which filters it took is refused: the guard cannot tell.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sparkext.expressions import Expression, IsNotNull, OpaqueExpression
from sparkext.facts import TableId
from sparkext.guards.guard import REFUSE, Guard, Query, describe, refuse
from sparkext.plan import Filter, LogicalPlan, Project, Relation
from sparkext.predicates import split_conjuncts

#: The markers of dynamic partition pruning in an optimized plan (Catalyst class names).
DYNAMIC_PRUNING = frozenset({"DynamicPruningSubquery", "DynamicPruningExpression"})


def require_partition_filters(tables: Iterable[str] = ("*",), allow: Iterable[str] = (),
                              mode: str = REFUSE) -> Guard:
    """The guard (named ``require_partition_filters``): each partitioned relation among
    ``tables`` (``*``: every one, path reads included; else table names, a name matching a
    table whose qualified name ends with it, case-insensitively) and not in ``allow`` must
    be read with a partition filter."""
    wanted, allowed = tuple(tables), tuple(allow)

    def check(query: Query) -> None:
        for plan in query.plans:
            for relation, conjuncts in _scans(plan, ()):
                facts = relation.facts
                if not facts.partitioning or not _applies(facts.table, wanted, allowed):
                    continue
                parts = ", ".join(facts.partitioning)
                if facts.pushed_unknown is not None:
                    refuse(f"{describe(relation)} is partitioned by {parts} and cannot be "
                           f"checked for a filter on it: {facts.pushed_unknown}")
                if facts.pushed_filters is not None:
                    # a scan Spark built: its filters are in it (the module docstring)
                    restricted = any(f.prunes_partitions for f in facts.pushed_filters)
                else:
                    ids = frozenset(a.expr_id for a in facts.partition_columns)
                    restricted = any(_restricts(c, ids) for c in conjuncts)
                if not restricted:
                    refuse(f"{describe(relation)} is partitioned by {parts} and read without "
                           f"a filter on {'it' if len(facts.partitioning) == 1 else 'them'}")

    return Guard("require_partition_filters", check, ("relation",), mode)


def _scans(plan: LogicalPlan, above: tuple[Expression, ...]
           ) -> Iterator[tuple[Relation, tuple[Expression, ...]]]:
    """Each relation with the conjuncts of the Filters directly on it (through Projects):
    where Spark's scan planning and partition pruning look."""
    stack: list[tuple[LogicalPlan, tuple[Expression, ...]]] = [(plan, above)]
    while stack:
        node, conjuncts = stack.pop()
        match node:
            case Filter(condition=condition, child=child):
                stack.append((child, conjuncts + tuple(split_conjuncts(condition))))
            case Project(child=child):
                # A Project's aliases get new ids: a conjunct above it never names a column
                # of the relation through one, so passing them all on adds nothing false.
                stack.append((child, conjuncts))
            case Relation():
                yield node, conjuncts
            case _:
                stack.extend((c, ()) for c in node.children)


def _restricts(conjunct: Expression, partition_ids: frozenset) -> bool:
    """Whether ``conjunct`` restricts the partitions read: over partition columns only, and
    none of what Spark adds by itself (see the module docstring)."""
    refs = conjunct.references
    if not refs or not refs <= partition_ids or isinstance(conjunct, IsNotNull):
        return False
    return not any(isinstance(e, OpaqueExpression) and e.cls in DYNAMIC_PRUNING
                   for e in conjunct.walk())


def _applies(table: TableId | None, tables: tuple[str, ...], allow: tuple[str, ...]) -> bool:
    return _matches(table, tables) and not _matches(table, allow)


def _matches(table: TableId | None, names: tuple[str, ...]) -> bool:
    """Whether one of ``names`` names ``table`` (``*`` names every relation, a path read
    included; another name only a catalog table whose qualified name ends with it)."""
    if "*" in names:
        return True
    if table is None:
        return False
    parts = [p.lower() for p in (table.catalog or "", *table.namespace, table.name) if p]
    for name in names:
        wanted = [p.strip().lower() for p in name.split(".")]
        if wanted == parts[-len(wanted):]:
            return True
    return False
