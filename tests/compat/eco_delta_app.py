"""One Delta application (see eco_app.py): ``python eco_delta_app.py MODE OUT_JSON WORKDIR``.

Modes, each the way a user would build the session:

- ``plain``: Delta alone, as Delta's docs show it (no sparkext).
- ``delta-first``: Delta's extension on the builder, then
  ``configure_spark_with_delta_pip(sparkext.configure(builder))``: configure() appends
  sparkext after Delta.
- ``sparkext-first``: both classes named on the builder, sparkext first, then
  ``sparkext.configure(configure_spark_with_delta_pip(builder))``: configure() adds the jar
  and keeps the order.
"""

from __future__ import annotations

import os
import sys

from eco_app import STRICT_CONF, builder_with, finish, generate, run, started

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CONF = {
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Delta rebuilds a table's state with 50 tasks by default: slow for a 1000-row table.
    "spark.databricks.delta.snapshotPartitions": "2",
}


def session(mode: str):
    from delta import configure_spark_with_delta_pip

    import sparkext

    if mode == "plain":
        builder = builder_with({**DELTA_CONF, "spark.sql.extensions": DELTA_EXTENSION})
        return configure_spark_with_delta_pip(builder).getOrCreate()
    if mode == "delta-first":
        builder = builder_with({**DELTA_CONF, **STRICT_CONF,
                                "spark.sql.extensions": DELTA_EXTENSION})
        return configure_spark_with_delta_pip(sparkext.configure(builder)).getOrCreate()
    if mode == "sparkext-first":
        builder = builder_with({**DELTA_CONF, **STRICT_CONF, "spark.sql.extensions":
                                f"{sparkext.EXTENSION_CLASS},{DELTA_EXTENSION}"})
        return sparkext.configure(configure_spark_with_delta_pip(builder)).getOrCreate()
    raise SystemExit(f"unknown mode {mode!r}")


def main(mode: str, out: str, workdir: str) -> None:
    import time

    import sparkext

    clock = time.monotonic()
    spark = session(mode)
    session_seconds = round(time.monotonic() - clock, 1)
    started(workdir)
    spark.sparkContext.setLogLevel("ERROR")
    if mode != "plain":
        # Before the first write: Delta's own queries (the MERGE's join, the UPDATE's
        # rewrite) then run through sparkext's rules too.
        sparkext.enable(spark)
    path = os.path.join(workdir, "events")
    clock = time.monotonic()
    generate(spark).write.format("delta").save(path)
    written = round(time.monotonic() - clock, 1)
    table = f"delta.`{path}`"

    def history(spark):
        # DESCRIBE HISTORY is Delta's own SQL: its parser extension answers it.
        ops = spark.sql(f"DESCRIBE HISTORY {table}").orderBy("version").select("operation")
        return {"history": [r[0] for r in ops.collect()]}

    result = run(spark, mode != "plain", table,
                 lambda: spark.read.format("delta").load(path), history)
    result["seconds"].update(session=session_seconds, write=written)
    finish(out, result)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
