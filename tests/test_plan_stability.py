"""Golden optimized plans: all 22 TPC-H queries (and the TPC-DS queries in
tests/tpcds/queries) planned over empty tables with injected statistics, with Catalyst's
pushdown, pruning and sort rules switched off and sparkext's built-in rules on, so the
plans show exactly what sparkext's rules do. The golden files are tests/plans/*.txt;
``pytest --sparkext-update-plans`` rewrites them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import sparkext
from sparkext.catalyst import excluded_rules_conf
from sparkext.testing.catalog import create_empty_tables
from sparkext.testing.snapshots import PlanSnapshotError, assert_plan_snapshot, normalize_plan
from tests import tpch as TPCH
from tests.conftest import ROOT, tpch_dir
from tests.tpch.stats import STATS as TPCH_STATS

TPCDS_DIR = Path(__file__).parent / "tpcds"
TPCDS_QUERIES = sorted(p.stem for p in (TPCDS_DIR / "queries").glob("q*.sql"))


@pytest.fixture(scope="module")
def plans(spark):
    """A session of its own (temp views of other tests cannot shadow the tables)."""
    session = spark.newSession()
    sparkext.enable(session)
    for key, value in excluded_rules_conf().items():
        session.conf.set(key, value)
    create_empty_tables(session, (TPCH.QUERIES_DIR.parent / "schema.sql").read_text(),
                        "tpch_plans", TPCH_STATS)
    if TPCDS_QUERIES:
        from tests.tpcds.stats import STATS as TPCDS_STATS
        create_empty_tables(session, (TPCDS_DIR / "schema.sql").read_text(), "tpcds_plans",
                            TPCDS_STATS)
    return session


def planned(session, database: str, sql: str):
    session.catalog.setCurrentDatabase(database)
    return session.sql(sql)


@pytest.mark.parametrize("name", TPCH.QUERY_NAMES)
def test_tpch_plan(plans, plan_snapshot, name):
    plan_snapshot(planned(plans, "tpch_plans", TPCH.query(name)), f"tpch-{name}")


@pytest.mark.parametrize("name", TPCDS_QUERIES)
def test_tpcds_plan(plans, plan_snapshot, name):
    sql = (TPCDS_DIR / "queries" / f"{name}.sql").read_text()
    plan_snapshot(planned(plans, "tpcds_plans", sql), f"tpcds-{name}")


def test_a_changed_rule_fails_the_snapshot_with_the_expected_diff(plans, tmp_path):
    golden = Path(__file__).parent / "plans" / "tpch-q03.txt"
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "tpch-q03.txt").write_text(golden.read_text())
    plans.conf.set("spark.sparkext.excludedRules", "push_down_filters")
    try:
        with pytest.raises(PlanSnapshotError) as err:
            assert_plan_snapshot(planned(plans, "tpch_plans", TPCH.query("q03")), "tpch-q03",
                                 directory=tmp_path, update=False)
    finally:
        plans.conf.unset("spark.sparkext.excludedRules")
    message = str(err.value)
    # Without pushdown, the segment filter no longer sits on the customer scan.
    assert "-" in message and "+" in message and "c_mktsegment" in message
    assert (tmp_path / "plans" / "tpch-q03.actual.txt").exists()


def test_normalised_plans_are_the_same_in_fresh_sessions_and_twice_in_one(spark, tpch):
    queries = ["q03", "q11", "q18"]
    in_session = [[normalize_plan(spark.sql(tpch[q])) for q in queries] for _ in range(2)]
    assert in_session[0] == in_session[1]
    # each in a fresh session, in a JVM of its own (whose ids start elsewhere)
    fresh = []
    for q in queries:
        out = subprocess.run(
            [sys.executable, "-m", "sparkext", "plan", str(TPCH.QUERIES_DIR / f"{q}.sql"),
             "--catalog", str(tpch_dir())],
            capture_output=True, text=True, timeout=600, cwd=ROOT)
        assert out.returncode == 0, out.stderr[-3000:]
        fresh.append(out.stdout)
    assert fresh == in_session[0]
