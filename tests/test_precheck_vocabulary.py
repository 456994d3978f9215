"""The JVM's "ordering" pre-check learns the window functions the analyses read from the
registration document (sparkext.bridge.precheck_vocabulary, from
sparkext.catalyst_names.ORDERING_PRECHECK); it keeps no list of its own.

Pure-Python: an analysis that reads window functions through ``Window.columns_of`` with a
set the vocabulary does not send fails here. With Spark: the JVM interprets the vocabulary
it is sent (without ``RowNumber``, a sort a row_number makes redundant is skipped, with it
the call is made and the sort goes), and refuses a registration whose rule declares the
pre-check without one.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import sparkext
from sparkext import catalyst_names as names
from sparkext.bridge import precheck_vocabulary

SPARKEXT = Path(sparkext.__file__).parent


def _columns_of_sets() -> dict[str, str]:
    """``names.X`` given to ``columns_of`` anywhere in the package: X -> where."""
    found = {}
    for path in SPARKEXT.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "columns_of" and node.args):
                arg = node.args[0]
                assert isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) \
                    and arg.value.id == "names", \
                    f"{path.name}:{node.lineno}: columns_of reads a set not from catalyst_names"
                found[arg.attr] = f"{path.name}:{node.lineno}"
    return found


def test_every_window_function_set_an_analysis_reads_is_sent_to_the_jvm():
    used = _columns_of_sets()
    assert used, "no analysis reads window functions: this test looks in the wrong place"
    sent = [set(v) for v in names.ORDERING_PRECHECK.values()]
    for attr, where in used.items():
        value = getattr(names, attr)
        assert set(value) in sent, (
            f"{where} reads names.{attr}, which the JVM's ordering pre-check is not sent: "
            "add it to catalyst_names.ORDERING_PRECHECK and read it in Prechecks.scala")


def test_the_vocabulary_sent_is_the_analyses_sets():
    sent = precheck_vocabulary()["ordering"]
    assert set(sent["nondecreasing_window_functions"]) == names.NONDECREASING_WINDOW_FUNCTIONS
    assert set(sent["running_monotonic_aggregates"]) == set(names.RUNNING_MONOTONIC_AGGREGATES)
    assert set(sent["numbering_window_functions"]) == names.DISTINCT_IN_PARTITION_WINDOW_FUNCTIONS
    json.dumps(sent)  # travels as JSON


# -- with Spark -------------------------------------------------------------------------------

from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.window import Window  # noqa: E402

from sparkext.rules import builtin_batches  # noqa: E402
from tests.conftest import conf  # noqa: E402

ONTOP = {"spark.sparkext.enabled": "true", "spark.sql.optimizer.excludedRules": ""}


def _numbered_then_sorted(spark):
    # row_number over the whole input in v's order, then a sort on it: the sort rules may
    # drop the sort (rn is ordered), which only the window function's name tells the JVM.
    df = spark.createDataFrame([(k % 4, float(k)) for k in range(40)], "k int, v double")
    return df.withColumn("rn", F.row_number().over(Window.orderBy("v"))) \
        .select(F.col("rn").alias("r2"), "k").orderBy("r2", "k")


def _register(spark, vocabulary):
    reg = sparkext.bridge.registration(builtin_batches(), sparkext.session.channel(spark._jvm),
                                       spark.version)
    reg.spec["prechecks"] = vocabulary
    spark._jvm.io.sparkext.Sparkext.register(spark._jsparkSession, reg.bridge, json.dumps(reg.spec))
    return reg


@pytest.mark.spark
def test_the_jvm_reads_the_window_functions_from_the_registration(spark):
    full = precheck_vocabulary()
    without = json.loads(json.dumps(full))
    for k in without["ordering"]:
        without["ordering"][k] = [n for n in without["ordering"][k] if n != "RowNumber"]
    seen = {}
    try:
        for label, vocabulary in (("full", full), ("without", without)):
            _register(spark, vocabulary)
            with conf(spark, ONTOP):
                sparkext.reset_metrics(spark)
                rows = _numbered_then_sorted(spark).collect()
                seen[label] = sparkext.metrics(spark)
            with conf(spark, {"spark.sparkext.enabled": "false"}):
                assert rows == _numbered_then_sorted(spark).collect()
    finally:
        sparkext.enable(spark)
    assert seen["full"]["calls"] >= 1 and seen["full"]["skipped_precheck"] == 0, seen["full"]
    assert seen["without"]["calls"] == 0 and seen["without"]["skipped_precheck"] >= 1, \
        seen["without"]


@pytest.mark.spark
def test_a_registration_without_the_vocabulary_its_rules_need_is_refused(spark):
    # (pyspark raises Spark's IllegalArgumentException as its own class of that name)
    try:
        with pytest.raises(Exception, match="sends no vocabulary for it"):
            _register(spark, {})
    finally:
        sparkext.enable(spark)
