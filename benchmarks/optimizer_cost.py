"""What sparkext's built-in rules cost Catalyst's optimization phase, against Catalyst's own.

Two suites: the 22 TPC-H queries (parquet at ``--scale``, temp views) and the TPC-DS
queries of the plan-stability suite (tests/tpcds: empty tables with injected
statistics). Five modes, each in a session of its own, its rules registered once:

  native    plain Spark (sparkext installed, ``spark.sparkext.enabled=false``)
  excluded  Catalyst's pushdown, inference, pruning and sort rules excluded
            (sparkext.catalyst.PUSHDOWN_AND_PRUNING_RULES), no sparkext
  ontop     plain Spark + ``sparkext.enable(spark)``: nothing excluded
  replace   those Catalyst rules excluded + sparkext's built-in rules
  floor     those Catalyst rules excluded + one Python rule that reads every node and
            expression and answers "unchanged" (sparkext.testing.rules.read_everything)

``floor`` is what any Python rules in place of Catalyst's cost when they read each plan
whole, whatever they compute: encoding, the round trip and decoding every node. It is a
lower bound of ``replace`` on this bridge, reported next to it (docs/performance.md, "The
floor").

``--warmup`` untimed passes over every query in every mode, then ``--rounds`` timed runs;
a run optimizes each query once in every mode, the modes' order rotating from query to
query and run to run. Headline: the median of the runs' totals of the optimization phase
(QueryPlanningTracker), per mode and suite, and the ratios ontop/native (target <= 1.10)
and replace/native (target <= 1.00).

Also reported, per suite, from Catalyst's own rule metering (``tracker().rules()``, the
last timed run): the time of sparkext's rule, ``io.sparkext.PythonRules(once)``, and of
the Catalyst rules it duplicates; per optimizer invocation of sparkext's rule that made
no call to Python, its median time: apart for the JVM's skip (target <= 0.02 ms) and for
the sort rules' pre-check (a Sort they cannot change, ``skipped_precheck``); bridge calls,
skips and Python time per call (sparkext.metrics); and, when the session's metrics have a
``rules`` key, each rule's invocations, effective invocations and time.

``--profile N`` instead profiles (cProfile) Python answering the N largest TPC-DS
requests of replace mode, and prints the top entries; ``--subqueries`` measures what the
calls for subquery plans cost and whether the rules change those plans. Both answer again
the requests recorded from a real session of the mode. ``--record DIR`` writes those
requests, per suite and mode (``DIR/tpcds-replace.json``: query -> requests), for
benchmarks/replay_instructions.py, which compares checkouts by the instructions Python
runs to answer them.

    nice python benchmarks/optimizer_cost.py [--rounds 15] [--warmup 5] [--scale 0.1]
        [--suites tpch tpcds] [--modes native excluded ontop replace] [--queries q01 ...]
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import io
import json
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

from py4j.java_gateway import JavaObject
from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sparkext  # noqa: E402
from sparkext.bridge import RuleBridge, split_by_position  # noqa: E402
from sparkext.catalyst import PUSHDOWN_AND_PRUNING_RULES, excluded_rules_conf  # noqa: E402
from sparkext.optimizer import Batch, Once, Rule  # noqa: E402
from sparkext.plan import LogicalPlan  # noqa: E402
from sparkext.rules import builtin_batches  # noqa: E402
from sparkext.session import Enabled  # noqa: E402
from sparkext.testing.catalog import create_empty_tables  # noqa: E402
from sparkext.testing.rules import read_everything  # noqa: E402
from sparkext.testing.session import local_session  # noqa: E402
from tests.conftest import TPCH_TABLES, tpch_dir  # noqa: E402
from tests.tpch import QUERY_NAMES, query  # noqa: E402

TPCDS_DIR = ROOT / "tests" / "tpcds"
TPCDS_DB = "tpcds_optimizer_cost"
SPARKEXT_RULE = "io.sparkext.PythonRules(once)"
# how the bridge's answer for an unchanged plan begins
UNCHANGED_PREFIX = '{"unchanged":true'
MODES: dict[str, dict[str, str]] = {
    "native": {"spark.sparkext.enabled": "false"},
    "excluded": {"spark.sparkext.enabled": "false", **excluded_rules_conf()},
    "ontop": {"spark.sparkext.enabled": "true"},
    "replace": {"spark.sparkext.enabled": "true", **excluded_rules_conf()},
    "floor": {"spark.sparkext.enabled": "true", **excluded_rules_conf()},
}
#: the rules a mode runs instead of sparkext's built-in ones
MODE_BATCHES: dict[str, tuple[Batch, ...]] = {
    "floor": (Batch("read", Once(), (Rule("read_everything", read_everything),)),),
}
CATALYST_DUPLICATED = frozenset(PUSHDOWN_AND_PRUNING_RULES)


def tpcds_queries() -> dict[str, str]:
    return {p.stem: p.read_text() for p in sorted((TPCDS_DIR / "queries").glob("q*.sql"))}


def suite_queries(suite: str, chosen: list[str] | None) -> dict[str, str]:
    qs = {n: query(n) for n in QUERY_NAMES} if suite == "tpch" else tpcds_queries()
    return {n: q for n, q in qs.items() if not chosen or n in chosen}


def new_session(spark: SparkSession, suite: str, scale: str, mode: str
                ) -> tuple[SparkSession, Enabled]:
    session = spark.newSession()
    if suite == "tpch":
        data = tpch_dir(scale)
        for t in TPCH_TABLES:
            session.read.parquet(str(data / f"{t}.parquet")).createOrReplaceTempView(t)
    else:
        session.catalog.setCurrentDatabase(TPCDS_DB)
    enabled = sparkext.enable(session, batches=MODE_BATCHES.get(mode))
    for key, value in MODES[mode].items():
        session.conf.set(key, value)
    return session, enabled


def rule_times(qe: JavaObject) -> dict[str, tuple[int, int, int]]:
    """Catalyst's metering of this query's optimization: rule -> (nanos, invocations,
    effective invocations)."""
    out = {}
    it = qe.tracker().rules().iterator()
    while it.hasNext():
        entry = it.next()
        s = entry._2()
        out[entry._1()] = (s.totalTimeNs(), s.numInvocations(), s.numEffectiveInvocations())
    return out


def optimize_once(session: SparkSession, sql: str) -> tuple[float, dict, dict]:
    sparkext.reset_metrics(session)
    qe = session.sql(sql)._jdf.queryExecution()
    qe.optimizedPlan()
    ms = float(qe.tracker().phases().get("optimization").get().durationMs())
    return ms, sparkext.metrics(session), rule_times(qe)


def benchmark(spark: SparkSession, suite: str, args: argparse.Namespace) -> None:
    queries = suite_queries(suite, args.queries)
    modes = [m for m in MODES if m in args.modes]
    sessions = {m: new_session(spark, suite, args.scale, m)[0] for m in modes}
    for _ in range(args.warmup):
        for sql in queries.values():
            for m in modes:
                optimize_once(sessions[m], sql)
    totals: dict[str, list[float]] = {m: [] for m in modes}
    last: dict[str, list[tuple[dict, dict]]] = {m: [] for m in modes}
    # per query that made no call: the JVM's time per invocation, by why it made none
    skip_us: list[float] = []
    precheck_us: list[float] = []
    for r in range(args.rounds):
        total = dict.fromkeys(modes, 0.0)
        final = r == args.rounds - 1
        for i, sql in enumerate(queries.values()):
            k = (r + i) % len(modes)
            for m in modes[k:] + modes[:k]:
                ms, metrics, rules = optimize_once(sessions[m], sql)
                total[m] += ms
                if final:
                    last[m].append((metrics, rules))
                if m in ("ontop", "replace") and metrics["calls"] == 0 and SPARKEXT_RULE in rules:
                    nanos, n, _ = rules[SPARKEXT_RULE]
                    prechecked = metrics.get("skipped_precheck", 0) > 0
                    (precheck_us if prechecked else skip_us).append(nanos / n / 1e3)
        for m in modes:
            totals[m].append(total[m])
        print(f"{suite} run {r + 1}: " + "  ".join(f"{m} {total[m]:.0f} ms" for m in modes),
              flush=True)
    report(suite, len(queries), modes, totals, last, skip_us, precheck_us)


def report(suite: str, n: int, modes: list[str], totals: dict[str, list[float]],
           last: dict[str, list[tuple[dict, dict]]], skip_us: list[float],
           precheck_us: list[float]) -> None:
    med = {m: statistics.median(v) for m, v in totals.items()}
    print(f"\n### {suite}: {n} queries, median of {len(next(iter(totals.values())))} runs' "
          "totals (optimization phase, ms)\n")
    print("| mode | ms | / native |\n| --- | ---: | ---: |")
    for m in modes:
        ratio = f"{med[m] / med['native']:.2f}" if "native" in med else ""
        print(f"| {m} | {med[m]:.0f} | {ratio} |")
    for m in ("ontop", "replace"):
        if m in med and "native" in med:
            target = 1.10 if m == "ontop" else 1.00
            print(f"{m}/native = {med[m] / med['native']:.2f} (target <= {target:.2f})")
    if "floor" in med and "native" in med:
        print(f"floor/native = {med['floor'] / med['native']:.2f} (what Python rules in "
              "place of Catalyst's cost at the least when they read each plan whole)")

    print("\nlast run, Catalyst's metering (ms over the suite) and the bridge's counters:")
    for m in modes:
        rules: dict[str, list[int]] = {}
        for _, rs in last[m]:
            for name, (nanos, inv, eff) in rs.items():
                acc = rules.setdefault(name, [0, 0, 0])
                acc[0] += nanos
                acc[1] += inv
                acc[2] += eff
        dup = sum(v[0] for k, v in rules.items() if k in CATALYST_DUPLICATED) / 1e6
        ours = rules.get(SPARKEXT_RULE, [0, 0, 0])
        calls = sum(mt["calls"] for mt, _ in last[m])
        skipped = sum(mt["skipped"] for mt, _ in last[m])
        python_ms = sum(mt["python_nanos"] for mt, _ in last[m]) / 1e6
        jvm_ms = {k: sum(mt[f"{k}_nanos"] for mt, _ in last[m]) / 1e6
                  for k in ("encode", "rebuild", "validate")}
        per_call = (f"{python_ms / calls:.2f} ms Python per call (round trip; the JVM's "
                    f"encoding {jvm_ms['encode']:.1f} ms, rebuilding {jvm_ms['rebuild']:.1f} "
                    f"ms, validating {jvm_ms['validate']:.1f} ms in all)") if calls else "no calls"
        print(f"- {m}: Catalyst rules sparkext duplicates {dup:.1f} ms; {SPARKEXT_RULE} "
              f"{ours[0] / 1e6:.1f} ms over {ours[1]} invocations ({ours[2]} effective); "
              f"{calls} calls, {skipped} skipped; {per_call}")
        per_rule: dict[str, list[int]] = {}
        for mt, _ in last[m]:
            for name, r in (mt.get("rules") or {}).items():
                acc = per_rule.setdefault(name, [0, 0, 0])
                acc[0] += r.get("invocations", 0)
                acc[1] += r.get("effective", 0)
                acc[2] += r.get("nanos", 0)
        for name, (inv, eff, nanos) in sorted(per_rule.items()):
            print(f"    {name}: {inv} invocations, {eff} effective, {nanos / 1e6:.1f} ms")
    if skip_us:
        print(f"\nJVM skip (sparkext's rule invoked, no call made: no rule's node kinds, "
              f"or rules excluded): median {statistics.median(skip_us):.1f} us per "
              f"invocation over {len(skip_us)} queries (target <= 20 us)")
    if precheck_us:
        print(f"JVM pre-check (a Sort, but the sort rules' pre-check proves they cannot "
              f"change it; no call made): median {statistics.median(precheck_us):.1f} us "
              f"per invocation over {len(precheck_us)} queries")


# -- the Python side alone --------------------------------------------------------------
#
# What Python is asked, recorded from a real session of the mode (the JVM's skips and
# pre-checks decide which plans make a call, as in the benchmark), then answered again by
# a RuleBridge of the built-in rules in a warm loop: decoding, the rules and the answer,
# without the JVM. (A first version captured plans with a rule of its own registered
# after the built-in ones, so it measured the rules on plans they had already rewritten.)

def requests_of(spark: SparkSession, suite: str, args: argparse.Namespace, mode: str
                ) -> dict[str, list[str]]:
    """The requests a session of ``mode`` sends Python, per query, in the order it sends
    them (subquery plans first: Catalyst optimizes them inside the main plan's
    optimization, so the last request of a query is its main plan)."""
    session, enabled = new_session(spark, suite, args.scale, mode)
    bridge = enabled.bridge
    answer = bridge.apply
    sent: list[str] = []

    def recording(payload: str) -> str:
        sent.append(payload)
        return answer(payload)

    bridge.apply = recording  # type: ignore[method-assign]  # the channel calls bridge.apply
    out: dict[str, list[str]] = {}
    for name, sql in suite_queries(suite, args.queries).items():
        sent.clear()
        session.sql(sql)._jdf.queryExecution().optimizedPlan()
        out[name] = list(sent)
    return out


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def replay_bridge(batches: Iterable[Batch]) -> RuleBridge:
    return RuleBridge(split_by_position(batches))


def changed(answer: str) -> bool:
    return not answer.startswith(UNCHANGED_PREFIX)


def profile(spark: SparkSession, args: argparse.Namespace) -> None:
    requests = requests_of(spark, "tpcds", args, "replace")
    largest = sorted(((len(r), name, r) for name, rs in requests.items() for r in rs),
                     key=lambda t: -t[0])[:args.profile]
    per_rule: dict[str, float] = {}

    def timing(r: Rule) -> Rule:
        def run(plan: LogicalPlan) -> LogicalPlan:
            start = time.perf_counter()
            try:
                return r.fn(plan)
            finally:
                per_rule[r.name] = per_rule.get(r.name, 0.0) + time.perf_counter() - start
        return dataclasses.replace(r, fn=run)

    timed_bridge = replay_bridge(
        Batch(b.name, b.strategy, tuple(timing(r) for r in b.rules)) for b in builtin_batches())
    total = 0.0
    for size, name, payload in largest:
        spent = timed(partial(timed_bridge.apply, payload))
        total += spent
        print(f"{name}: request of {size / 1e3:.0f} KB, {spent * 1e3:.1f} ms")
    rules_ms = sum(per_rule.values()) * 1e3
    print(f"\n{len(largest)} largest TPC-DS requests (replace): {total * 1e3:.0f} ms answering, "
          f"of which the rules {rules_ms:.0f} ms: "
          + ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in per_rule.items()))
    bridge = replay_bridge(builtin_batches())
    prof = cProfile.Profile()
    for _, _, payload in largest:
        prof.enable()
        bridge.apply(payload)
        prof.disable()
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(order).print_stats(args.top)
        print(out.getvalue())


def subqueries(spark: SparkSession, suite: str, args: argparse.Namespace) -> None:
    bridge = replay_bridge(builtin_batches())
    for mode in ("replace", "ontop"):
        requests = requests_of(spark, suite, args, mode)
        rounds = max(args.rounds, 1)
        spent = {"main": [0.0] * rounds, "sub": [0.0] * rounds}
        count = {"main": 0, "sub": 0}
        changes = {"main": 0, "sub": 0}
        for rs in requests.values():
            for i, payload in enumerate(rs):
                kind = "main" if i == len(rs) - 1 else "sub"
                count[kind] += 1
                changes[kind] += changed(bridge.apply(payload))  # (also warms up)
                for r in range(rounds):
                    spent[kind][r] += timed(partial(bridge.apply, payload))
        ms = {k: statistics.median(v) * 1e3 for k, v in spent.items()}
        print(f"{suite} {mode}: {count['main']} main plans made a call, {ms['main']:.1f} ms, "
              f"{changes['main']} changed; {count['sub']} subquery plans made a call, "
              f"{ms['sub']:.1f} ms, {changes['sub']} changed (Python answering the requests "
              f"again in a warm loop: decoding, rules, answer; median of {args.rounds})")


def record(spark: SparkSession, args: argparse.Namespace) -> None:
    args.record.mkdir(parents=True, exist_ok=True)
    for suite in args.suites:
        for mode in ("replace", "ontop"):
            requests = requests_of(spark, suite, args, mode)
            path = args.record / f"{suite}-{mode}.json"
            path.write_text(json.dumps({"spark_version": spark.version, "queries": requests}))
            print(f"{path}: {sum(map(len, requests.values()))} requests")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--scale", default="0.1")
    parser.add_argument("--suites", nargs="*", default=["tpch", "tpcds"],
                        choices=["tpch", "tpcds"])
    parser.add_argument("--modes", nargs="*", default=list(MODES), choices=list(MODES))
    parser.add_argument("--queries", nargs="*", default=None,
                        help="only these queries (names of either suite)")
    parser.add_argument("--profile", type=int, default=0,
                        help="profile the Python rules on the N largest TPC-DS plans instead")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--subqueries", action="store_true",
                        help="measure the calls for subquery plans instead")
    parser.add_argument("--record", type=Path, default=None, metavar="DIR",
                        help="write the requests of replace and ontop sessions to DIR instead")
    args = parser.parse_args()

    spark = local_session({"spark.sparkext.strict": "false",
                          "spark.sql.planChangeValidation": "false"})
    if "tpcds" in args.suites or args.profile:
        from tests.tpcds.stats import STATS
        create_empty_tables(spark, (TPCDS_DIR / "schema.sql").read_text(), TPCDS_DB, STATS)
    if args.profile:
        profile(spark, args)
    elif args.record:
        record(spark, args)
    elif args.subqueries:
        for suite in args.suites:
            subqueries(spark, suite, args)
    else:
        for suite in args.suites:
            benchmark(spark, suite, args)
        print(f"\nrounds: {args.rounds}, warm-up passes: {args.warmup}, TPC-H scale factor: "
              f"{args.scale}")
    spark.stop()


if __name__ == "__main__":
    main()
