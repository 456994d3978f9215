"""Two rules that read what is under a relation (docs/writing-rules.md, "What a rule knows
about the data"); tests/test_relation_facts.py runs both.

``unfiltered_partitioned_scans`` finds the scans of partitioned tables that no
partition-column filter narrows: the first rule a platform team writes (as a guard, it
would refuse them; here it only records them, with ``because``, and changes nothing).

``file_ranges`` reads the least and greatest value of a column in every file a scan reads,
from the files' own statistics (parquet footers, Delta's log, Iceberg's manifests).
"""

from __future__ import annotations

from sparkext import because, rule
from sparkext.plan import Filter, Relation


def partition_filtered(plan) -> set[int]:
    """Handles of the relations under a filter that reads a partition column of theirs."""
    found = set()
    for node in plan.walk():
        if isinstance(node, Filter) and isinstance(node.child, Relation):
            parts = {a.expr_id for a in node.child.facts.partition_columns}
            if node.condition.references & parts:
                found.add(node.child.handle)
    return found


#: (table, its partition columns) of every unfiltered scan seen, for the example's reader
UNFILTERED: list[tuple[str, tuple[str, ...]]] = []


@rule(needs=("relation",))
def unfiltered_partitioned_scans(plan):
    filtered = partition_filtered(plan)
    for r in plan.walk():
        if isinstance(r, Relation) and r.facts.partition_columns and r.handle not in filtered:
            name = str(r.facts.table) if r.facts.table else ", ".join(r.facts.location)
            UNFILTERED.append((name, tuple(a.name for a in r.facts.partition_columns)))
            because(f"{name} is read without a filter on {UNFILTERED[-1][1]}")
    return plan


#: column name -> [(file, min, max)], filled by ``file_ranges``
RANGES: dict[str, list[tuple[str, object, object]]] = {}


@rule(needs=("files",))
def file_ranges(plan):
    for r in plan.walk():
        if isinstance(r, Relation) and r.facts.files is not None:
            for column in r.output:
                RANGES[column.name] = [
                    (f.path, s.min, s.max) for f in r.facts.files
                    if (s := f.stats(column)) is not None and s.has_bounds]
    return plan
