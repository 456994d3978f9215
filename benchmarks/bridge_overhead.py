"""What the bridge costs Catalyst: optimization-phase time with and without it.

For each TPC-H query, in one process, interleaved (the order of the two modes alternates
every round), at least 20 rounds each:

  off    sparkext's rule is installed but ``spark.sparkext.enabled=false``
  on     one Python rule, ``identity`` (returns the plan unchanged): encode, one
         callback, decode in Python, run the rule, answer "unchanged"
  copy   one Python rule that copies every node (the JVM rebuilds every node from
         Catalyst's constructors and validates the plan)

Reported: the median optimization phase (Catalyst's QueryPlanningTracker, whole
milliseconds) per mode, their ratio, and the median of one bridge call split into encode,
Python (the callback round trip) and rebuild+validate, from the bridge's own nanosecond
counters. Run: ``make bench`` or ``python benchmarks/bridge_overhead.py [--rounds N]``.
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
from sparkext.testing.rules import copy_nodes  # noqa: E402
from sparkext.testing.session import local_session  # noqa: E402
from tests.conftest import TPCH_TABLES, tpch_dir  # noqa: E402
from tests.tpch import QUERY_NAMES, query  # noqa: E402


def identity(plan):
    return plan


def optimize_once(spark, sql: str) -> tuple[float, dict]:
    sparkext.reset_metrics(spark)
    qe = spark.sql(sql)._jdf.queryExecution()
    qe.optimizedPlan()
    phase = qe.tracker().phases().get("optimization").get()
    return float(phase.durationMs()), sparkext.metrics(spark)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--scale", default="0.1")
    parser.add_argument("--queries", nargs="*", default=QUERY_NAMES)
    parser.add_argument("--timeout-ms", default="10000",
                        help="spark.sparkext.timeoutMs (0: call Python on the optimizer's "
                             "own thread, no timeout)")
    args = parser.parse_args()

    spark = local_session({"spark.sparkext.strict": "false",
                          "spark.sql.planChangeValidation": "false",
                          "spark.sparkext.timeoutMs": args.timeout_ms})
    data = tpch_dir(args.scale)
    for t in TPCH_TABLES:
        spark.read.parquet(str(data / f"{t}.parquet")).createOrReplaceTempView(t)

    # Each rule runs once per call: copy_nodes never reaches a fixed point (it always
    # returns new objects), and the point is one rebuild, not a hundred.
    modes = {"off": None, "on": identity, "copy": copy_nodes}
    handles = {}
    rows = []
    per_call = {"encode_ms": [], "python_ms": [], "rebuild_ms": [], "validate_ms": []}
    payload = []
    for name in args.queries:
        sql = query(name)
        times = {m: [] for m in modes}
        for r in range(args.rounds + 2):  # two warm-up rounds, not counted
            order = list(modes) if r % 2 == 0 else list(reversed(modes))
            for mode in order:
                rule = modes[mode]
                if rule is None:
                    spark.conf.set("spark.sparkext.enabled", "false")
                else:
                    spark.conf.set("spark.sparkext.enabled", "true")
                    handles[mode] = sparkext.enable(
                        spark, batches=[Batch(mode, Once(), (rule,))])
                ms, m = optimize_once(spark, sql)
                if r < 2:
                    continue
                times[mode].append(ms)
                if mode == "on" and m["calls"]:
                    for k in ("encode_ms", "python_ms"):
                        per_call[k].append(m[k] / m["calls"])
                    payload.append(m["payload_bytes"] / m["calls"])
                if mode == "copy" and m["calls"]:
                    per_call["rebuild_ms"].append(m["rebuild_ms"] / m["calls"])
                    per_call["validate_ms"].append(m["validate_ms"] / m["calls"])
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append((name, med["off"], med["on"], med["copy"]))
        print(f"{name}: off {med['off']:.0f} ms  on {med['on']:.0f} ms  "
              f"copy {med['copy']:.0f} ms", flush=True)

    spark.conf.set("spark.sparkext.enabled", "true")
    total = {k: sum(r[i] for r in rows) for i, k in enumerate(("off", "on", "copy"), 1)}
    print("\n| query | off (ms) | on: identity rule (ms) | on/off | copy every node (ms) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, off, on, copy in rows:
        ratio = on / off if off else float("nan")
        print(f"| {name} | {off:.0f} | {on:.0f} | {ratio:.2f} | {copy:.0f} |")
    print(f"| **all 22** | {total['off']:.0f} | {total['on']:.0f} | "
          f"{total['on'] / total['off']:.2f} | {total['copy']:.0f} |")
    med = {k: statistics.median(v) for k, v in per_call.items() if v}
    print("\nmedian of one bridge call (ms): "
          + ", ".join(f"{k[:-3]} {v:.3f}" for k, v in med.items())
          + f"; added per call (encode + python) {med['encode_ms'] + med['python_ms']:.3f}; "
          f"payload {statistics.median(payload) / 1024:.1f} KiB")
    print(f"cores: {os.cpu_count()}, rounds: {args.rounds}, scale factor: {args.scale}, "
          f"timeoutMs: {args.timeout_ms}")
    spark.stop()


if __name__ == "__main__":
    main()
