"""TPC-H with sparkext's rules standing in for Catalyst's own.

The 22 queries over TPC-H parquet data (tpchgen-cli, scale factor 1 by default), in one
session, in these modes:

  N  plain Spark
  X  Catalyst's pushdown, filter inference, pruning and sort rules excluded
     (sparkext.catalyst.PUSHDOWN_AND_PRUNING_RULES)
  S  X plus sparkext's built-in rules

N and S are timed interleaved (the order rotates every round), together with N again as
N': the N'/N ratio is the noise floor of the S/N ratio on this machine. Reported per
query: the median wall time of running it to completion (``collect``), S/N and N'/N,
whether Spark considers S's physical plan the same as N's (``SparkPlan.sameResult``:
equal after canonicalization, so conjunct order and expression ids do not count), and
the columns and filters of its file scans in each mode. Targets: S within 1.10x of N in
total, no query slower than 1.25x N.

X shows what sparkext's rules replace. It runs once per query, as a reference: without
any pushdown some queries become cartesian products that would run for hours, so a run
is cancelled after ``--limit`` seconds and reported as "> limit".

    python benchmarks/tpch_rules.py [--scale 1] [--rounds 5] [--limit 60]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
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


def timed_collect(spark, df, limit: float | None) -> float:
    """Seconds to run ``df`` to completion; infinity if cancelled after ``limit``."""
    sc = spark.sparkContext
    group = f"tpch-{time.monotonic_ns()}"
    sc.setJobGroup(group, "tpch benchmark run", interruptOnCancel=True)
    timer = None
    if limit is not None:
        timer = threading.Timer(limit, sc.cancelJobGroup, [group])
        timer.start()
    start = time.perf_counter()
    try:
        df.collect()
        return time.perf_counter() - start
    except Exception:  # noqa: BLE001 - a cancelled job raises from collect
        if limit is not None and time.perf_counter() - start >= limit:
            return float("inf")
        raise
    finally:
        if timer is not None:
            timer.cancel()
        sc.setLocalProperty("spark.jobGroup.id", None)


def fmt(seconds: float, limit: float) -> str:
    return f"> {limit:.0f}" if seconds == float("inf") else f"{seconds:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", default="1")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", nargs="*", default=QUERY_NAMES)
    parser.add_argument("--limit", type=float, default=60.0,
                        help="seconds after which a run in mode X is cancelled")
    args = parser.parse_args()

    print(f"generating TPC-H scale factor {args.scale} (once) ...", flush=True)
    data = tpch_dir(args.scale)
    spark = local_session({"spark.driver.memory": "10g", "spark.sql.shuffle.partitions": "16",
                          "spark.sparkext.strict": "false",
                          "spark.sql.planChangeValidation": "false"})
    sparkext.enable(spark)
    for t in TPCH_TABLES:
        spark.read.parquet(str(data / f"{t}.parquet")).createOrReplaceTempView(t)

    # Reference: scans and plans of every mode, and X timed once (after a warm-up in N).
    scans, same_plan, x_time = {}, {}, {}
    for q in args.queries:
        plans = {}
        for mode in MODES:
            set_mode(spark, mode)
            df = spark.sql(query(q))
            scans[(q, mode)] = file_scans(df)
            plans[mode] = df._jdf.queryExecution().sparkPlan()
        same_plan[q] = plans["N"].sameResult(plans["S"])
        set_mode(spark, "N")
        spark.sql(query(q)).collect()
        set_mode(spark, "X")
        x_time[q] = timed_collect(spark, spark.sql(query(q)), args.limit)
    print("reference runs done", flush=True)

    # N, S and N' interleaved; round 0 warms up and is not counted.
    timed = ["N", "S", "N2"]  # N2 is N again: the N'/N noise floor
    times = {(q, m): [] for q in args.queries for m in timed}
    for r in range(args.rounds + 1):
        for i, q in enumerate(args.queries):
            k = (r + i) % len(timed)
            for mode in timed[k:] + timed[:k]:
                set_mode(spark, mode[0])
                elapsed = timed_collect(spark, spark.sql(query(q)), None)
                if r:
                    times[(q, mode)].append(elapsed)
        print(f"round {r} done", flush=True)

    med = {key: statistics.median(v) for key, v in times.items()}
    print("\n| query | N (s) | S (s) | S/N | N'/N | same plan | X (s), once | "
          "scan columns N/X/S | scan filters N/X/S |")
    print("| --- | ---: | ---: | ---: | ---: | :---: | ---: | --- | --- |")
    for q in args.queries:
        n, s, n2 = med[(q, "N")], med[(q, "S")], med[(q, "N2")]
        cols = "/".join(str(sum(len(sc.columns) for sc in scans[(q, m)])) for m in MODES)
        filt = "/".join(str(sum(len(sc.data_filters) for sc in scans[(q, m)])) for m in MODES)
        print(f"| {q} | {n:.2f} | {s:.2f} | {s / n:.2f} | {n2 / n:.2f} | "
              f"{'yes' if same_plan[q] else 'no'} | {fmt(x_time[q], args.limit)} | "
              f"{cols} | {filt} |")
    tot = {m: sum(med[(q, m)] for q in args.queries) for m in timed}
    finite_x = [q for q in args.queries if x_time[q] != float("inf")]
    print(f"| **total** | {tot['N']:.1f} | {tot['S']:.1f} | {tot['S'] / tot['N']:.2f} | "
          f"{tot['N2'] / tot['N']:.2f} | {sum(same_plan.values())}/{len(args.queries)} | "
          f"{sum(x_time[q] for q in finite_x):.1f} ({len(finite_x)} finished) | | |")

    worst = max(args.queries, key=lambda q: med[(q, "S")] / med[(q, "N")])
    worst_aa = max(args.queries, key=lambda q: med[(q, "N2")] / med[(q, "N")])
    print(f"\nslowest S/N: {worst} at {med[(worst, 'S')] / med[(worst, 'N')]:.2f}x; "
          f"largest N'/N (noise): {worst_aa} at "
          f"{med[(worst_aa, 'N2')] / med[(worst_aa, 'N')]:.2f}x")
    print(f"scale factor {args.scale}, medians of {args.rounds} rounds, interleaved")
    m = sparkext.metrics(spark)
    print(f"bridge: {m['calls']} calls, {m['accepted']} rewrites accepted, "
          f"{m['rejected']} rejected, {m['python_errors']} errors")
    spark.stop()


if __name__ == "__main__":
    main()
