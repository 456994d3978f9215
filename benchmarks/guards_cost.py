"""What the built-in guards cost a query's planning, on TPC-H and TPC-DS.

Guards are fixed when a SparkContext starts and no session can switch them off, so the two
modes are two driver processes (each a JVM of its own), driven from here in turn:

  without   plain Spark (the sparkext extension loaded, no guard set)
  with      the three built-in guards on, with limits no query reaches, so that each
            judges every query and refuses none: require_partition_filters on every table
            (``*``), limit_scans (bytes, files and partitions), limit_cartesian_joins

A run plans every query once in each mode, the mode going first alternating from query to
query and run to run; a query's time is Spark's planning phase (``executedPlan``, its
subqueries and the strategies included, after the optimized plan is forced apart), the
guard worker's call, the listing of the files and Catalyst's join estimates included. Per
suite: the median over the runs of the total planning time of each mode, the median per
query of what the guards add, and, from the ``with`` driver's metrics, the time per planning
unit the JVM spent judging (``guard_nanos``) and each guard spent in Python.

TPC-H: the 22 queries over parquet at ``--scale`` (temp views; files listed and counted).
TPC-DS: the plan-stability queries over empty tables with injected statistics
(tests/tpcds): no files, Catalyst's estimates as large as the real tables'.

    nice python benchmarks/guards_cost.py [--rounds 9] [--warmup 2] [--scale 0.01]
        [--suites tpch tpcds]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TPCDS_DIR = ROOT / "tests" / "tpcds"
TPCDS_DB = "tpcds_guards_cost"
#: Limits no query of either suite reaches: every guard judges, none refuses.
NEVER = str(2**62)
GUARDS = {
    "spark.sparkext.guards.partitionFilter.tables": "*",
    "spark.sparkext.guards.maxScan.bytes": NEVER,
    "spark.sparkext.guards.maxScan.files": NEVER,
    "spark.sparkext.guards.maxScan.partitions": NEVER,
    "spark.sparkext.guards.cartesian.bytes": NEVER,
}


def queries(suite: str) -> dict[str, str]:
    from tests.tpch import QUERY_NAMES, query

    if suite == "tpch":
        return {n: query(n) for n in QUERY_NAMES}
    return {p.stem: p.read_text() for p in sorted((TPCDS_DIR / "queries").glob("q*.sql"))}


# -- a driver (child process) ---------------------------------------------------------------

def driver(mode: str, scale: str) -> None:
    """Sets up both suites, then answers ``suite query`` lines on stdin with the planning
    time in ms, and ``metrics`` with the guards' figures (then resets them)."""
    import sparkext
    from sparkext.testing.catalog import create_empty_tables
    from sparkext.testing.session import local_session
    from tests.conftest import TPCH_TABLES, tpch_dir
    from tests.tpcds.stats import STATS

    conf = {"spark.sparkext.strict": "false", "spark.sparkext.python": sys.executable}
    spark = local_session({**conf, **(GUARDS if mode == "with" else {})})
    sessions = {"tpch": spark.newSession(), "tpcds": spark.newSession()}
    data = tpch_dir(scale)
    for t in TPCH_TABLES:
        sessions["tpch"].read.parquet(str(data / f"{t}.parquet")).createOrReplaceTempView(t)
    create_empty_tables(sessions["tpcds"], (TPCDS_DIR / "schema.sql").read_text(), TPCDS_DB,
                        STATS)
    sessions["tpcds"].catalog.setCurrentDatabase(TPCDS_DB)
    texts = {s: queries(s) for s in sessions}
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[0] == "metrics":
            figures = {s: sparkext.metrics(session) for s, session in sessions.items()}
            for session in sessions.values():
                sparkext.reset_metrics(session)
            print(json.dumps(figures), flush=True)
            continue
        suite, name = words
        qe = sessions[suite].sql(texts[suite][name])._jdf.queryExecution()
        qe.optimizedPlan()
        start = time.perf_counter()
        qe.executedPlan()
        print(f"{(time.perf_counter() - start) * 1000:.3f}", flush=True)


# -- the benchmark --------------------------------------------------------------------------

class Driver:
    def __init__(self, mode: str, scale: str):
        self.mode = mode
        # The guard worker the driver's JVM starts imports this checkout's sparkext.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--driver", mode, "--scale", scale],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)

    def ready(self) -> None:
        while (line := self.ask(None)) != "ready":
            if not line:
                raise RuntimeError(f"the {self.mode} driver exited")

    def ask(self, command: str | None) -> str:
        if command is not None:
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def stop(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=120)


def benchmark(args: argparse.Namespace) -> None:
    from tests.conftest import tpch_dir

    tpch_dir(args.scale)  # generated once, here: not by both drivers at once
    drivers = {m: Driver(m, args.scale) for m in ("without", "with")}
    try:
        for d in drivers.values():
            d.ready()
        for suite in args.suites:
            run_suite(suite, drivers, args)
    finally:
        for d in drivers.values():
            d.stop()


def run_suite(suite: str, drivers: dict[str, Driver], args: argparse.Namespace) -> None:
    names = list(queries(suite))
    times: dict[str, dict[str, list[float]]] = {m: {n: [] for n in names} for m in drivers}
    drivers["with"].ask("metrics")  # (resets them: the timed runs' figures only)
    for r in range(args.warmup + args.rounds):
        if r == args.warmup and r > 0:
            drivers["with"].ask("metrics")
        for i, name in enumerate(names):
            order = ["without", "with"] if (i + r) % 2 == 0 else ["with", "without"]
            for mode in order:
                ms = float(drivers[mode].ask(f"{suite} {name}"))
                if r >= args.warmup:
                    times[mode][name].append(ms)
    figures = json.loads(drivers["with"].ask("metrics"))[suite]
    report(suite, names, times, figures, args.rounds)


def report(suite: str, names: list[str], times: dict, figures: dict, rounds: int) -> None:
    totals = {m: statistics.median(sum(times[m][n][r] for n in names) for r in range(rounds))
              for m in times}
    added = [statistics.median(times["with"][n]) - statistics.median(times["without"][n])
             for n in names]
    judged = max((g["judged"] for g in figures["guards"].values()), default=0)
    print(f"\n{suite}: {len(names)} queries, {rounds} interleaved runs (median of the runs)")
    print(f"  planning, all queries: without guards {totals['without']:.1f} ms, with "
          f"{totals['with']:.1f} ms ({totals['with'] / totals['without']:.2f}x)")
    print(f"  added per query: median {statistics.median(added):.2f} ms, max "
          f"{max(added):.2f} ms ({names[added.index(max(added))]})")
    if judged:
        per = {k: figures[f"guard{k}_nanos"] / judged / 1e6 for k in ("", "_facts", "_call")}
        print(f"  per planning unit judged ({judged}): {per['']:.2f} ms in all: listing the "
              f"files {per['_facts']:.2f} ms, the worker's call {per['_call']:.2f} ms (the "
              f"rest, {per[''] - per['_facts'] - per['_call']:.2f} ms: encoding the plan, "
              "reading the answer); in the guards, in Python:")
        for name, g in figures["guards"].items():
            print(f"    {name}: {g['nanos'] / g['judged'] / 1e6:.3f} ms, refused "
                  f"{g['refused_queries']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--scale", default="0.01")
    parser.add_argument("--suites", nargs="*", default=["tpch", "tpcds"],
                        choices=["tpch", "tpcds"])
    parser.add_argument("--driver", choices=["with", "without"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.driver:
        driver(args.driver, args.scale)
    else:
        benchmark(args)


if __name__ == "__main__":
    main()
