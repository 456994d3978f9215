"""``limit_scans``: the most bytes, files and partitions one query may read, counted over
the files its scans read after partition pruning, its subqueries included (Kyuubi's
``maxFileSize`` and ``maxPartitions``, for the whole query rather than each scan).

A relation read twice counts twice (a self-join reads twice). A cached relation reads
no file (``df.cache()`` and a query over it: what was read was counted when the cache was
built). Counted: file sources (parquet, ORC, CSV, JSON, text, Avro..., read through DSv2
too), Delta, and Iceberg (the files its scan planned, after the filters it took; a
partition of a hidden partitioning such as ``days(ts)`` counts as one); not: data from other
sources (JDBC, other DSv2 sources), local rows, ranges, cached data. A file-based relation whose files
cannot be listed in time (``spark.sparkext.factsTimeoutMs``), or at all (a Hive SerDe table
Spark does not read as a file source), is refused: the guard cannot tell what it reads.
"""

from __future__ import annotations

from sparkext.guards.guard import REFUSE, Guard, Query, describe, refuse


def limit_scans(max_bytes: int | None = None, max_files: int | None = None,
                max_partitions: int | None = None, mode: str = REFUSE) -> Guard:
    """The guard (named ``limit_scans``): refuses a query whose scans read more than
    ``max_bytes`` bytes, ``max_files`` files or ``max_partitions`` partitions (None: no
    limit on that)."""
    if max_bytes is None and max_files is None and max_partitions is None:
        raise ValueError("limit_scans needs at least one limit")

    def check(query: Query) -> None:
        files = size = partitions = 0
        unknown = []
        for relation in query.relations():
            facts = relation.facts
            if facts.files is None:
                if facts.format.is_file_based:
                    unknown.append(f"{describe(relation)} ({facts.files_unknown})")
                continue
            files += len(facts.files)
            size += sum(f.size for f in facts.files)
            partitions += len({f.partition for f in facts.files if f.partition is not None})
        if unknown:
            refuse(f"cannot tell how much it reads: the files of {'; '.join(unknown)} are "
                   "not known")
        over = [f"{n:,} {what}, over the limit of {limit:,}"
                for what, n, limit in (("bytes", size, max_bytes), ("files", files, max_files),
                                       ("partitions", partitions, max_partitions))
                if limit is not None and n > limit]
        if over:
            refuse("its scans read " + "; ".join(over))

    return Guard("limit_scans", check, ("listing",), mode)
