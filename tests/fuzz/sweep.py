"""A long differential sweep: ``make fuzz N=10000 SEED=1`` or
``python -m tests.fuzz.sweep --n 10000 --seed 1``.

Prints progress (cases per minute), then the distribution of plain Spark's row counts, the
cases where plain Spark raised and a sparkext mode did not, and each failure, shrunk, as
runnable code and as an entry for tests/fuzz/regressions.py. With ``--out FILE`` the same
report is also appended to FILE as it goes (findings as they are found).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0, help="first case index")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)

    import sparkext
    from sparkext.testing.session import local_session
    from tests.fuzz.tables import register

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
    started = time.monotonic()
    done = 0
    for i in range(args.start, args.start + args.n):
        case = generate(case_seed(args.seed, i), tables)
        found, outcomes = check(spark, case)
        done += 1
        if outcomes["plain"].rows is not None:
            counts.append(len(outcomes["plain"].rows))
        else:
            plain_errors += 1
        for f in found:
            if not f.failure:
                line = f"case {i} (seed {case.seed}) {f.kind} in {f.mode}: {f.detail}"
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
    minutes = (time.monotonic() - started) / 60
    say(f"\n{done} cases in {minutes:.1f} min: {done / minutes:.0f} cases/min "
        f"(each in 3 modes)")
    say(distribution(counts))
    say(f"plain Spark raised in {plain_errors} cases; {len(informative)} informative "
        "differences (plain raised and a sparkext mode did not, or Catalyst raised with its "
        "own rules excluded), the first 50 below")
    for line in informative:
        say("  " + line)
    say(f"{len(failures)} failures")
    for i, case, f, small in failures:
        say(f"\n--- case {i} (seed {case.seed}): {f.kind} in {f.mode}: {f.detail}\n{small.code()}")
    spark.stop()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
