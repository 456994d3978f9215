"""A runaway rule against an unrelated session: latency at baseline and while it runs.

Issue 16 item 5: six queries whose rule never returns made an unrelated session's median
query 6.4x slower, each abandoned call spinning on. Here the runaway rule is a batch that
never converges (it returns a new, equal plan every round, so it returns to the executor
between rounds, where a cancel stops it). Printed:

  baseline   the unrelated session's median query latency, nothing else running
  in flight  the same while 6 queries of another session (one registration, its rule
             the runaway) wait for their timeout: the rule runs meanwhile, as any rule
             may, and competes for the GIL
  after      the same once those 6 queries have returned: their abandoned calls are
             cancelled (before this change, each kept a Python thread spinning)
  ratio      after / baseline (target: at most 1.2), and in flight / baseline

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
    queries = [threading.Thread(target=lambda: victim.range(1000).where("id > 3").collect(),
                                daemon=True) for _ in range(args.threads)]
    for t in queries:
        t.start()
    in_flight = []
    while any(t.is_alive() for t in queries):
        in_flight.append(unrelated_query(unrelated))
    after = median_latency(unrelated, args.queries)
    m = sparkext.metrics(victim)

    print(f"baseline   median {baseline * 1000:8.1f} ms over {args.queries} queries")
    print(f"in flight  median {statistics.median(in_flight) * 1000:8.1f} ms over "
          f"{len(in_flight)} queries (the {args.threads} runaway calls before their "
          f"timeoutMs={args.timeout_ms}: the rule runs, as any rule may)")
    print(f"after      median {after * 1000:8.1f} ms over {args.queries} queries "
          f"(the {args.threads} queries returned, their calls abandoned)")
    print(f"ratio      {after / baseline:.2f} after / baseline (target <= 1.2); "
          f"{statistics.median(in_flight) / baseline:.2f} in flight / baseline")
    print(f"runaway session: calls={m['calls']} timeouts={m['timeouts']} "
          f"skipped_breaker={m['skipped_breaker']} warnings={len(m['warnings'])}; "
          f"Python calls still running: {handle.bridge.running_calls()}")
    spark.stop()


if __name__ == "__main__":
    main()
