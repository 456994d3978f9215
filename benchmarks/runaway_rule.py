"""A runaway rule against an unrelated session: latency at baseline and while it runs.

Issue 16 item 5: six queries whose rule never returns made an unrelated session's median
query 6.4x slower, each abandoned call spinning on. Here the runaway rule is a batch that
never converges (it returns a new, equal plan every round, so it returns to the executor
between rounds, where a cancel stops it). Printed:

  baseline   the unrelated session's median query latency, nothing else running
  runaway    the same while 6 threads (one session, its rule the runaway) run queries,
             from the moment they start: the first timeout of their registration opens
             its circuit breaker, the abandoned calls are cancelled, later queries skip
             Python (docs/design.md, "Timeouts")
  ratio      runaway / baseline (target: at most 1.2)

and the runaway session's counters (timeouts, breaker skips) and the Python calls still
running at the end. Run: ``python benchmarks/runaway_rule.py [--queries N] [--timeout-ms T]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sparkext  # noqa: E402
from sparkext import Batch, FixedPoint, rule  # noqa: E402
from sparkext.testing.session import local_session  # noqa: E402


@rule
def runaway(plan):
    return dataclasses.replace(plan)


def unrelated_query(spark) -> float:
    start = time.perf_counter()
    spark.range(200_000, numPartitions=2).selectExpr("id % 7 AS k", "id").where("id > 5") \
        .groupBy("k").count().collect()
    return time.perf_counter() - start


def median_latency(spark, n: int) -> float:
    return statistics.median(unrelated_query(spark) for _ in range(n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--timeout-ms", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=6)
    args = parser.parse_args()

    spark = local_session({"spark.sql.shuffle.partitions": "4",
                           "spark.sparkext.strict": "false"})
    unrelated = spark.newSession()
    sparkext.enable(unrelated)
    for _ in range(5):  # warm-up: JIT, py4j connections, the channel's connections
        unrelated_query(unrelated)
    baseline = median_latency(unrelated, args.queries)

    victim = spark.newSession()
    victim.conf.set("spark.sparkext.strict", "false")
    victim.conf.set("spark.sparkext.timeoutMs", str(args.timeout_ms))
    handle = sparkext.enable(victim, batches=[Batch("runaway", FixedPoint(10**9), (runaway,))])
    stop = threading.Event()

    def run_queries() -> None:
        while not stop.is_set():
            victim.range(1000).where("id > 3").selectExpr("id * 2 AS x").collect()

    threads = [threading.Thread(target=run_queries, daemon=True) for _ in range(args.threads)]
    for t in threads:
        t.start()
    during = median_latency(unrelated, args.queries)
    stop.set()
    for t in threads:
        t.join()
    m = sparkext.metrics(victim)

    print(f"baseline  median {baseline * 1000:8.1f} ms over {args.queries} queries")
    print(f"runaway   median {during * 1000:8.1f} ms over {args.queries} queries "
          f"({args.threads} threads, timeoutMs={args.timeout_ms})")
    print(f"ratio     {during / baseline:.2f} (target <= 1.2)")
    print(f"runaway session: calls={m['calls']} timeouts={m['timeouts']} "
          f"skipped_breaker={m['skipped_breaker']} warnings={len(m['warnings'])}; "
          f"Python calls still running: {handle.bridge.running_calls()}")
    spark.stop()


if __name__ == "__main__":
    main()
