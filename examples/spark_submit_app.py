"""A job for spark-submit: the jar and the extension come from the command line,
the Python rules from ``sparkext.enable``.

    spark-submit --jars "$(python -m sparkext jar)" \\
        --conf spark.sql.extensions=io.sparkext.SparkextExtensions \\
        examples/spark_submit_app.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import SparkSession  # noqa: E402

import sparkext  # noqa: E402
from examples.toy_rules import swap_filter_below_project  # noqa: E402
from sparkext.catalyst import excluded_rules_conf  # noqa: E402


def main() -> None:
    spark = SparkSession.builder.appName("sparkext-spark-submit").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    for key, value in excluded_rules_conf().items():
        spark.conf.set(key, value)
    sparkext.enable(spark, rules=[swap_filter_below_project], builtin=False)

    df = spark.range(1000).selectExpr("id", "id * 2 AS twice").where("id % 7 = 0")
    plan = df._jdf.queryExecution().optimizedPlan()
    accepted = sparkext.metrics(spark)["accepted"]
    total = df.agg({"twice": "sum"}).first()[0]
    print(f"sparkext-submit: top={plan.getClass().getSimpleName()} "
          f"accepted={accepted} sum={total}")
    spark.stop()


if __name__ == "__main__":
    main()
