"""The bridge's counters through SQL: ``sparkext_metrics()`` and ``sparkext_reset_metrics()``,
the table functions the extension injects for clients without py4j (issue 15). Here in a
classic session, where the py4j counters are there to compare with; tests/test_connect.py
reads them from a Spark Connect client."""

from __future__ import annotations

import json

import pytest

import sparkext


def test_the_metrics_table_function_gives_the_py4j_counters(spark, tables):
    """In a classic session both ways are there: the same counters, the same names."""
    sparkext.enable(spark)
    # a sort the sort rules may simplify (a constant key): one call
    spark.table("events").where("host = 'h1'").orderBy("host", "ts").collect()
    # Read first through py4j: the table function reads when its query is analysed,
    # before that query's own optimizer calls count.
    py4j = sparkext.metrics(spark)
    row = spark.sql("SELECT * FROM sparkext_metrics()").collect()[0].asDict()
    assert row["calls"] > 0, row
    # (the per-rule and per-guard figures travel as JSON columns)
    assert {k: py4j[k] for k in row} == row | {"warnings": py4j["warnings"],
                                               "rules": json.loads(row["rules"]),
                                               "guards": json.loads(row["guards"])}
    assert list(row) == list(py4j)


def test_reset_through_the_table_function_zeroes_the_counters(spark, tables):
    sparkext.enable(spark)
    sparkext.reset_metrics(spark)
    # Two queries with a Sort the sort rules may simplify (a key made constant by the
    # filter): with Catalyst's rules on, each makes one call (a query with nothing to sort,
    # or a sort they cannot change, would make none: the JVM's skip and pre-check).
    for _ in range(2):
        spark.table("events").where("host = 'h1'").orderBy("host", "amount").collect()
    before = spark.sql("SELECT calls FROM sparkext_reset_metrics()").collect()[0]["calls"]
    after = sparkext.metrics(spark)
    # What counts after the reset is the reset query's own optimization (analysis, where
    # the reset happens, comes first).
    assert before > 1 and after["calls"] <= 1, (before, after)


def test_the_metrics_table_functions_take_no_arguments(spark):
    with pytest.raises(Exception, match="takes no arguments"):
        spark.sql("SELECT * FROM sparkext_metrics(1)").collect()
