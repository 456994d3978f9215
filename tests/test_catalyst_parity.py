"""sparkext's pushdown and pruning against Catalyst's own, on the 22 TPC-H queries.

Three ways in one session:
  N  plain Spark;
  X  Spark with its own pushdown, filter inference and pruning rules excluded
     (sparkext.catalyst.PUSHDOWN_AND_PRUNING_RULES);
  S  X plus sparkext's built-in rules.
Every query returns the same rows in N, X and S; in S every file scan reads no more
columns than its counterpart in N and gets every filter N pushes into it.
"""

from __future__ import annotations

import pytest

import sparkext
from sparkext.catalyst import excluded_rules_conf
from sparkext.testing.scans import FileScan, file_scans
from tests.conftest import conf, report
from tests.rows import assert_same_rows, collect
from tests.tpch import QUERY_NAMES

MODES = {
    "N": {"spark.sparkext.enabled": "false"},
    "X": {"spark.sparkext.enabled": "false", **excluded_rules_conf()},
    "S": {"spark.sparkext.enabled": "true", **excluded_rules_conf()},
}


def run_modes(spark, sql: str) -> dict:
    results = {}
    for mode, settings in MODES.items():
        with conf(spark, settings):
            df = spark.sql(sql)
            results[mode] = (collect(df), file_scans(df))
    return results


@pytest.fixture(scope="module")
def parity(spark, tpch, request):
    sparkext.enable(spark)
    results = {name: run_modes(spark, tpch[name]) for name in QUERY_NAMES}
    report(request, parity_table(results))
    return results


def parity_table(results: dict) -> list[str]:
    """query | columns all its scans read, N/X/S | filters at its scans, N/X/S"""
    lines = ["| query | scan columns N/X/S | scan filters N/X/S |", "| --- | --- | --- |"]
    for name, modes in results.items():
        cols = "/".join(str(sum(len(s.columns) for s in modes[m][1])) for m in MODES)
        filters = "/".join(str(sum(len(s.data_filters) for s in modes[m][1])) for m in MODES)
        lines.append(f"| {name} | {cols} | {filters} |")
    return lines


def match_scans(reference: list[FileScan], candidate: list[FileScan]):
    """Pairs every reference scan with a distinct candidate scan of the same table that
    reads no more columns and has every filter the reference has; returns the unpaired
    reference scans."""
    free = list(candidate)
    missing = []
    # Most demanding first, so a weak candidate does not take a strong one's partner.
    for ref in sorted(reference, key=lambda s: (len(s.data_filters), -len(s.columns)),
                      reverse=True):
        fits = [c for c in free if c.table == ref.table
                and set(c.columns) <= set(ref.columns)
                and set(ref.data_filters) <= set(c.data_filters)
                and set(ref.pushed_filters) <= set(c.pushed_filters)]
        if fits:
            free.remove(min(fits, key=lambda c: len(c.columns)))
        else:
            missing.append(ref)
    return missing


@pytest.mark.parametrize("name", QUERY_NAMES)
def test_tpch_rows_are_the_same_with_and_without_catalysts_rules(parity, name):
    rows = {mode: parity[name][mode][0] for mode in MODES}
    assert_same_rows(rows["N"], rows["X"])
    assert_same_rows(rows["N"], rows["S"])


@pytest.mark.parametrize("name", QUERY_NAMES)
def test_tpch_scans_read_no_more_and_filter_no_less_than_catalyst(parity, name):
    n_scans, s_scans = parity[name]["N"][1], parity[name]["S"][1]
    assert len(n_scans) == len(s_scans), (n_scans, s_scans)
    missing = match_scans(n_scans, s_scans)
    assert not missing, "scans in S read more or filter less than in N:\n" + "\n".join(
        f"  N: {m}" for m in missing) + "\nS scans:\n" + "\n".join(f"  {s}" for s in s_scans)

