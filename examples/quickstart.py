"""sparkext quickstart (``make demo``).

A local Spark session, generated data, and Python optimizer rules running inside Catalyst.

Part 1, what plain Spark cannot do: events cached in timestamp order, then
``WHERE host = 'h1' ORDER BY host, ts``. After the filter ``host`` is a constant, so the
order asked for is the order the cache already has; Spark sorts again anyway (its
``EliminateSorts`` knows neither constants nor the cache's ordering). sparkext's
``simplify_sort_keys`` drops the constant key and ``eliminate_sorts`` the sort.
``sparkext.explain`` says which rule did what; both runs are timed and their rows (in
order) compared.

Part 2, the mechanics, with Catalyst's own pushdown and pruning switched off so the Python
rules' work shows in the plans:

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
import time
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


def sorts_in(df) -> int:
    """Sort nodes in the optimized plan (not inside the cache: a cached relation is a leaf)."""
    def count(node) -> int:
        children = node.children()
        own = int(node.getClass().getSimpleName() == "Sort")
        return own + sum(count(children.apply(i)) for i in range(children.size()))

    return count(df._jdf.queryExecution().optimizedPlan())


def run_time(df) -> float:
    """Seconds to run ``df`` to completion (Spark's noop writer: no rows to Python)."""
    start = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


def sort_demo(spark: SparkSession) -> None:
    print("=== part 1: a sort plain Spark keeps and sparkext removes ===")
    events = (spark.range(300_000)
              .select(F.col("id").alias("eid"),
                      F.element_at(F.array(*map(F.lit, ["h1", "h2", "h3"])),
                                   (F.col("id") % 3 + 1).cast("int")).alias("host"),
                      F.timestamp_seconds(F.col("id") * 7 % 300_000 * 60).alias("ts"),
                      (F.col("id") % 97).alias("value"))
              .orderBy("ts").cache())
    events.count()

    def pipeline():
        return events.where("host = 'h1'").orderBy("host", "ts")

    spark.conf.set("spark.sparkext.enabled", "false")
    plain = pipeline()
    plain_sorts, plain_seconds, expected = sorts_in(plain), run_time(plain), plain.collect()
    spark.conf.set("spark.sparkext.enabled", "true")
    sparkext.enable(spark)  # the built-in rules
    df = pipeline()
    with_sorts, seconds, rows = sorts_in(df), run_time(df), df.collect()
    assert rows == expected, "sparkext's plan returned other rows, or another order"

    # which rule did what (the plans before and after are in the report too)
    report = str(sparkext.explain(df))
    print(report[report.index("== Rules that ran =="):])
    print(f"Sort nodes: plain Spark {plain_sorts}, sparkext {with_sorts}")
    print(f"run time: plain Spark {plain_seconds:.2f} s, sparkext {seconds:.2f} s; "
          f"the same {len(rows)} rows in the same order")
    events.unpersist()


def main() -> None:
    spark = build_session()
    sort_demo(spark)
    print("\n=== part 2: what the rules do, step by step ===")
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
        bridge_nanos = m["encode_nanos"] + m["python_nanos"] + m["rebuild_nanos"]
        print(f"\nbridge: {m['calls']} call(s), {m['accepted']} rewrite(s) accepted, "
              f"{bridge_nanos / 1e6:.1f} ms in the bridge")
        for name, figures in m["rules"].items():
            print(f"  {name}: ran {figures['invocations']}x, changed the plan "
                  f"{figures['effective']}x, {figures['nanos'] / 1e6:.2f} ms")
    spark.stop()


if __name__ == "__main__":
    main()
