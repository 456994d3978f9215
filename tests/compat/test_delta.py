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

from tests.compat.eco_runs import run_modes  # noqa: E402

import sparkext  # noqa: E402

DELTA = "io.delta.sql.DeltaSparkSessionExtension"
WITH_SPARKEXT = {
    "delta-first": f"{DELTA},{sparkext.EXTENSION_CLASS}",
    "sparkext-first": f"{sparkext.EXTENSION_CLASS},{DELTA}",
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return run_modes("eco_delta_app.py", ["plain", *WITH_SPARKEXT],
                     tmp_path_factory.mktemp("delta"))


def test_plain_delta_keeps_both_sorts(runs):
    # Without sparkext nothing removes them: what the other runs are measured against.
    plain = runs["plain"]
    assert plain["extensions"] == DELTA
    assert plain["filtered sorted"]["keys"] == [["grp ASC NULLS FIRST", "id ASC NULLS FIRST"]]
    assert plain["sorted cache"]["keys"] == [["id ASC NULLS FIRST"]]


@pytest.mark.parametrize("mode", WITH_SPARKEXT)
def test_both_extensions_reach_the_session_in_the_order_given(runs, mode):
    assert runs[mode]["extensions"] == WITH_SPARKEXT[mode]


@pytest.mark.parametrize("mode", WITH_SPARKEXT)
def test_delta_merge_and_update_work_beside_sparkext(runs, mode):
    # DESCRIBE HISTORY is Delta's parser extension; UPDATE on a Delta path needs Delta's
    # analysis rules. sparkext's rules ran over the MERGE's and UPDATE's own plans.
    assert runs[mode]["history"] == ["WRITE", "MERGE", "UPDATE"]
    assert runs[mode]["table"] == runs["plain"]["table"]


@pytest.mark.parametrize("mode", WITH_SPARKEXT)
def test_constant_sort_key_dropped_over_a_delta_scan(runs, mode):
    query = runs[mode]["filtered sorted"]
    assert query["keys"] == [["id ASC NULLS FIRST"]]
    assert query["metrics"]["accepted"] >= 1
    assert query["metrics"]["rejected"] == query["metrics"]["python_errors"] == 0
    assert query["rows"] == runs["plain"]["filtered sorted"]["rows"]
    assert query["rows"], "the query must return rows for the comparison to mean anything"


@pytest.mark.parametrize("mode", WITH_SPARKEXT)
def test_sort_over_cached_sorted_delta_data_removed(runs, mode):
    query = runs[mode]["sorted cache"]
    assert query["keys"] == []
    assert query["metrics"]["accepted"] >= 1
    assert query["rows"] == runs["plain"]["sorted cache"]["rows"]
    assert query["rows"]
