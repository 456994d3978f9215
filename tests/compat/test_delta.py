"""sparkext beside Delta Lake (issue 14, item 6): pyspark 4.2.0 + delta-spark 4.4.0, the
Delta jars from Maven Central through ``spark.jars.packages`` (Ivy cache outside the tree).

Three applications run (eco_delta_app.py): Delta alone, and Delta with sparkext with the
two extension classes in each order, built through ``sparkext.configure()`` and Delta's
``configure_spark_with_delta_pip`` nested both ways. Each writes a Delta table, MERGEs and
UPDATEs it, reads it, and runs two sorted queries that sparkext's ordering rules rewrite.
The hazards: configure() losing Delta's extension or jars (or Delta's helper losing
sparkext's), sparkext's rules breaking Delta's own plans (strict mode raises), sparkext's
rules not reaching a plan over a Delta table, and other rows than Delta alone gives.

Runs in a venv with delta-spark (the compat environment table); elsewhere it skips.
"""

from __future__ import annotations

import pytest

pytest.importorskip("delta", reason="needs delta-spark (make test-compat's Delta venv)")

from tests.compat.eco_runs import (  # noqa: E402
    KEYS,
    assert_plain,
    assert_rewritten,
    extension_orders,
    run_modes,
)

DELTA = "io.delta.sql.DeltaSparkSessionExtension"
WITH_SPARKEXT = extension_orders("delta-first", DELTA)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return run_modes("eco_delta_app.py", ["plain", *WITH_SPARKEXT],
                     tmp_path_factory.mktemp("delta"))


@pytest.mark.parametrize("query", KEYS)
def test_plain_delta_keeps_both_sorts(runs, query):
    assert_plain(runs["plain"], query, DELTA)


@pytest.mark.parametrize("mode", WITH_SPARKEXT)
def test_both_extensions_reach_the_session_in_the_order_given(runs, mode):
    assert runs[mode]["extensions"] == WITH_SPARKEXT[mode]


@pytest.mark.parametrize("mode", WITH_SPARKEXT)
def test_delta_merge_and_update_work_beside_sparkext(runs, mode):
    # DESCRIBE HISTORY is Delta's parser extension; UPDATE on a Delta path needs Delta's
    # analysis rules. sparkext's rules ran over the MERGE's and UPDATE's own plans.
    assert runs[mode]["history"] == ["WRITE", "MERGE", "UPDATE"]
    assert runs[mode]["table"] == runs["plain"]["table"]


@pytest.mark.parametrize("query", KEYS)
@pytest.mark.parametrize("mode", WITH_SPARKEXT)
def test_sorted_query_over_delta_rewritten_with_the_same_rows(runs, mode, query):
    assert_rewritten(runs[mode], runs["plain"], query)
