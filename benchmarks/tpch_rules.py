"""TPC-H with sparkext's rules standing in for Catalyst's own.

The 22 queries over TPC-H parquet data (tpchgen-cli, scale factor 1 by default), three
ways in one session, interleaved (the order of the modes rotates every round):

  N  plain Spark
  X  Catalyst's pushdown, filter inference, pruning and sort rules excluded
     (sparkext.catalyst.PUSHDOWN_AND_PRUNING_RULES)
  S  X plus sparkext's built-in rules

Reported per query: the median wall time of running it to completion (``collect``), the
ratios S/N and X/N, and the columns and filters of its file scans in each mode. Targets:
S within 1.10x of N in total, no query slower than 1.25x N.

    python benchmarks/tpch_rules.py [--scale 1] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sparkext  # noqa: E402
from sparkext.catalyst import excluded_rules_conf  # noqa: E402
from sparkext.testing.scans import file_scans  # noqa: E402
from sparkext.testing.session import local_session  # noqa: E402
from tests.conftest import TPCH_TABLES, tpch_dir  # noqa: E402
from tests.tpch import QUERY_NAMES, query  # noqa: E402

MODES = {
    "N": {"spark.sparkext.enabled": "false"},
    "X": {"spark.sparkext.enabled": "false", **excluded_rules_conf()},
    "S": {"spark.sparkext.enabled": "true", **excluded_rules_conf()},
}


def set_mode(spark, mode: str) -> None:
    for key in excluded_rules_conf():
        spark.conf.unset(key)
    for key, value in MODES[mode].items():
        spark.conf.set(key, value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", default="1")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", nargs="*", default=QUERY_NAMES)
    args = parser.parse_args()

    print(f"generating TPC-H scale factor {args.scale} (once) ...", flush=True)
    data = tpch_dir(args.scale)
    spark = local_session({"spark.driver.memory": "10g", "spark.sql.shuffle.partitions": "16",
                          "spark.sparkext.strict": "false",
                          "spark.sql.planChangeValidation": "false"})
    sparkext.enable(spark)
    for t in TPCH_TABLES:
        spark.read.parquet(str(data / f"{t}.parquet")).createOrReplaceTempView(t)

    modes = list(MODES)
    times = {(q, m): [] for q in args.queries for m in modes}
    scans = {}
    for r in range(args.rounds + 1):  # round 0 warms up and is not counted
        for i, q in enumerate(args.queries):
            order = modes[(r + i) % 3:] + modes[:(r + i) % 3]
            for mode in order:
                set_mode(spark, mode)
                df = spark.sql(query(q))
                start = time.perf_counter()
                df.collect()
                elapsed = time.perf_counter() - start
                if r == 0:
                    scans[(q, mode)] = file_scans(df)
                else:
                    times[(q, mode)].append(elapsed)
        print(f"round {r} done", flush=True)

    med = {k: statistics.median(v) for k, v in times.items()}
    print("\n| query | N (s) | X (s) | S (s) | S/N | X/N | scan columns N/X/S "
          "| scan filters N/X/S |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for q in args.queries:
        n, x, s = (med[(q, m)] for m in modes)
        cols = "/".join(str(sum(len(sc.columns) for sc in scans[(q, m)])) for m in modes)
        filt = "/".join(str(sum(len(sc.data_filters) for sc in scans[(q, m)])) for m in modes)
        print(f"| {q} | {n:.2f} | {x:.2f} | {s:.2f} | {s / n:.2f} | {x / n:.2f} | {cols} "
              f"| {filt} |")
    tot = {m: sum(med[(q, m)] for q in args.queries) for m in modes}
    worst = max(args.queries, key=lambda q: med[(q, "S")] / med[(q, "N")])
    print(f"| **total** | {tot['N']:.1f} | {tot['X']:.1f} | {tot['S']:.1f} | "
          f"{tot['S'] / tot['N']:.2f} | {tot['X'] / tot['N']:.2f} | | |")
    print(f"\nslowest S/N: {worst} at {med[(worst, 'S')] / med[(worst, 'N')]:.2f}x; "
          f"scale factor {args.scale}, medians of {args.rounds} rounds, interleaved")
    m = sparkext.metrics(spark)
    print(f"bridge: {m['calls']} calls, {m['accepted']} rewrites accepted, "
          f"{m['rejected']} rejected, {m['python_errors']} errors")
    spark.stop()


if __name__ == "__main__":
    main()
