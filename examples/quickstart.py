"""sparkext quickstart (``make demo``).

A local Spark session, a small pipeline over generated parquet data, and Python optimizer
rules running inside Catalyst. Catalyst's own pushdown and pruning are switched off so the
Python rules' work shows in the plans:

1. the plan without sparkext: the filter sits above the projection, the scan reads every
   column;
2. with a ten-line toy rule (examples/toy_rules.py): the filter moved below the
   projection;
3. with sparkext's built-in rules: the filter reached the scan (PushedFilters) and the
   scan reads only the columns the query needs.

Spark's own executors run the rewritten plans; the rows are the same every time.
"""

from __future__ import annotations

import os
import sys
import tempfile
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

import sparkext  # noqa: E402
from examples.toy_rules import swap_filter_below_project  # noqa: E402
from sparkext.catalyst import excluded_rules_conf  # noqa: E402
from sparkext.testing.scans import file_scans  # noqa: E402


def build_session() -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master("local[2]").appName("sparkext-quickstart")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4"))
    spark = sparkext.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def write_data(spark: SparkSession, folder: str) -> str:
    path = os.path.join(folder, "orders.parquet")
    (spark.range(200_000)
     .select(F.col("id").alias("order_id"),
             (F.col("id") % 1000).alias("customer_id"),
             (F.rand(7) * 500).cast("decimal(10,2)").alias("amount"),
             F.element_at(F.array(*map(F.lit, ["eu", "us", "apac"])),
                          (F.col("id") % 3 + 1).cast("int")).alias("region"))
     .write.mode("overwrite").parquet(path))
    return path


def pipeline(spark: SparkSession, path: str):
    orders = spark.read.parquet(path)
    return (orders
            .select("order_id", "customer_id", "region",
                    (F.col("amount") * F.lit(Decimal("1.2"))).alias("gross"))
            .where("region = 'eu'")
            .groupBy("customer_id")
            .agg(F.count("*").alias("orders"), F.sum("gross").alias("gross"))
            .orderBy(F.desc("gross"), "customer_id")
            .limit(5))


def show_plan(title: str, df) -> None:
    print(f"\n=== {title} ===")
    print(df._jdf.queryExecution().optimizedPlan().treeString())


def show_scan(df) -> None:
    for scan in file_scans(df):
        print(f"scan of {scan.table}: reads {list(scan.columns)}, "
              f"pushed filters {list(scan.pushed_filters)}")


def main() -> None:
    spark = build_session()
    with tempfile.TemporaryDirectory() as folder:
        path = write_data(spark, folder)
        for key, value in excluded_rules_conf().items():
            spark.conf.set(key, value)

        spark.conf.set("spark.sparkext.enabled", "false")
        show_plan("optimized plan without sparkext (Catalyst's pushdown off)",
                  pipeline(spark, path))
        expected = pipeline(spark, path).collect()

        show_scan(pipeline(spark, path))

        spark.conf.set("spark.sparkext.enabled", "true")
        sparkext.enable(spark, rules=[swap_filter_below_project], builtin=False)
        df = pipeline(spark, path)
        show_plan("optimized plan with the Python rule swap_filter_below_project", df)
        assert df.collect() == expected, "the rewritten plan returned other rows"

        sparkext.enable(spark)  # the built-in rules
        sparkext.reset_metrics(spark)
        df = pipeline(spark, path)
        show_plan("optimized plan with sparkext's built-in rules", df)
        rows = df.collect()
        show_scan(df)

        print("\n=== rows ===")
        for row in rows:
            print(row)
        assert rows == expected, "the rewritten plan returned other rows"
        m = sparkext.metrics(spark)
        print(f"\nbridge: {m['calls']} call(s), {m['accepted']} rewrite(s) accepted, "
              f"{m['encode_ms'] + m['python_ms'] + m['rebuild_ms']:.1f} ms in the bridge")
    spark.stop()


if __name__ == "__main__":
    main()
