"""Errors that say what was wrong (issue 16 item 8): a long string in Python's answer is not
"malformed JSON", and a spark-submit application without the jar is told what to pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark
from pyspark.sql import functions as F

import pytest

import sparkext
from sparkext.testing.rules import rebuild_everything
from tests.conftest import conf, rules_enabled
from tests.rows import assert_same_rows, collect

ROOT = Path(__file__).resolve().parent.parent


def test_a_string_longer_than_jacksons_default_limit_comes_back_from_python(spark):
    # Jackson refuses strings over 20 MB by default; the answer's literal is 21 MB.
    long_text = "x" * (21 * 1024 * 1024)

    def query(s):
        return s.range(5).where(F.col("id").cast("string") != F.lit(long_text))

    with conf(spark, {"spark.sparkext.enabled": "false"}):
        expected = collect(query(spark))
    with conf(spark, {"spark.sparkext.strict": "true"}), \
            rules_enabled(spark, [rebuild_everything]):
        sparkext.reset_metrics(spark)
        assert_same_rows(expected, collect(query(spark)))
        m = sparkext.metrics(spark)
    assert m["accepted"] >= 1 and m["python_errors"] == 0, m


APP_WITHOUT_THE_JAR = """
import sparkext
from pyspark.sql import SparkSession
try:
    spark = sparkext.configure(SparkSession.builder).getOrCreate()
    sparkext.enable(spark)
    print("RESULT: enabled")
except sparkext.SparkextError as e:
    print("RESULT:", e)
"""


@pytest.mark.spark  # a Spark of its own (a child process)
def test_configure_in_a_spark_submit_app_without_the_jar_says_to_pass_jars(tmp_path):
    app = tmp_path / "app.py"
    app.write_text(APP_WITHOUT_THE_JAR)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_SUBMIT_ARGS", "PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET")}
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               PYTHONPATH=str(ROOT), SPARK_CONF_DIR=str(tmp_path))
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    out = subprocess.run([str(submit), "--master", "local[1]", str(app)], env=env,
                         capture_output=True, text=True, timeout=300).stdout
    result = [line for line in out.splitlines() if line.startswith("RESULT:")]
    assert result, out
    message = result[-1]
    assert '--jars "$(python -m sparkext jar)"' in message, message
    assert "spark.sql.extensions=io.sparkext.SparkextExtensions" in message, message
    # The advice a running JVM cannot follow:
    assert "configure(SparkSession.builder)" not in message, message
