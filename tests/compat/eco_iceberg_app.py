"""One Iceberg application (see eco_app.py): ``python eco_iceberg_app.py MODE OUT WORKDIR``.

A Hadoop catalog ``local`` in WORKDIR, the runtime jar from Maven Central. Modes:

- ``plain``: Iceberg alone (no sparkext).
- ``iceberg-first``: Iceberg's jar (``--jars``, from the Ivy cache the ``plain`` run
  filled) and extension in ``PYSPARK_SUBMIT_ARGS``, as a launcher would give them, then
  ``sparkext.configure(builder)``: configure() must add sparkext to what the JVM will be
  given (spark-submit's ``--jars`` wins over any ``spark.jars``), not replace it.
- ``sparkext-first``: both classes named on the builder, sparkext first, then
  ``sparkext.configure(builder)``: it adds the jar and keeps the order.
"""

from __future__ import annotations

import os
import sys
import time

from eco_app import IVY_DIR, STRICT_CONF, builder_with, finish, generate, run, started

ICEBERG_EXTENSION = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
ICEBERG_PACKAGE = "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0"
ICEBERG_JAR = os.path.join(IVY_DIR, "jars",
                           "org.apache.iceberg_iceberg-spark-runtime-4.1_2.13-1.12.0.jar")
TABLE = "local.db.events"


def session(mode: str, workdir: str):
    import sparkext

    catalog = {
        "spark.sql.catalog.local": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.local.type": "hadoop",
        "spark.sql.catalog.local.warehouse": os.path.join(workdir, "warehouse"),
    }
    iceberg = {"spark.jars.packages": ICEBERG_PACKAGE, "spark.sql.extensions": ICEBERG_EXTENSION}
    if mode == "plain":
        return builder_with({**catalog, **iceberg}).getOrCreate()
    if mode == "iceberg-first":
        os.environ["PYSPARK_SUBMIT_ARGS"] = (
            f"--jars {ICEBERG_JAR} --conf spark.sql.extensions={ICEBERG_EXTENSION} "
            "pyspark-shell")
        return sparkext.configure(builder_with({**catalog, **STRICT_CONF})).getOrCreate()
    if mode == "sparkext-first":
        both = {**iceberg,
                "spark.sql.extensions": f"{sparkext.EXTENSION_CLASS},{ICEBERG_EXTENSION}"}
        return sparkext.configure(builder_with({**catalog, **STRICT_CONF, **both})).getOrCreate()
    raise SystemExit(f"unknown mode {mode!r}")


def evidence(spark) -> dict:
    """What only Iceberg (and its extension) can answer: the snapshot log, and the sort
    order that ``WRITE ORDERED BY`` (Iceberg's SQL extension) set and later writes used:
    each data file records it, and its rows are in that order."""
    snapshots = spark.sql(f"SELECT operation FROM {TABLE}.snapshots ORDER BY committed_at")
    files = spark.sql(f"SELECT file_path, sort_order_id FROM {TABLE}.files").collect()
    # One small file is one task that reads it front to back: collect() keeps its order.
    keys = [[(r.amount is not None, r.amount or 0, r.id)  # ASC NULLS FIRST
             for r in spark.read.parquet(f.file_path).select("amount", "id").collect()]
            for f in files]
    return {"history": [r[0] for r in snapshots.collect()],
            "file sort orders": sorted({f.sort_order_id for f in files}),
            "files in write order": all(k == sorted(k) for k in keys),
            "files": len(files)}


def main(mode: str, out: str, workdir: str) -> None:
    import sparkext

    clock = time.monotonic()
    spark = session(mode, workdir)
    session_seconds = round(time.monotonic() - clock, 1)
    started(workdir)
    spark.sparkContext.setLogLevel("ERROR")
    if mode != "plain":
        sparkext.enable(spark)  # before the first write: Iceberg's own plans meet the rules
    clock = time.monotonic()
    generate(spark).writeTo(TABLE).create()
    # Iceberg's SQL extension parses this; the MERGE and UPDATE that follow then sort what
    # they write (a sort sparkext must leave in place). Not by id: the MERGE's join on id
    # would leave that order by itself.
    spark.sql(f"ALTER TABLE {TABLE} WRITE ORDERED BY amount, id")
    written = round(time.monotonic() - clock, 1)
    result = run(spark, mode != "plain", TABLE, lambda: spark.table(TABLE), evidence)
    result["seconds"].update(session=session_seconds, write=written)
    finish(out, result)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
