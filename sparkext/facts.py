"""What a rule may know about the data under a relation: table identity, format,
location, partitioning, bucketing, properties, Catalyst's statistics, and, for the rules
that ask, the files the scan will read with their exact statistics.

Facts travel with the plan only for the rules that declare them
(``Rule(..., needs=("relation",))`` or ``needs=("files",)``): the JVM adds them to the
relations of the plans those rules' patterns match, in the same one round trip, and a
plan of rules that ask for nothing is encoded as it always was. On a relation,
:attr:`Relation.facts <sparkext.plan.Relation.facts>` is then a :class:`RelationFacts`,
decoded when first read; each field is ``None`` where Spark does not know it.

Files (``needs=("files",)``, or ``("listing",)`` without their statistics) are the files
the scan will read after partition pruning:
the partition-column conjuncts of the filters standing directly above the relation
applied as ``PruneFileSourcePartitions`` (or Delta's and Iceberg's own planning) would
apply them. Each :class:`DataFile` carries its size, partition values and, where the
format keeps them (parquet footers, Delta's log, Iceberg's manifests), its row count and
per-column statistics, per file and, for parquet, per row group. A statistic is given
only where it is exact and means what Spark's comparison means (:class:`ColumnStats`);
what is left out, and why, is said where the JVM reads it (``jvm-shim/.../RelationFacts.scala``
for the relation, ``ParquetFooters.scala`` for parquet, ``LakeFiles.scala`` for Delta and
Iceberg) and in docs/writing-rules.md, "What a rule knows about the data".

>>> Format.of("parquet") is Format.PARQUET, Format.PARQUET.is_file_based
(True, True)
>>> Format.of({"other": "com.example.MySource"})
OtherFormat(cls='com.example.MySource')
>>> str(TableId("spark_catalog", ("sales",), "orders"))
'spark_catalog.sales.orders'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Any

from sparkext.expressions import AttributeReference, ExprId

__all__ = ["ColumnStats", "DataFile", "Format", "OtherFormat", "PushedFilter", "RelationFacts",
           "RowGroup", "TableId", "Bucketing", "NEEDS"]

#: What a rule may declare it needs (``Rule.needs``): ``relation`` — the facts of every
#: relation but its files; ``listing`` — those and the files the scans read (path, size,
#: modification time, partition values), nothing the files themselves must be opened for;
#: ``files`` — those with their row counts and statistics (parquet footers read).
NEEDS = ("relation", "listing", "files")


def checked_needs(owner: str, needs: tuple[str, ...]) -> tuple[str, ...]:
    """``needs`` as ``owner`` (``rule 'x'``, ``guard 'y'``) declares it, refused when it
    names something else than :data:`NEEDS`, with what it implies: files are facts of a
    relation, and are listed."""
    unknown = [n for n in needs if n not in NEEDS]
    if unknown:
        raise ValueError(f"{owner}: needs must name some of {NEEDS}, not {unknown}")
    implied = {"files": ("listing", "relation"), "listing": ("relation",)}
    out = list(needs)
    for n in needs:
        out += [i for i in implied.get(n, ()) if i not in out]
    return tuple(out)


class Format(Enum):
    """What a relation reads. ``OtherFormat`` carries the class name of anything else."""

    PARQUET = "parquet"
    ORC = "orc"
    CSV = "csv"
    JSON = "json"
    TEXT = "text"
    AVRO = "avro"
    XML = "xml"
    BINARY_FILE = "binaryFile"
    DELTA = "delta"
    ICEBERG = "iceberg"
    HIVE = "hive"          # a Hive SerDe table Spark did not convert to a file source
    JDBC = "jdbc"
    RANGE = "range"        # spark.range
    LOCAL = "local"        # a LocalRelation: rows held in the plan
    CACHED = "cached"      # an InMemoryRelation: df.cache(), CACHE TABLE
    RDD = "rdd"            # a LogicalRDD: createDataFrame from an RDD, a checkpoint
    ONE_ROW = "one_row"    # SELECT without FROM

    @property
    def is_file_based(self) -> bool:
        """Whether the relation reads files a rule can list (``needs=("files",)``)."""
        return self in _FILE_BASED

    @staticmethod
    def of(wire: str | dict) -> Format | OtherFormat:
        """A format from its wire form: a member's value, or ``{"other": class name}``."""
        if isinstance(wire, dict):
            return OtherFormat(wire["other"])
        return Format(wire)


_FILE_BASED = frozenset({Format.PARQUET, Format.ORC, Format.CSV, Format.JSON, Format.TEXT,
                         Format.AVRO, Format.XML, Format.BINARY_FILE, Format.DELTA,
                         Format.ICEBERG, Format.HIVE})


@dataclass(frozen=True, slots=True)
class OtherFormat:
    """A relation of a kind sparkext does not name: Spark's class name for it."""

    cls: str

    @property
    def is_file_based(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class TableId:
    """A catalog table's identifier: ``spark_catalog.default.t``, ``ice.db.events``."""

    catalog: str | None
    namespace: tuple[str, ...]
    name: str

    def __str__(self) -> str:
        return ".".join((*([self.catalog] if self.catalog else []), *self.namespace, self.name))


@dataclass(frozen=True, slots=True)
class Bucketing:
    """``CLUSTERED BY (columns) [SORTED BY (sort_columns)] INTO num_buckets BUCKETS``."""

    columns: tuple[AttributeReference, ...]
    num_buckets: int
    sort_columns: tuple[AttributeReference, ...] = ()


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """One column's statistics in one file or row group, each exact or None.

    ``min`` and ``max`` are the least and greatest non-NULL values, in Spark's order
    (strings by their UTF-8 bytes, as ``UTF8_BINARY`` compares them; ``-0.0`` equal to
    ``0.0``, so a zero bound of a float column may be either); None when there is no
    non-NULL value or the value is not known exactly. ``null_count`` counts the NULLs
    (None: unknown)."""

    min: Any = None
    max: Any = None
    null_count: int | None = None

    @property
    def has_bounds(self) -> bool:
        return self.min is not None and self.max is not None


@dataclass(frozen=True, slots=True)
class RowGroup:
    """A parquet row group: its rows and the exact statistics of its columns."""

    row_count: int
    columns: Mapping[ExprId, ColumnStats]

    def stats(self, column: AttributeReference) -> ColumnStats | None:
        return self.columns.get(column.expr_id)


@dataclass(frozen=True, slots=True)
class DataFile:
    """One file the scan will read.

    ``partition_values`` maps each partition column's id to its value in this file (None:
    NULL); ``row_count`` and ``columns`` (column id -> :class:`ColumnStats`) are what the
    format knows exactly, None or absent otherwise; ``row_groups`` for parquet (None for
    other formats). ``partition`` is the same for the files of one partition and differs
    between partitions (Iceberg's hidden partitions included: ``0/ts_day=2024-05-01``; a
    tuple of the partition values elsewhere); None when the relation is not partitioned."""

    path: str
    size: int
    modification_time: int
    partition_values: Mapping[ExprId, Any]
    row_count: int | None
    columns: Mapping[ExprId, ColumnStats]
    row_groups: tuple[RowGroup, ...] | None = None
    partition: str | tuple | None = None

    def stats(self, column: AttributeReference) -> ColumnStats | None:
        """The column's statistics in this file (None: not known exactly)."""
        return self.columns.get(column.expr_id)

    def partition_value(self, column: AttributeReference) -> Any:
        return self.partition_values[column.expr_id]


@dataclass(frozen=True, slots=True)
class PushedFilter:
    """A filter a DSv2 scan took in (Spark's ``V2ScanRelationPushDown`` hands a source the
    filters above its relation; the source evaluates those it takes, and Spark drops from
    the plan the ones the source says it applies in full): ``text`` as the source prints it,
    and whether it restricts the partitions the scan reads (``prunes_partitions``: for
    Iceberg, its projection on the table's partition spec is not "always true"; for a file
    source, a filter on partition columns; never ``IS NOT NULL`` nor dynamic partition
    pruning's, which Spark adds by itself)."""

    text: str
    prunes_partitions: bool


@dataclass(frozen=True, slots=True)
class RelationFacts:
    """What Spark's own objects say about one relation (None: Spark does not know).

    ``files`` is None when the rules asked only for ``relation`` facts, when the format
    lists no files, or when listing them failed or took too long (``files_unknown`` says
    which); otherwise every file the scan reads, after partition pruning.

    ``partitioning`` is how the table is partitioned, each part as its source says it
    (``day``; ``days(ts)``, ``bucket(16, id)`` for Iceberg), empty when it is not;
    ``partition_columns`` are the columns among the relation's output whose values are
    partition values (identity partitions).

    ``pushed_filters`` is set for a DSv2 scan Spark built (a ``DataSourceV2ScanRelation``,
    which guards see: the optimized plan, after ``V2ScanRelationPushDown``): the filters
    its source took, which the plan's Filters above it may no longer show. None for other
    relations, whose filters stay in the plan; None with ``pushed_unknown`` saying why for
    a scan whose source does not say which filters it took."""

    format: Format | OtherFormat
    table: TableId | None = None
    location: tuple[str, ...] = ()
    partition_columns: tuple[AttributeReference, ...] = ()
    bucketing: Bucketing | None = None
    properties: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    size_in_bytes: int | None = None
    row_count: int | None = None
    files: tuple[DataFile, ...] | None = None
    files_unknown: str | None = None
    partitioning: tuple[str, ...] = ()
    pushed_filters: tuple[PushedFilter, ...] | None = None
    pushed_unknown: str | None = None
