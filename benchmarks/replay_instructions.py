"""The instructions Python runs to answer recorded bridge requests, per checkout: an A/B of
the built-in rules' speed that this machine's noise does not reach.

Wall time here moves by 5-10% between runs of the same code (other tenants, a shared
host), more than most changes to the rules gain. The instructions valgrind's cachegrind
counts hardly move: with ``PYTHONHASHSEED`` fixed, the same checkout gives counts within
0.02% of each other, the same code in another directory within 0.3%, so a difference
below about 0.5% means nothing. They are not time (a cache miss costs more than an add),
so confirm a large change with ``optimizer_cost.py``; for "did this make the rules do less
work", they settle it in one run.

For each checkout (a directory holding a ``sparkext`` package) and each recorded file, the
script runs Python under ``valgrind --tool=cachegrind --cache-sim=no`` twice: answering
every request once, and ``1 + --passes`` times. The difference divided by ``--passes`` is
the instructions of a warm pass: decoding, the rules, the answer, no JVM. It also prints a
digest of the answers (without their timing fields): a change meant to keep every answer
must keep the digest.

    python benchmarks/optimizer_cost.py --record /tmp/req          # needs Spark, once
    python benchmarks/replay_instructions.py /tmp/req/tpcds-replace.json \\
        --roots /path/to/old/checkout .

Needs valgrind (``apt-get install valgrind``); about a minute per checkout and file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

#: answer fields that hold timings or counters, not the answer
VOLATILE = ("stats", "rules", "because")


def child(root: str, path: str, passes: int) -> None:
    """Under valgrind: answer every request of ``path`` ``passes`` times; print the digest."""
    sys.path.insert(0, root)
    from sparkext import _tree
    from sparkext.bridge import RuleBridge, split_by_position
    from sparkext.rules import builtin_batches

    recorded = json.loads(Path(path).read_text())
    _tree.mirror_spec(recorded["spark_version"])
    bridge = RuleBridge(split_by_position(builtin_batches()))
    requests = [r for rs in recorded["queries"].values() for r in rs]
    answers = [bridge.apply(r) for r in requests]
    for _ in range(passes - 1):
        for r in requests:
            bridge.apply(r)
    digest = hashlib.sha256()
    for a in answers:
        doc = json.loads(a)
        for k in VOLATILE:
            doc.pop(k, None)
        digest.update(json.dumps(doc, sort_keys=True).encode())
    print(f"{len(requests)} {digest.hexdigest()[:16]}")


def instructions(root: Path, path: Path, passes: int) -> tuple[int, int, str]:
    """(instructions, requests, answers' digest) of a run answering ``passes`` times."""
    run = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, __file__, "--child", str(root), str(path), str(passes)],
        capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"}, check=False)
    found = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr)
    if run.returncode != 0 or found is None:
        sys.exit(f"{root}: the replay failed under valgrind:\n{run.stderr[-3000:]}")
    n, digest = run.stdout.split()
    return int(found.group(1).replace(",", "")), int(n), digest


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("recorded", nargs="+", type=Path,
                        help="files written by optimizer_cost.py --record")
    parser.add_argument("--roots", nargs="+", type=Path, default=[Path(".")],
                        help="checkouts to compare (default: this one)")
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    for path in args.recorded:
        base = None
        for root in args.roots:
            once, n, digest = instructions(root.resolve(), path, 1)
            more, _, _ = instructions(root.resolve(), path, 1 + args.passes)
            per_pass = (more - once) / args.passes
            vs = "" if base is None else f"  ({per_pass / base:.3f} of the first)"
            base = base or per_pass
            print(f"{path.name} {root}: {n} requests, {per_pass / 1e6:.1f} M instructions a "
                  f"warm pass{vs}; answers {digest}", flush=True)


if __name__ == "__main__":
    main()
