"""The Spark side of the Delta and Iceberg tests: one application per run, in its own
process, so that each run gets the JVM its builder asks for (``spark.sql.extensions`` and
``spark.jars.packages`` take effect only when the JVM and its SparkContext start).

A run writes a table, changes it (MERGE, UPDATE), reads it and runs two sorted
queries that sparkext's ordering rules rewrite:

- ``filtered sorted``: ``WHERE grp = 'a' ... ORDER BY grp, id``. simplify_sort_keys drops
  ``grp`` (it is constant under the filter), over a scan of the table itself.
- ``sorted cache``: the table sorted by id and cached, then filtered and sorted by id
  again. eliminate_sorts removes the second sort (the cache keeps the order).

It writes what it saw (rows, sort keys of the optimized plans, bridge metrics, the table's
history) to a JSON file; the test compares a run without sparkext with runs that have it.
The format-specific parts (builder, table name, SQL dialect checks) come from the caller.
sparkext comes from ``PYTHONPATH`` (eco_runs.py passes the test's own: the tree's package
or an installed wheel).
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

#: Where spark.jars.packages keeps its Ivy cache: outside the tree, shared between runs.
IVY_DIR = os.environ.get("SPARKEXT_IVY_DIR", "/root/.cache/sparkext/ivy")

BASE_CONF = {
    "spark.master": "local[2]",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    # Short jobs on a loaded 2-core machine: the C1 compiler alone warms up faster.
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "1g",
    "spark.jars.ivy": IVY_DIR,
}

#: What a run with sparkext adds: a failing rule or a rejected plan raises.
STRICT_CONF = {"spark.sparkext.strict": "true", "spark.sql.planChangeValidation": "true"}

_IDS = re.compile(r"#\d+L?")


def builder_with(conf: dict[str, str]):
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("sparkext-eco")
    for key, value in {**BASE_CONF, **conf}.items():
        builder = builder.config(key, value)
    return builder


def started(workdir: str) -> None:
    """Tells eco_runs.py the session is up (the packages are in the Ivy cache)."""
    Path(workdir, "started").touch()


def _plain(value):
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return value


def rows(df) -> list[list]:
    return [[_plain(v) for v in row] for row in df.collect()]


def _children(node):
    it = node.children().iterator()
    while it.hasNext():
        yield it.next()


def sort_keys(df) -> list[list[str]]:
    """The keys of every Sort in the optimized plan, expression ids removed."""
    out, stack = [], [df._jdf.queryExecution().optimizedPlan()]
    while stack:
        node = stack.pop()
        if node.nodeName() == "Sort":
            order = node.order().iterator()
            keys = []
            while order.hasNext():
                keys.append(_IDS.sub("", order.next().toString()))
            out.append(keys)
        stack.extend(_children(node))
    return out


def generate(spark):
    """1000 rows with NULLs in both value columns, the same in every run, written out of
    id order (so that a file in id order was sorted by its writer)."""
    return spark.sql("""
        SELECT id,
               CASE WHEN id % 17 = 0 THEN NULL
                    ELSE element_at(array('a', 'b', 'c', 'd'), CAST(id % 4 + 1 AS INT)) END AS grp,
               CASE WHEN id % 23 = 0 THEN NULL
                    ELSE CAST((id * 37) % 1000 / 10.0 AS DECIMAL(10, 2)) END AS amount
        FROM range(1000)
        ORDER BY (id * 7919) % 1000""")


def changes(table: str) -> list[str]:
    """MERGE (update and insert) and UPDATE statements on ``table``."""
    return [
        f"""MERGE INTO {table} t
            USING (SELECT id, 'm' AS grp, CAST(id % 50 + 0.5 AS DECIMAL(10, 2)) AS amount
                   FROM range(900, 1100)) s
            ON t.id = s.id
            WHEN MATCHED THEN UPDATE SET t.grp = s.grp, t.amount = s.amount
            WHEN NOT MATCHED THEN INSERT *""",
        f"UPDATE {table} SET amount = amount * 2 WHERE grp = 'b' AND id < 500",
    ]


def run(spark, with_sparkext: bool, table: str, read: Callable, extra: Callable) -> dict:
    """Writes, changes and reads ``table`` (already created from :func:`generate` by the
    caller), runs the two sorted queries, and returns what the test compares. ``read()``
    gives the table as a DataFrame; ``extra(spark)`` gives the format's own evidence that
    its extension works."""
    import sparkext

    result: dict = {"extensions": spark.sparkContext.getConf().get("spark.sql.extensions", ""),
                    "seconds": {}}
    clock = time.monotonic()
    for statement in changes(table):
        spark.sql(statement)
        result["seconds"][statement.split()[0]] = round(time.monotonic() - clock, 1)
        clock = time.monotonic()
    result["table"] = rows(read().orderBy("id"))

    if with_sparkext:
        sparkext.reset_metrics(spark)
    filtered = read().where("grp = 'a' AND amount > 10").orderBy("grp", "id")
    result["filtered sorted"] = {"keys": sort_keys(filtered), "rows": rows(filtered)}
    if with_sparkext:
        result["filtered sorted"]["metrics"] = sparkext.metrics(spark)

    by_id = read().orderBy("id").cache()
    by_id.count()
    if with_sparkext:
        sparkext.reset_metrics(spark)
    cached = by_id.where("amount > 5").orderBy("id")
    result["sorted cache"] = {"keys": sort_keys(cached), "rows": rows(cached)}
    if with_sparkext:
        result["sorted cache"]["metrics"] = sparkext.metrics(spark)
    by_id.unpersist()

    result["seconds"]["queries"] = round(time.monotonic() - clock, 1)
    result.update(extra(spark))
    return result


def finish(out_path: str, result: dict) -> None:
    Path(out_path).write_text(json.dumps(result, indent=1), encoding="utf-8")
