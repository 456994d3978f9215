"""``spark-sql`` runs sparkext's built-in rules with no PySpark driver (issue 15): the
pyspark wheel's own ``bin/spark-sql``, given the jar, the extension and
``spark.sparkext.rules``, starts the rule worker, and a redundant sort goes.

One CLI run (a JVM with Hive's metastore takes most of a minute) prints the query's
optimized plan and rows twice: with ``spark.sparkext.enabled=false`` (plain Spark's plan)
and with the rules on. Strict mode is on, so a worker that failed would fail the run. The
same run has a built-in guard named at launch (issue 35): it allows a partitioned table's
read with a partition filter and refuses one without, with sparkext off in the session.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import sparkext

ROOT = Path(__file__).resolve().parent.parent
SPARK_SQL = Path(sys.executable).parent / "spark-sql"

# A range is sorted on id already and g is the constant 1 after the filter: the sort is
# redundant, and plain Spark's optimizer keeps it.
QUERY = ("SELECT g, ts FROM (SELECT id % 3 AS g, id AS ts FROM range(1000)) "
         "WHERE g = 1 ORDER BY g, ts")


def sections(stdout: str) -> dict[str, list[str]]:
    """The CLI's output split at the marker rows the script selects."""
    out: dict[str, list[str]] = {}
    current = None
    for line in stdout.splitlines():
        if line.startswith("@@"):
            current = out.setdefault(line.strip("@ "), [])
        elif current is not None:
            current.append(line)
    return out


def optimized_plan(explain: list[str]) -> list[str]:
    start = explain.index("== Optimized Logical Plan ==") + 1
    end = explain.index("== Physical Plan ==")
    return explain[start:end]


@pytest.mark.spark  # a Spark of its own (a child process)
def test_spark_sql_runs_the_built_in_rules_through_the_rule_worker_and_the_guards(tmp_path):
    script = "; ".join([
        "CREATE TABLE ev (id INT, p INT) USING parquet PARTITIONED BY (p)",
        "INSERT INTO ev VALUES (1, 1), (2, 2), (3, 2)",
        "SET spark.sparkext.enabled=false",
        "SELECT '@@ plain plan'", f"EXPLAIN EXTENDED {QUERY}",
        "SELECT '@@ plain rows'", QUERY,
        "SELECT '@@ switch'", "SET spark.sparkext.enabled=true",
        "SELECT '@@ sparkext plan'", f"EXPLAIN EXTENDED {QUERY}",
        "SELECT '@@ sparkext rows'", QUERY,
        # the built-in guard, named at launch: a read with a partition filter is allowed,
        # one without is refused, with sparkext switched off in the session. The CLI stops
        # at the refusal (its first failing statement): '@@ end' is never printed.
        "SELECT '@@ guarded rows'", "SELECT id FROM ev WHERE p = 2 ORDER BY id",
        "SELECT '@@ refused'", "SET spark.sparkext.enabled=false", "SELECT id FROM ev",
        "SELECT '@@ end'",
    ])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable}
    out = subprocess.run(
        [str(SPARK_SQL), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
         "--jars", sparkext.jar_path(),
         "--conf", f"spark.sql.extensions={sparkext.EXTENSION_CLASS}",
         "--conf", "spark.sparkext.rules=sparkext.rules:BATCHES",
         "--conf", f"spark.sparkext.python={sys.executable}",
         "--conf", "spark.sparkext.strict=true",
         "--conf", "spark.sparkext.guards.partitionFilter.tables=*",
         "--conf", f"spark.sql.warehouse.dir={tmp_path / 'warehouse'}",
         "-e", script],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    got = sections(out.stdout)
    assert out.returncode != 0 and "refused" in got and "end" not in got, \
        out.stdout[-3000:] + out.stderr[-6000:]
    assert "SPARKEXT_QUERY_REFUSED" in out.stderr and "require_partition_filters" in out.stderr, \
        out.stderr[-6000:]
    assert [line.strip() for line in got["guarded rows"]] == ["2", "3"], got["guarded rows"]
    plain_plan, plan = optimized_plan(got["plain plan"]), optimized_plan(got["sparkext plan"])
    assert plain_plan[0].startswith("Sort "), "\n".join(plain_plan)
    assert not any("Sort " in line for line in plan), "\n".join(plan)
    assert got["plain rows"] and got["sparkext rows"] == got["plain rows"]
