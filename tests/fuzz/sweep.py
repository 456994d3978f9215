"""A long differential sweep: ``make fuzz N=10000 SEED=1`` or
``python -m tests.fuzz.sweep --n 10000 --seed 1``.

Prints progress (cases per minute), then the distribution of plain Spark's row counts, the
cases where plain Spark raised and a sparkext mode did not, and each failure, shrunk, as
runnable code and as an entry for tests/fuzz/regressions.py. With ``--out FILE`` the same
report is also appended to FILE as it goes (findings as they are found). The last line is
``SUMMARY {json}``: cases, failures, elapsed seconds, cases per minute, row counts.

One seed's cases split into shards run side by side (``--start I --n K`` each, e.g. five
processes of 2,000), and ``python -m tests.fuzz.sweep --summarize LOG [LOG...]`` adds up
their logs' SUMMARY lines: the totals, each process's rate, the distribution, failures.

Every ``--full-every``-th case (8 by default) runs every mode's plan even where two modes
optimized to the same plan (``oracle.check_code``); the others run each distinct plan once.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter

from tests.fuzz.generate import case_seed, generate
from tests.fuzz.oracle import check, regression_text, shrink


def distribution(counts: list[int]) -> str:
    if not counts:
        return "no case returned rows"
    q = statistics.quantiles(counts, n=4) if len(counts) > 1 else [counts[0]] * 3
    empty = sum(1 for c in counts if c == 0) / len(counts)
    tens = sum(1 for c in counts if c >= 10) / len(counts)
    return (f"row counts over {len(counts)} cases (plain Spark): empty {empty:.1%}, "
            f">=10 rows {tens:.1%}, quartiles {q[0]:g} / median {q[1]:g} / {q[2]:g}, "
            f"max {max(counts)}")


SUMMARY = "SUMMARY "


def summary(args, done, failures, plain_errors, informative, seconds, counts) -> str:
    """The shard's last line, for ``--summarize``: row counts travel as a histogram
    ({rows: cases}) so that shards add up exactly."""
    return SUMMARY + json.dumps({
        "seed": args.seed, "start": args.start, "cases": done, "failures": len(failures),
        "failed_cases": [f"{i} {f.kind} in {f.mode}" for i, _, f, _ in failures],
        "plain_errors": plain_errors, "informative": informative,
        "elapsed_s": round(seconds, 1), "cases_per_min": round(done / seconds * 60, 1),
        "rows": distribution_fields(counts),
        "row_histogram": dict(sorted(Counter(counts).items())),
    }, separators=(",", ":"))


def distribution_fields(counts: list[int]) -> dict:
    if not counts:
        return {}
    q = statistics.quantiles(counts, n=4) if len(counts) > 1 else [counts[0]] * 3
    return {"empty": round(sum(1 for c in counts if c == 0) / len(counts), 4),
            "ge10": round(sum(1 for c in counts if c >= 10) / len(counts), 4),
            "q1": q[0], "median": q[1], "q3": q[2], "max": max(counts)}


def summarize(paths: list[str]) -> int:
    """Adds up the SUMMARY lines of shard logs; exits 1 if a shard failed a case or has
    no SUMMARY line (still running, or stopped)."""
    shards, missing = [], []
    for path in paths:
        lines = open(path).read().splitlines()
        done = [ln for ln in lines if ln.startswith(SUMMARY)]
        if done:
            shards.append((path, json.loads(done[-1][len(SUMMARY):])))
        else:
            progress = [ln for ln in lines if ln.startswith("[")]
            findings = [ln for ln in lines if ln.startswith("FINDING")]
            missing.append((path, progress[-1] if progress else "no progress line",
                            findings))
    for path, s in shards:
        print(f"{path}: seed {s['seed']} cases {s['start']}..{s['start'] + s['cases'] - 1}, "
              f"{s['cases']} cases in {s['elapsed_s'] / 60:.1f} min, "
              f"{s['cases_per_min']:g} cases/min, {s['failures']} failures")
    for path, progress, findings in missing:
        print(f"{path}: no SUMMARY line (still running, or stopped before the end); last: "
              f"{progress}" + "".join(f"\n  {f}" for f in findings))
    if not shards:
        return 1
    cases = sum(s["cases"] for _, s in shards)
    seconds = [s["elapsed_s"] for _, s in shards]
    counts = [int(rows) for _, s in shards for rows, n in s["row_histogram"].items()
              for _ in range(n)]
    failed = [f"{path}: case {c}" for path, s in shards for c in s["failed_cases"]]
    print(f"total: {cases} cases in {len(shards)} processes; "
          f"{cases / max(seconds) * 60:.0f} cases/min overall (over the longest shard's "
          f"{max(seconds) / 60:.1f} min), {cases / sum(seconds) * 60:.0f} cases/min per "
          "process")
    print(distribution(counts))
    print(f"plain Spark raised in {sum(s['plain_errors'] for _, s in shards)} cases; "
          f"{sum(s['informative'] for _, s in shards)} informative differences")
    print(f"{len(failed)} failures" + "".join(f"\n  {f}" for f in failed))
    seeds = {s["seed"] for _, s in shards}
    if len(seeds) > 1:
        print(f"note: the logs are of several seeds {sorted(seeds)}")
    return 1 if failed or missing else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0, help="first case index")
    parser.add_argument("--full-every", type=int, default=8,
                        help="every this many cases, run every mode's plan (0: never)")
    parser.add_argument("--out", default=None)
    parser.add_argument("--summarize", nargs="+", metavar="LOG",
                        help="add up the SUMMARY lines of these shard logs, then exit")
    args = parser.parse_args(argv)
    if args.summarize:
        return summarize(args.summarize)

    import sparkext
    from sparkext.optimizer import CHECK_CLAIMS_ENV, CHECK_FACTS_ENV
    from sparkext.testing.session import local_session
    from tests.fuzz.tables import register

    os.environ.setdefault(CHECK_CLAIMS_ENV, "1")  # rules' claims checked, as under pytest
    os.environ.setdefault(CHECK_FACTS_ENV, "1")  # and the facts the ordering rules rely on

    out = open(args.out, "a") if args.out else None

    def say(line: str = "") -> None:
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()

    spark = local_session()
    sparkext.enable(spark)
    tables = register(spark)
    counts, plain_errors, failures = [], 0, []
    informative: list[str] = []
    n_informative = 0
    started = time.monotonic()
    done = 0
    for i in range(args.start, args.start + args.n):
        case = generate(case_seed(args.seed, i), tables)
        full = args.full_every > 0 and i % args.full_every == 0
        found, outcomes = check(spark, case, full=full)
        done += 1
        if outcomes["plain"].rows is not None:
            counts.append(len(outcomes["plain"].rows))
        else:
            plain_errors += 1
        for f in found:
            if not f.failure:
                line = f"case {i} (seed {case.seed}) {f.kind} in {f.mode}: {f.detail}"
                n_informative += 1
                if len(informative) < 50:
                    informative.append(line)
                    say("INFO " + line)
                continue
            try:
                small = shrink(spark, case, f)
            except Exception as e:  # noqa: BLE001 - report the unshrunk case instead
                say(f"(shrinking failed: {e!r})")
                small = case
            failures.append((i, case, f, small))
            say(f"\nFINDING case {i} (seed {case.seed}): {f.kind} in {f.mode}: {f.detail}")
            say(small.code())
            say(regression_text(small, f))
            break
        if done % 20 == 0:
            rate = done / (time.monotonic() - started) * 60
            say(f"[{done}/{args.n}] {rate:.0f} cases/min, {len(failures)} failures, "
                f"plain errors {plain_errors}; {distribution(counts)}")
    seconds = time.monotonic() - started
    minutes = seconds / 60
    say(f"\n{done} cases in {minutes:.1f} min: {done / minutes:.0f} cases/min "
        f"(each in 3 modes)")
    say(distribution(counts))
    say(f"plain Spark raised in {plain_errors} cases; {n_informative} informative "
        "differences (plain raised and a sparkext mode did not, or Catalyst raised with its "
        "own rules excluded), the first 50 below")
    for line in informative:
        say("  " + line)
    say(f"{len(failures)} failures")
    for i, case, f, small in failures:
        say(f"\n--- case {i} (seed {case.seed}): {f.kind} in {f.mode}: {f.detail}\n{small.code()}")
    say(summary(args, done, failures, plain_errors, n_informative, seconds, counts))
    spark.stop()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
