"""A local SparkSession for tests, with sparkext configured and strict."""

from __future__ import annotations

import os
import sys
import tempfile

#: Settings every test session gets: small, deterministic, and loud about bad plans.
TEST_CONF = {
    "spark.master": "local[2]",
    "spark.app.name": "sparkext-tests",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "2g",
    # sparkext raises instead of warning, and Catalyst validates every rule's plan.
    "spark.sparkext.strict": "true",
    "spark.sql.planChangeValidation": "true",
}


def local_session(extra_conf: dict | None = None):
    """Builds (or returns) the process's local test session with sparkext configured."""
    from pyspark.sql import SparkSession

    import sparkext

    # Python UDFs run in workers: the same interpreter as the driver.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder
    # Tables tests create live in a fresh folder: a leftover one would block CREATE TABLE.
    conf = {"spark.sql.warehouse.dir": tempfile.mkdtemp(prefix="sparkext-warehouse-"),
            **TEST_CONF, **(extra_conf or {})}
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = sparkext.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def check_order_facts(spark) -> list[str]:
    """Checks on the rows, then forgets, every fact sparkext's ordering rules relied on to
    remove a sort or drop sort keys since the last check (recorded only with
    ``SPARKEXT_CHECK_ORDER_FACTS=1`` set before the session's rules were enabled): each
    sort's input runs again, with sparkext off, and must be in the order the rule took it
    to be in. Returns one line per fact the rows contradict (empty: all hold)."""
    previous = spark.conf.get("spark.sparkext.enabled", "true")
    spark.conf.set("spark.sparkext.enabled", "false")
    try:
        return list(spark._jvm.io.sparkext.OrderFacts.check(spark._jsparkSession))
    finally:
        spark.conf.set("spark.sparkext.enabled", previous)
