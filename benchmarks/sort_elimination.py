"""What removing redundant sorts is worth, in the everyday notebook case.

Ten million events are sorted by timestamp and cached. Then:

  host_ts     WHERE host = 'h1' ORDER BY host, ts     (host is constant: the order is there)
  hour_ts     ORDER BY date_trunc('hour', ts), ts      (monotonic in ts: the order is there)
  other_key   ORDER BY value                           (control: the sort is needed)
  groupby_k_x GROUP BY minute ORDER BY minute, total   (minute is unique after the grouping:
              total is never consulted, so the sort keeps one key)
  topk_resort ORDER BY value LIMIT 200000, then ORDER BY value again (a top-K's single
              partition is in its order: the re-sort is redundant)

each run to completion with Spark's ``noop`` writer (so the sort must really happen),
plain Spark against sparkext, interleaved (the order alternates every round), medians of
the rounds. Run: ``python benchmarks/sort_elimination.py [--rows N] [--rounds N]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyspark.sql import functions as F  # noqa: E402

import sparkext  # noqa: E402
from sparkext.testing.session import local_session  # noqa: E402

PIPELINES = {
    "host_ts": lambda ev: ev.where("host = 'h1'").orderBy("host", "ts"),
    "hour_ts": lambda ev: ev.orderBy(F.date_trunc("hour", "ts"), "ts"),
    "other_key": lambda ev: ev.orderBy("value"),
    "groupby_k_x": lambda ev: ev.groupBy(F.date_trunc("minute", "ts").alias("minute"))
    .agg(F.sum("value").alias("total")).orderBy("minute", "total"),
    "topk_resort": lambda ev: ev.orderBy("value").limit(200_000).orderBy("value"),
}


def sorts_in(df) -> int:
    """Sort nodes in the optimized plan (not counting the cached plan under a leaf)."""
    count, stack = 0, [df._jdf.queryExecution().optimizedPlan()]
    while stack:
        node = stack.pop()
        count += node.getClass().getSimpleName() == "Sort"
        it = node.children().iterator()
        while it.hasNext():
            stack.append(it.next())
    return count


def run(df) -> float:
    start = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    spark = local_session({"spark.driver.memory": "8g", "spark.sql.shuffle.partitions": "8",
                          "spark.sparkext.strict": "false",
                          "spark.sql.planChangeValidation": "false"})
    sparkext.enable(spark)
    spark.conf.set("spark.sparkext.enabled", "false")
    events = (spark.range(args.rows, numPartitions=8)
              .select(F.timestamp_seconds(F.lit(1_700_000_000) + F.col("id") * 3
                                          + (F.col("id") * 7919 % 3)).alias("ts"),
                      F.concat(F.lit("h"), (F.col("id") * 31 % 4).cast("string")).alias("host"),
                      (F.col("id") * 2654435761 % 1000003).cast("double").alias("value"))
              .orderBy("ts")
              .cache())
    print(f"caching {events.count():,} events sorted by ts ...", flush=True)

    times = {(name, mode): [] for name in PIPELINES for mode in ("plain", "sparkext")}
    sorts = {}
    for r in range(args.rounds + 1):  # the first round warms up and is not counted
        modes = ("plain", "sparkext") if r % 2 == 0 else ("sparkext", "plain")
        for name, build in PIPELINES.items():
            for mode in modes:
                spark.conf.set("spark.sparkext.enabled", str(mode == "sparkext").lower())
                df = build(events)
                sorts[(name, mode)] = sorts_in(df)
                t = run(df)
                if r:
                    times[(name, mode)].append(t)
        print(f"round {r} done", flush=True)

    print("\n| pipeline | Sort nodes plain / sparkext | plain (s) | sparkext (s) | speed-up |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name in PIPELINES:
        plain = statistics.median(times[(name, "plain")])
        ours = statistics.median(times[(name, "sparkext")])
        print(f"| {name} | {sorts[(name, 'plain')]} / {sorts[(name, 'sparkext')]} | "
              f"{plain:.2f} | {ours:.2f} | {plain / ours:.2f}x |")
    print(f"\nrows: {args.rows:,}, rounds: {args.rounds} (medians), interleaved")
    spark.stop()


if __name__ == "__main__":
    main()
