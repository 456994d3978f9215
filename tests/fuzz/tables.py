"""The fuzzer's tables: small, seeded, and shaped so that most generated pipelines
return tens of rows (issue 16 item 13).

Every table has the same columns, so a pipeline can read any of them and a set operation
can pair any two. Keys have small, overlapping domains (``k`` in 0..9 or 0..11, ``g`` in
0..3), so an equi-join of ``fz_a`` and ``fz_b`` returns about 700 rows, and a predicate that
compares with a value drawn from the column's own values keeps a fair share of them.

    k int      join key, 0..9 (0..11 in fz_b): overlapping domains
    g int      group key, 0..3
    x int      -50..50, wide: range predicates, sums
    d double   multiples of 0.25 (sums are exact in any order), a NaN, a -0.0
    s string   a few short words: equality, IN, LIKE, grouping
    n string   mostly digits, sometimes not: CAST(n AS INT) raises under ANSI
    b boolean
    arr array<int>  0..3 elements (and NULL): explode / posexplode

Tables: ``fz_a`` and ``fz_b`` (100 and 80 rows, 10% NULLs), ``fz_nulls`` (50, half
NULLs), ``fz_dups`` (50 rows drawn from 5), ``fz_empty`` (no rows), ``fz_sorted`` (``fz_a``
sorted on k, x and cached: an input that reports an ordering), all cached; ``fz_files``,
``fz_a``'s rows as 5 parquet files, each a range of ``x`` in row groups of 8 rows, not
cached (what the statistics rules prove from, issue 37); and ``fz_range``, 64 rows computed from ``spark.range`` in two partitions: the only input of
``rand(seed)`` and ``sample(seed)``, whose values depend on the partition and position of
each row. A range has the same partitions and row order in every plan; a cached table
read over a shuffle did not (in a long sweep, plain Spark's read of ``fz_nulls`` paired
``rand(7)``'s values with other rows than the next mode's read, though every plan was the
same: fuzzer noise, not a rewrite).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

SCHEMA = "k int, g int, x int, d double, s string, n string, b boolean, arr array<int>"
COLUMNS = ("k", "g", "x", "d", "s", "n", "b", "arr")
KINDS = {"k": "int", "g": "int", "x": "int", "d": "double", "s": "string", "n": "string",
         "b": "bool", "arr": "array"}
WORDS = ("a", "b", "c", "dd", "e")
NUMBERS = ("0", "1", "7", "12", "30", "x1")  # "x1": CAST(n AS INT) raises on it
DOUBLES = tuple(v / 4 for v in range(-32, 33, 3)) + (float("nan"), -0.0)


@dataclass(frozen=True)
class Table:
    name: str
    rows: tuple

    def values(self, column: str) -> tuple:
        """The column's distinct non-NULL values (arrays: their elements), sorted: what a
        predicate compares with."""
        i = COLUMNS.index(column)
        if column == "arr":
            found = {e for r in self.rows if r[i] for e in r[i] if e is not None}
        else:
            found = {r[i] for r in self.rows if r[i] is not None}
        return tuple(sorted((v for v in found if v == v), key=_order))


def _order(v):
    return (str(type(v)), v)


def _row(rng: random.Random, keys: int, nulls: float) -> tuple:
    def maybe(v):
        return None if rng.random() < nulls else v
    arr = None if rng.random() < nulls / 2 else [
        rng.randint(0, 5) for _ in range(rng.randint(0, 3))]
    return (maybe(rng.randrange(keys)), maybe(rng.randrange(4)), maybe(rng.randint(-50, 50)),
            maybe(rng.choice(DOUBLES)), maybe(rng.choice(WORDS)), maybe(rng.choice(NUMBERS)),
            maybe(rng.random() < 0.5), arr)


#: fz_range's columns as SQL over ``id``; ``_range_row`` computes the same in Python.
RANGE_COLUMNS = (
    "CAST(id % 10 AS INT) AS k", "CAST(id % 4 AS INT) AS g",
    "CASE WHEN id % 9 = 4 THEN NULL ELSE CAST((id * 37) % 101 - 50 AS INT) END AS x",
    "CAST((id * 7) % 33 - 16 AS DOUBLE) / 4 AS d",
    "element_at(array('a', 'b', 'c', 'dd', 'e'), CAST(id % 5 + 1 AS INT)) AS s",
    "element_at(array('0', '1', '7', '12', '30', 'x1'), CAST(id % 6 + 1 AS INT)) AS n",
    "CASE WHEN id % 11 = 3 THEN NULL ELSE id % 3 = 0 END AS b",
    "CASE WHEN id % 7 = 0 THEN NULL ELSE "
    "slice(array(CAST(id % 6 AS INT), CAST(id * 5 % 6 AS INT), 2), 1, CAST(id % 4 AS INT)) END AS arr",
)
RANGE_ROWS = 64


def _range_row(i: int) -> tuple:
    return (i % 10, i % 4, None if i % 9 == 4 else (i * 37) % 101 - 50, ((i * 7) % 33 - 16) / 4,
            WORDS[i % 5], NUMBERS[i % 6], None if i % 11 == 3 else i % 3 == 0,
            None if i % 7 == 0 else [i % 6, i * 5 % 6, 2][:i % 4])


def make_tables(seed: int = 0) -> dict[str, Table]:
    rng = random.Random(seed)
    dups_pool = [_row(rng, 10, 0.1) for _ in range(5)]
    tables = [
        Table("fz_a", tuple(_row(rng, 10, 0.1) for _ in range(100))),
        Table("fz_b", tuple(_row(rng, 12, 0.1) for _ in range(80))),
        Table("fz_nulls", tuple(_row(rng, 10, 0.5) for _ in range(50))),
        Table("fz_dups", tuple(rng.choice(dups_pool) for _ in range(50))),
        Table("fz_empty", ()),
    ]
    by_name = {t.name: t for t in tables}
    by_name["fz_sorted"] = Table("fz_sorted", by_name["fz_a"].rows)
    by_name["fz_range"] = Table("fz_range", tuple(_range_row(i) for i in range(RANGE_ROWS)))
    by_name["fz_files"] = Table("fz_files", by_name["fz_a"].rows)
    return by_name


#: Partitions of each cached table. Every partition is a task in every stage that reads
#: it, and a task costs more than these rows do: one partition, but two in ``fz_b`` (and
#: ``fz_range``), so that a join or a union still reads a table split in parts.
PARTITIONS = {"fz_b": 2}


#: ``fz_files``: ``fz_a``'s rows written as parquet files, each a range of ``x`` in row
#: groups of this many rows: the statistics rules (bound_top_k, answer_from_statistics)
#: have files to prove from.
FILES, ROW_GROUP_ROWS = 5, 8


def register(spark, seed: int = 0, files_dir: str | None = None) -> dict[str, Table]:
    """Creates and caches the tables as temp views (``fz_files`` a parquet read, not
    cached, its files written into ``files_dir`` or a fresh temporary folder); returns them
    by name."""
    tables = make_tables(seed)
    for name, table in tables.items():
        if name == "fz_files":
            import tempfile

            path = os.path.join(files_dir or tempfile.mkdtemp(prefix="sparkext-fuzz-"), "fz_files")
            spark.createDataFrame(list(table.rows), SCHEMA).repartitionByRange(FILES, "x") \
                .write.mode("overwrite").option("parquet.block.row.count.limit", ROW_GROUP_ROWS) \
                .parquet(path)
            spark.read.parquet(path).createOrReplaceTempView(name)
            continue
        if name == "fz_range":
            spark.range(0, RANGE_ROWS, 1, 2).selectExpr(*RANGE_COLUMNS) \
                .createOrReplaceTempView(name)
            continue
        if name == "fz_sorted":
            # A global sort into one partition (its range exchange has as many partitions
            # as the session's shuffles): a cached input that reports its ordering.
            saved = spark.conf.get("spark.sql.shuffle.partitions")
            spark.conf.set("spark.sql.shuffle.partitions", "1")
            try:
                df = spark.table("fz_a").orderBy("k", "x").cache()
                df.count()
            finally:
                spark.conf.set("spark.sql.shuffle.partitions", saved)
        else:
            df = spark.createDataFrame(list(table.rows), SCHEMA) \
                .repartition(PARTITIONS.get(name, 1)).cache()
            df.count()
        df.createOrReplaceTempView(name)
    return tables
