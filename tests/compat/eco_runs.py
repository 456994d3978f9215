"""Starting the eco_*_app.py applications from a test and reading what they wrote.

Each mode runs in its own Python process (and so its own JVM). The first mode starts
alone: its session resolves the format's packages into the shared Ivy cache, which
concurrent first resolutions corrupt (downloads fail). Once its session is up (it writes
``started`` in its folder), the other modes start together.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import sparkext

HERE = Path(__file__).resolve().parent
#: A first run downloads the format's jars into the Ivy cache; later runs take ~1 minute.
DEADLINE_SECONDS = 600


def _env() -> dict[str, str]:
    # The applications import the same sparkext as this test (the tree or an installed
    # wheel), whatever put it on this process's path.
    source = str(Path(sparkext.__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (source, path) if p),
            "PYSPARK_PYTHON": sys.executable}


def run_modes(app: str, modes: list[str], workdir: Path) -> dict[str, dict]:
    """Runs ``app`` once per mode (the first, then the others together); returns each
    mode's JSON result. A run that fails or overruns fails the test with the end of its
    output."""
    started = {}

    def start(mode: str) -> None:
        folder = workdir / mode
        folder.mkdir(parents=True)
        log = open(folder / "output.log", "wb")  # noqa: SIM115 - closed below
        proc = subprocess.Popen(
            [sys.executable, str(HERE / app), mode, str(folder / "result.json"), str(folder)],
            cwd=HERE, env=_env(), stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)  # its own process group: it and its JVM stop together
        started[mode] = (proc, log, folder)

    deadline = time.monotonic() + DEADLINE_SECONDS
    failures, results = [], {}
    try:
        start(modes[0])
        first, _, folder = started[modes[0]]
        while not (folder / "started").exists() and first.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        for mode in modes[1:]:
            start(mode)
        for mode, (proc, log, folder) in started.items():
            try:
                code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                code = None
                failures.append(f"{mode}: still running after {DEADLINE_SECONDS} s")
            output = (folder / "output.log").read_text(errors="replace")
            if code == 0:
                results[mode] = json.loads((folder / "result.json").read_text())
            elif code is not None:
                failures.append(f"{mode}: exit code {code}; the end of its output:\n"
                                + "\n".join(output.splitlines()[-40:]))
    finally:
        # An overrun, a failure elsewhere or an interrupt leaves no application behind.
        for proc, log, _ in started.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            log.close()
    if failures:
        raise AssertionError("\n\n".join(failures))
    return results


#: The sort keys of each query's optimized plan without sparkext, and with its rules:
#: simplify_sort_keys drops ``grp`` (constant under ``grp = 'a'``); eliminate_sorts removes
#: the sort over data cached in that order.
KEYS = {
    "filtered sorted": ([["grp ASC NULLS FIRST", "id ASC NULLS FIRST"]],
                        [["id ASC NULLS FIRST"]]),
    "sorted cache": ([["id ASC NULLS FIRST"]], []),
}


def extension_orders(mode: str, other: str) -> dict[str, str]:
    """The two modes with sparkext (``mode`` with the other extension first, and
    ``sparkext-first``) and the ``spark.sql.extensions`` each must start its session with."""
    return {mode: f"{other},{sparkext.EXTENSION_CLASS}",
            "sparkext-first": f"{sparkext.EXTENSION_CLASS},{other}"}


def assert_plain(plain: dict, query: str, extension: str) -> None:
    """Without sparkext nothing rewrites the query: what the other runs are measured by."""
    assert plain["extensions"] == extension
    assert plain[query]["keys"] == KEYS[query][0]
    assert plain[query]["rows"], "the query must return rows for the comparison to mean anything"


def assert_rewritten(run: dict, plain: dict, query: str) -> None:
    """sparkext's rules rewrote the query (the plan and the bridge's counters say so) and
    it returned exactly the rows of the run without sparkext, in the same order."""
    got = run[query]
    assert got["keys"] == KEYS[query][1]
    assert got["metrics"]["accepted"] >= 1
    assert got["metrics"]["rejected"] == got["metrics"]["python_errors"] == 0
    assert got["rows"] == plain[query]["rows"]
