"""What must hold on every supported Spark line (issue 14): run by ``make test-compat``
inside a real session of each line's Spark, with that line's jar.

- every class sparkext mirrors is built on this line (no "dropped" warning);
- the bridge loses nothing: copying every node gives a plan ``fastEquals`` Catalyst's,
  rebuilding every node gives a valid plan and the same rows (TPC-H and the corpus);
- the built-in rules standing in for Catalyst's (Catalyst's excluded) give plain rows;
- a sort over cached sorted data is removed, with the same rows in the same order;
- a rule that raises leaves the query to plain Spark, with one warning and one count;
- a plan snapshot goes to this line's own golden file;
- one attribute id produced in two places (issue 33: recursive CTEs from 4.1 on, a
  decorrelated lateral subquery, a non-inlined CTE) keeps plain Spark's order, and the
  plans Spark makes that the JVM once rejected are accepted.
"""

from __future__ import annotations

import logging

import pytest

import sparkext
from sparkext import Batch, Once
from sparkext._tree import spark_line
from sparkext.catalyst import excluded_rules_conf
from sparkext.testing.snapshots import (
    DEFAULT_SPARK_LINE,
    SnapshotStats,
    assert_plan_snapshot,
    golden_file,
)
from sparkext.testing.rules import rebuild_everything
from tests import test_roundtrip, test_shared_ids
from tests.compat.conftest import CASES, PLAIN
from tests.conftest import conf, jvm_nodes, rules_enabled
from tests.rows import assert_same_rows, collect
from tests.test_bridge import NOT_STRICT, filtered_projection, raises
# Relation facts and the statistics rules on this line (issues 34 and 37): the main
# suite's tests, collected here as this module's own (the ``table`` fixture with them).
from tests.test_relation_facts import (  # noqa: F401
    test_a_path_read,
    test_a_table_partitioned_by_two_columns_lists_the_files_pruning_keeps,
    test_statistics_of_awkward_files_equal_what_the_files_hold,
    test_the_documented_example_rules,
)
from tests.test_top_k_statistics import (  # noqa: F401
    table,
    test_a_global_aggregate_is_answered_from_statistics,
    test_a_partitioned_table_ordered_by_its_partition_column,
    test_a_top_k_returns_plain_sparks_rows,
    test_nothing_is_proved_from_what_is_not_exact,
)


def test_every_mirrored_class_is_built_on_this_line(spark, caplog):
    with caplog.at_level(logging.WARNING, logger="sparkext"):
        handle = sparkext.enable(spark)
    assert handle.dropped == [], handle.dropped
    assert not [r for r in caplog.records if "opaque" in r.getMessage()]


@pytest.mark.parametrize("name", CASES)
def test_copying_every_node_keeps_the_plan_fast_equal(spark, frame, name):
    # The main suite's check (tests/test_roundtrip.py), analyzed and optimized plans, with
    # this suite's ``frame`` (which skips what this line cannot build).
    test_roundtrip.test_copying_every_node_keeps_the_plan_fast_equal(spark, frame, name)


@pytest.mark.parametrize("name", CASES)
def test_rebuilding_every_node_gives_a_valid_plan_and_the_same_rows(spark, frame, plain_rows,
                                                                     name):
    expected = plain_rows(name)
    with rules_enabled(spark, batches=[Batch("rebuild", Once(), (rebuild_everything,))]):
        sparkext.reset_metrics(spark)
        assert_same_rows(expected, collect(frame(name)))
        m = sparkext.metrics(spark)
    # (Catalyst hands back an opaque node itself when its rebuilt children equal the old
    # ones: "unchanged" is then the JVM's honest answer.)
    assert m["accepted"] + m["unchanged"] >= 1, m
    assert m["rejected"] == 0 and m["python_errors"] == 0, m


@pytest.mark.parametrize("name", CASES)
def test_the_built_in_rules_instead_of_catalysts_give_plain_rows(spark, frame, plain_rows,
                                                                 name):
    # (tests/test_differential.py's check, over TPC-H too, with plain rows computed once
    # for this file's row checks)
    expected = plain_rows(name)
    with conf(spark, {"spark.sparkext.enabled": "true", **excluded_rules_conf()}):
        sparkext.reset_metrics(spark)
        actual = collect(frame(name))
        m = sparkext.metrics(spark)
    assert_same_rows(expected, actual)
    assert m["rejected"] == 0 and m["python_errors"] == 0 and m["timeouts"] == 0, m


def sorts(df) -> int:
    return sum(n.getClass().getSimpleName() == "Sort"
               for n in jvm_nodes(df._jdf.queryExecution().optimizedPlan()))


def test_a_sort_over_cached_sorted_data_is_removed(spark):
    sparkext.enable(spark)
    with conf(spark, PLAIN):
        data = spark.range(0, 1000, 1, 4).selectExpr("id", "id % 7 AS k").orderBy("id").cache()
        data.count()
    try:
        def query():
            return data.where("k > 2").orderBy("id")
        with conf(spark, PLAIN):
            expected = query().collect()
            assert sorts(query()) == 1  # plain Spark keeps it: the case is sparkext's
        sparkext.reset_metrics(spark)
        df = query()
        assert sorts(df) == 0, df._jdf.queryExecution().optimizedPlan().treeString()
        assert_same_rows(expected, df.collect(), ordered=True)
        assert sparkext.metrics(spark)["accepted"] >= 1
    finally:
        data.unpersist()


def test_a_raising_rule_leaves_plain_rows_one_warning_and_one_count(spark, line_tables):
    with conf(spark, PLAIN):
        expected = collect(filtered_projection(spark))
    with conf(spark, NOT_STRICT), rules_enabled(spark, [raises]):
        sparkext.reset_metrics(spark)
        assert_same_rows(expected, collect(filtered_projection(spark)))
        m = sparkext.metrics(spark)
    assert m["python_errors"] == 1 and m["accepted"] == 0, m
    assert len(m["warnings"]) == 1 and "rule 'raises' failed: ValueError: boom" in \
        m["warnings"][0], m["warnings"]


def test_a_plan_snapshot_is_kept_for_this_line(spark, tmp_path):
    df = spark.range(10).where("id > 3")
    stats = SnapshotStats()
    assert_plan_snapshot(df, "q", directory=tmp_path, update=False, stats=stats)
    line = "%d.%d" % spark_line(spark.version)
    own, used = golden_file(tmp_path, "q", line)
    assert used == own and own.exists() and stats.updated == 1
    assert own == (tmp_path / "plans" / "q.txt" if line == DEFAULT_SPARK_LINE
                   else tmp_path / "plans" / f"spark{line}" / "q.txt")
    assert_plan_snapshot(df, "q", directory=tmp_path, update=False, stats=stats)
    assert stats.checked == 1 and not stats.failed


@pytest.fixture(scope="module")
def tree(spark):
    return test_shared_ids.register_tree(spark)


@pytest.mark.parametrize("name", list(test_shared_ids.SHAPES))
def test_one_id_produced_twice_keeps_plain_sparks_order(tree, name):
    test_shared_ids.check_shape(tree, name)


@pytest.mark.parametrize("name", list(test_shared_ids.REJECTED_BEFORE))
def test_a_rewrite_of_a_plan_shape_spark_makes_is_accepted(tree, name):
    test_shared_ids.check_accepted(tree, name)
