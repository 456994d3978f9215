"""Empty tables with injected statistics, for plan tests that need no data.

Spark's own PlanStabilitySuite plans TPC-DS over empty tables whose catalog statistics
say how big the real ones are: the optimizer sees realistic sizes, the test reads no
data. The same for your schema:

    create_empty_tables(spark, Path("schema.sql").read_text(), "plans",
                        stats={"orders": (1_500_000, 180_000_000)})
"""

from __future__ import annotations

from collections.abc import Mapping


def split_statements(sql: str) -> list[str]:
    """Statements separated by ``;`` (comment lines dropped)."""
    text = "\n".join(line for line in sql.splitlines() if not line.strip().startswith("--"))
    return [s.strip() for s in text.split(";") if s.strip()]


def set_table_stats(spark, table: str, rows: int, size_in_bytes: int) -> None:
    """Injects catalog statistics (row count, size) for ``table`` (``db.name``)."""
    spark._jvm.io.sparkext.TestingSupport.setTableStats(spark._jsparkSession, table, rows,
                                                        size_in_bytes)


def create_empty_tables(spark, schema_sql: str, database: str,
                        stats: Mapping[str, tuple[int, int]] | None = None) -> list[str]:
    """Creates ``database`` and the (empty) tables of ``schema_sql`` in it, then injects
    ``stats``: table name -> (row count, size in bytes). Returns the table names."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
    names = []
    current = spark.catalog.currentDatabase()
    spark.catalog.setCurrentDatabase(database)
    try:
        for statement in split_statements(schema_sql):
            words = statement.split()
            name = words[2] if words[:2] == ["CREATE", "TABLE"] else None
            if name is None:
                raise ValueError(f"not a CREATE TABLE statement: {statement[:60]}")
            spark.sql(f"DROP TABLE IF EXISTS {database}.{name}")
            spark.sql(statement)
            names.append(name)
    finally:
        spark.catalog.setCurrentDatabase(current)
    for name, (rows, size) in (stats or {}).items():
        set_table_stats(spark, f"{database}.{name}", rows, size)
    return names
