"""sparkext beside Apache Iceberg (issue 14, item 6): pyspark 4.1.x +
``org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0`` from Maven Central through
``spark.jars.packages`` (Ivy cache outside the tree), a Hadoop catalog in a temp folder.

Three applications run (eco_iceberg_app.py): Iceberg alone, and Iceberg with sparkext with
the two extension classes in each order: Iceberg's jar and class in ``PYSPARK_SUBMIT_ARGS``
(``--jars``, ``--conf``) with ``sparkext.configure()`` adding to them, and both named on
the builder. Each creates a table, sets its write order with Iceberg's SQL extension,
MERGEs and UPDATEs it, reads it, and runs two sorted queries that sparkext's ordering
rules rewrite. The hazards: configure() replacing Iceberg's extension or jar, or losing
its own jar to spark-submit's ``--jars``; sparkext's rules breaking Iceberg's row-level
plans or dropping the sort Iceberg asks its writes for, or not reaching a plan over an
Iceberg table; other rows than Iceberg alone gives.

Runs in a pyspark 4.1 venv (the compat environment table); elsewhere it skips.
"""

from __future__ import annotations

import pyspark
import pytest

if not pyspark.__version__.startswith("4.1."):
    pytest.skip(f"the Iceberg 1.12 runtime is built for Spark 4.1, this is pyspark "
                f"{pyspark.__version__} (make test-compat's Iceberg venv)",
                allow_module_level=True)

from tests.compat.eco_runs import (  # noqa: E402
    KEYS,
    assert_plain,
    assert_rewritten,
    extension_orders,
    run_modes,
)

ICEBERG = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
WITH_SPARKEXT = extension_orders("iceberg-first", ICEBERG)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return run_modes("eco_iceberg_app.py", ["plain", *WITH_SPARKEXT],
                     tmp_path_factory.mktemp("iceberg"))


@pytest.mark.parametrize("query", KEYS)
def test_plain_iceberg_keeps_both_sorts(runs, query):
    assert_plain(runs["plain"], query, ICEBERG)


@pytest.mark.parametrize("mode", WITH_SPARKEXT)
def test_both_extensions_reach_the_session_in_the_order_given(runs, mode):
    assert runs[mode]["extensions"] == WITH_SPARKEXT[mode]


@pytest.mark.parametrize("mode", ["plain", *WITH_SPARKEXT])
def test_iceberg_merge_and_update_work_and_keep_the_write_order(runs, mode):
    run = runs[mode]
    assert run["history"] == ["append", "overwrite", "overwrite"]
    # Sort order 1 is the one ALTER TABLE ... WRITE ORDERED BY set (Iceberg's extension);
    # the files' rows in that order mean the sort Iceberg added to each write ran.
    assert run["file sort orders"] == [1]
    assert run["files in write order"]
    assert run["table"] == runs["plain"]["table"]


@pytest.mark.parametrize("query", KEYS)
@pytest.mark.parametrize("mode", WITH_SPARKEXT)
def test_sorted_query_over_iceberg_rewritten_with_the_same_rows(runs, mode, query):
    assert_rewritten(runs[mode], runs["plain"], query)
