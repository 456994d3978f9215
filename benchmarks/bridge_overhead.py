"""What the bridge costs Catalyst: optimization-phase time with and without it.

First ``--warmup`` passes over all the queries in every mode, untimed, so that the JIT has
compiled the shim's code as it would in a session that has run a few dozen queries. Then
``--rounds`` timed runs (at least 20), in one process: a run optimizes each TPC-H query
once in every mode, the modes interleaved (their order reverses from query to query and
from run to run). Each mode has a session of its own, its rules registered once:

  off    sparkext's rule is installed but ``spark.sparkext.enabled=false``
  on     one Python rule, ``identity`` (returns the plan unchanged): encode, one round
         trip to Python, run the rule, answer "unchanged". Decoding is lazy: a rule that
         reads nothing has nothing decoded (not even the body of the request parsed)
  read   one Python rule that reads every node and expression, then returns the plan:
         the same, plus decoding the whole mirror
  copy   one Python rule that copies every node (the JVM rebuilds every node from
         Catalyst's constructors and validates the plan)
  worker the ``on`` rule, ``identity``, in the rule worker the JVM starts for
         ``spark.sparkext.rules`` (sparkext/worker.py) instead of this process: the
         session calls no ``sparkext.enable``. Compare it with ``on``:
         ``--modes on worker`` (the worker is started once, in the warm-up)

Reported: Catalyst's optimization phase (QueryPlanningTracker, whole milliseconds) per
mode and their ratios: each query's median, the sum of those medians, and the median of
the runs' totals (the headline: each query's phase is a whole number of milliseconds, so
a median of one query's samples rounds the same way every time, while a run's total
sums 22 roundings that cancel out); and the median of one bridge call split into
encode, Python (the round trip, for ``on`` and ``read``) and rebuild+validate,
from the bridge's own nanosecond counters; with ``worker``, its added time per call
(encode + Python) against ``on``'s, and their ratio. Run: ``make bench`` or
``python benchmarks/bridge_overhead.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sparkext  # noqa: E402
from sparkext import Batch, Once  # noqa: E402
from sparkext.testing.rules import copy_nodes, read_everything  # noqa: E402
from sparkext.testing.session import local_session  # noqa: E402
from tests.conftest import TPCH_TABLES, tpch_dir  # noqa: E402
from tests.tpch import QUERY_NAMES, query  # noqa: E402


def identity(plan):
    return plan


#: What the rule worker runs in ``worker`` mode (``spark.sparkext.rules`` names it).
WORKER_BATCHES = (Batch("worker", Once(), (identity,)),)


def optimize_once(spark, sql: str) -> tuple[float, dict]:
    sparkext.reset_metrics(spark)
    qe = spark.sql(sql)._jdf.queryExecution()
    qe.optimizedPlan()
    phase = qe.tracker().phases().get("optimization").get()
    m = sparkext.metrics(spark)
    # this benchmark reports milliseconds; the metrics count nanoseconds
    m |= {k[:-len("_nanos")] + "_ms": m[k] / 1e6 for k in list(m) if k.endswith("_nanos")}
    return float(phase.durationMs()), m


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=10,
                        help="passes over all the queries in every mode before any is timed")
    parser.add_argument("--scale", default="0.1")
    parser.add_argument("--queries", nargs="*", default=QUERY_NAMES)
    parser.add_argument("--modes", nargs="*", default=["off", "on", "read", "copy"],
                        choices=["off", "on", "read", "copy", "worker"])
    parser.add_argument("--timeout-ms", default="10000",
                        help="spark.sparkext.timeoutMs (0: no limit)")
    args = parser.parse_args()

    worker_conf = {}
    if "worker" in args.modes:
        # The worker inherits the driver JVM's environment, which inherits this one.
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
        worker_conf = {"spark.sparkext.rules": "benchmarks.bridge_overhead:WORKER_BATCHES",
                       "spark.sparkext.python": sys.executable}
    spark = local_session({"spark.sparkext.strict": "false",
                          "spark.sql.planChangeValidation": "false",
                          "spark.sparkext.timeoutMs": args.timeout_ms, **worker_conf})
    data = tpch_dir(args.scale)

    # Each rule runs once per call: copy_nodes never reaches a fixed point (it always
    # returns new objects), and the point is one rebuild, not a hundred.
    modes = {"off": None, "on": identity, "read": read_everything, "copy": copy_nodes,
             "worker": identity}
    modes = {m: rule for m, rule in modes.items() if m in args.modes}
    # One session per mode, its rules registered once, as an application does: registering
    # before every query would compile the mirror again right before the timed phase.
    # "off" registers the identity rule and switches sparkext off.
    sessions = {}
    for mode, rule in modes.items():
        session = spark.newSession()
        for t in TPCH_TABLES:
            session.read.parquet(str(data / f"{t}.parquet")).createOrReplaceTempView(t)
        if mode != "worker":  # the worker serves every session without a registration
            sparkext.enable(session, batches=[Batch(mode, Once(), (rule or identity,))])
        session.conf.set("spark.sparkext.enabled", str(rule is not None).lower())
        sessions[mode] = session
    per_call = {"encode_ms": [], "python_ms": [], "python_read_ms": [], "rebuild_ms": [],
                "validate_ms": []}
    added = {"on": [], "worker": []}  # encode + Python per call
    payload = []

    def run(mode: str, sql: str) -> tuple[float, dict]:
        return optimize_once(sessions[mode], sql)

    for _ in range(args.warmup):
        for name in args.queries:
            for mode in modes:
                run(mode, query(name))
    times = {name: {m: [] for m in modes} for name in args.queries}
    totals = {m: [] for m in modes}  # one run: all the queries once, per mode
    for r in range(args.rounds):
        total = dict.fromkeys(modes, 0.0)
        for i, name in enumerate(args.queries):
            sql = query(name)
            order = list(modes) if (r + i) % 2 == 0 else list(reversed(modes))
            for mode in order:
                ms, m = run(mode, sql)
                times[name][mode].append(ms)
                total[mode] += ms
                if mode == "on" and m["calls"]:
                    for k in ("encode_ms", "python_ms"):
                        per_call[k].append(m[k] / m["calls"])
                    payload.append(m["payload_bytes"] / m["calls"])
                if mode in added and m["calls"]:
                    added[mode].append((m["encode_ms"] + m["python_ms"]) / m["calls"])
                if mode == "read" and m["calls"]:
                    per_call["python_read_ms"].append(m["python_ms"] / m["calls"])
                if mode == "copy" and m["calls"]:
                    per_call["rebuild_ms"].append(m["rebuild_ms"] / m["calls"])
                    per_call["validate_ms"].append(m["validate_ms"] / m["calls"])
        for mode in modes:
            totals[mode].append(total[mode])
        print(f"run {r + 1}: " + "  ".join(f"{m} {total[m]:.0f} ms" for m in modes), flush=True)

    def ratio(a, b):
        return a / b if b else float("nan")

    titles = {"off": "off", "on": "on: identity rule", "read": "read: every node read",
              "copy": "copy every node", "worker": "worker: identity rule"}
    # Every mode's milliseconds; each mode but off also as a ratio to off (when off ran).
    ratios = [m for m in modes if m != "off" and "off" in modes]

    def row(label, values):
        cells = [f"{values[m]:.0f}" for m in modes]
        cells += [f"{ratio(values[m], values['off']):.2f}" for m in ratios]
        print(f"| {label} | " + " | ".join(cells) + " |")

    header = [f"{titles[m]} (ms)" for m in modes] + [f"{m}/off" for m in ratios]
    print("\n| query | " + " | ".join(header) + " |")
    print("| --- |" + " ---: |" * len(header))
    medians = {name: {m: statistics.median(v) for m, v in t.items()} for name, t in times.items()}
    for name in args.queries:
        row(name, medians[name])
    row(f"sum of the {len(args.queries)} medians",
        {m: sum(medians[n][m] for n in args.queries) for m in modes})
    row(f"**median of the {args.rounds} runs' totals**",
        {m: statistics.median(v) for m, v in totals.items()})
    med = {k: statistics.median(v) for k, v in per_call.items() if v}
    parts = [", ".join(f"{k[:-3]} {v:.3f}" for k, v in med.items())]
    if "encode_ms" in med:
        parts.append(f"added per call (encode + python) "
                     f"{med['encode_ms'] + med['python_ms']:.3f}")
        parts.append(f"payload {statistics.median(payload) / 1024:.1f} KiB")
    if "python_read_ms" in med and "encode_ms" in med:
        parts.append(f"reading every node {med['encode_ms'] + med['python_read_ms']:.3f}")
    if med:  # no bridge calls when only "off" ran
        print("\nmedian of one bridge call (ms): " + "; ".join(parts))
    if added["on"] and added["worker"]:
        on, worker = statistics.median(added["on"]), statistics.median(added["worker"])
        print(f"added per call (encode + python), median: in-process {on:.3f} ms, "
              f"rule worker {worker:.3f} ms, worker/in-process {ratio(worker, on):.2f} "
              "(target: at most 1.2)")
    print(f"cores: {os.cpu_count()}, rounds: {args.rounds}, warm-up passes: {args.warmup}, "
          f"scale factor: {args.scale}, timeoutMs: {args.timeout_ms}")
    spark.stop()


if __name__ == "__main__":
    main()
