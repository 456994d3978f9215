"""``make test-compat``: the compatibility suite on every supported Spark line.

For each row of :data:`ENVIRONMENTS` it makes (or reuses) a virtualenv with that row's
pyspark and requirements, puts sparkext into it, and runs the row's test files under
tests/compat/ inside a real session of that Spark. It prints, per row, the pass / fail /
skip counts and the wall time, then the total, and exits non-zero if any row failed.

    tools/compat.py                    every row
    tools/compat.py --only spark4.2_2.13  some rows (by name; repeatable)
    tools/compat.py --skip spark4.3_2.13  all rows but some
    tools/compat.py --list             the table
    tools/compat.py --jobs 2           two rows side by side (rows that share a venv or a
                                       lock, e.g. Ivy's cache, one after the other)
    tools/compat.py --wheel dist/sparkext-X.whl
                                       test that wheel, installed into each venv, instead
                                       of the tree's sparkext/ (the tests still come from
                                       the tree)

Rows are the one place a Spark environment is described. Another kind of run (Delta,
Iceberg, a standalone cluster) is one more row: its pyspark, the extra pins its venv
needs, its own test files under tests/compat/ (they get the fixtures of
tests/compat/conftest.py and tests/conftest.py), and any environment variables:

    ENVIRONMENTS = (*(_line_env(line) for line in versions.LINES),
                    Env("delta4.2", "4.2.0", tests=("tests/compat/test_delta.py",),
                        requirements=("delta-spark==4.4.0",), lock="ivy"),
                    Env("iceberg4.1", "4.1.4", tests=("tests/compat/test_iceberg.py",),
                        lock="ivy"),
                    Env("standalone4.3", "4.3.0", tests=("tests/compat/test_standalone.py",)))

The core rows come from sparkext/versions.py (one per supported line, pyspark = the
release its jar is built against), so a new line is one row there. Each runs
``tests/compat/test_line.py`` and the guards' suite, ``tests/test_guards.py`` (its
Spark Connect half needs grpcio, which these venvs leave out: it runs in ``make test``).

A row's venv is keyed by its pyspark and requirements, so rows that need the same
packages share one. Each row is one pytest process (one JVM); its log is kept in
``<cache>/compat-logs/<row>.log``.

Virtualenvs live in ``/root/.cache/sparkext/venvs/<pyspark>-<hash of the requirements>``
(``SPARKEXT_CACHE`` moves the cache). A new one starts as a copy of a plain cached venv
with the same pyspark (``venvs/<pyspark>``) when there is one, else from the cached
pyspark sdist (``wheels/``), else from PyPI.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from sparkext import versions  # noqa: E402 (the tree's table of supported lines)

CACHE = Path(os.environ.get("SPARKEXT_CACHE", "/root/.cache/sparkext"))
CORE = ("tests/compat/test_line.py", "tests/test_guards.py")
#: What every compat venv gets besides pyspark, pinned in requirements-dev.txt.
TEST_PACKAGES = ("pytest", "iniconfig", "pluggy", "packaging", "chispa", "pandas", "pyarrow",
                 "numpy", "python-dateutil", "pytz", "tzdata", "prettytable", "wcwidth")


@dataclasses.dataclass(frozen=True)
class Env:
    """One row: a Spark environment and the compat tests that run in it."""

    #: the row's name (``--only``), also shown in the report
    name: str
    #: the exact pyspark version of the venv
    pyspark: str
    #: test files (relative to the tree), run in one pytest session
    tests: tuple[str, ...] = CORE
    #: pins the venv needs beyond pyspark and TEST_PACKAGES (e.g. ``delta-spark==4.4.0``)
    requirements: tuple[str, ...] = ()
    #: a Spark distribution to run instead of pyspark's own jars (``SPARK_HOME``); a folder
    #: with only ``jars/`` (a Maven Central jar set) gets pyspark's ``bin/`` scripts
    spark_home: str | None = None
    #: extra environment variables for the run
    env: tuple[tuple[str, str], ...] = ()
    #: run only when asked for by name (``--only``), e.g. a row whose cache is not built
    optional: bool = False
    #: rows with the same lock never run at the same time under ``--jobs`` (rows sharing a
    #: venv never do either): "ivy" for rows that resolve ``spark.jars.packages``, whose
    #: Ivy cache two resolvers at once can corrupt
    lock: str | None = None


def _line_env(line) -> Env:
    """The core row of a supported line (sparkext/versions.py): its pyspark release, and for
    a Scala that pyspark does not ship (3.5 with 2.13) the full Maven Central jar set, which
    is not fetched here: that row runs when asked for (``--only``) with the set cached."""
    if line.jars_from == "pypi":
        return Env(f"spark{line.key}", line.built_with)
    return Env(f"spark{line.key}", line.built_with, optional=True,
               spark_home=str(CACHE / f"spark-{line.built_with}-scala{line.scala}"))


#: Every environment ``make test-compat`` runs, in order: one row per supported line, then
#: rows added by hand (Delta, Iceberg, a standalone cluster...).
ENVIRONMENTS: tuple[Env, ...] = (
    *(_line_env(line) for line in versions.LINES),
    # Delta caps pyspark at 4.2.0, and 4.4.1's jars are not on Maven Central: 4.4.0 exactly.
    Env("delta4.2", "4.2.0", tests=("tests/compat/test_delta.py",),
        requirements=("delta-spark==4.4.0",), lock="ivy"),
    # Iceberg 1.12's newest runtime is for Spark 4.1 (it comes through spark.jars.packages).
    Env("iceberg4.1", "4.1.4", tests=("tests/compat/test_iceberg.py",), lock="ivy"),
    # A master and two workers from pyspark's bin/spark-class; spark-submit to them.
    Env("standalone4.3", "4.3.0", tests=("tests/compat/test_standalone.py",)),
)


def pins() -> dict[str, str]:
    """``name -> name==version`` from requirements-dev.txt."""
    out = {}
    for line in (ROOT / "requirements-dev.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            out[line.split("==", 1)[0].strip().lower()] = line
    return out


def requirements(env: Env) -> list[str]:
    p = pins()
    return [f"pyspark=={env.pyspark}", *(p[n] for n in TEST_PACKAGES), *env.requirements]


def venv_dir(env: Env) -> Path:
    digest = hashlib.sha256("\n".join(sorted(requirements(env))).encode()).hexdigest()[:10]
    return CACHE / "venvs" / f"{env.pyspark}-{digest}"


def run(cmd: list, **kw) -> None:
    subprocess.run(["nice", "-n", "10", *map(str, cmd)], check=True, **kw)


def ensure_venv(env: Env) -> Path:
    """The row's venv, made once: its requirements are in ``.sparkext-compat``."""
    d = venv_dir(env)
    marker = d / ".sparkext-compat"
    wanted = "\n".join(requirements(env))
    if marker.is_file() and marker.read_text() == wanted:
        return d
    tmp = d.with_name(d.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    plain = CACHE / "venvs" / env.pyspark
    py = tmp / "bin" / "python"
    if (plain / "pyvenv.cfg").is_file():
        # A copy works as a venv when only ``python -m`` is used (scripts keep the old
        # path in their #! lines); it saves building pyspark's 450 MB again.
        run(["cp", "-a", plain, tmp])
    else:
        run([sys.executable, "-m", "venv", tmp])
        sdist = CACHE / "wheels" / f"pyspark-{env.pyspark}.tar.gz"
        run([py, "-m", "pip", "install", "-q", sdist if sdist.is_file() else
             f"pyspark=={env.pyspark}"])
    run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements(env)])
    marker_tmp = tmp / ".sparkext-compat"
    marker_tmp.write_text(wanted)
    shutil.rmtree(d, ignore_errors=True)
    tmp.rename(d)
    return d


def prepare_data() -> None:
    """TPC-H data once for every row (generated with this interpreter's tpchgen-cli)."""
    from tests.conftest import tpch_dir

    tpch_dir()


def spark_home(env: Env, venv: Path) -> Path:
    """The row's SPARK_HOME: its folder, or, when that holds only ``jars/``, a folder of
    links to those jars and to the launch scripts of the venv's pyspark."""
    given = Path(env.spark_home)
    if (given / "bin" / "spark-submit").is_file():
        return given
    home = CACHE / "spark-homes" / env.name
    if not (home / "bin" / "spark-submit").is_file():
        pyspark_bin = next((venv / "lib").glob("python*/site-packages/pyspark/bin"))
        home.mkdir(parents=True, exist_ok=True)
        for name, target in (("jars", given / "jars"), ("bin", pyspark_bin)):
            link = home / name
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(target)
    return home


SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|error|errors|xfailed|xpassed)")


def run_env(env: Env, venv: Path, extra: list[str], timeout: float,
            wheel: Path | None = None, stride: int = 1, offset: int = 0) -> dict:
    py = venv / "bin" / "python"
    environ = {**os.environ, "PYSPARK_PYTHON": str(py), "PYSPARK_DRIVER_PYTHON": str(py),
               "PYTHONUNBUFFERED": "1", "SPARKEXT_COMPAT_STRIDE": str(stride),
               "SPARKEXT_COMPAT_OFFSET": str(offset),
               **dict(env.env)}
    environ.pop("SPARK_HOME", None)
    if env.spark_home:
        environ["SPARK_HOME"] = str(spark_home(env, venv))
    if wheel is None:
        # The tree's sparkext, first on the path; its pytest plugin named explicitly, and
        # the entry point of a sparkext the venv may also see (a wheel a --wheel run left,
        # the tree's own sparkext.egg-info) kept out: it would register it a second time.
        environ["PYTHONPATH"] = str(ROOT)
        how = ["-p", "no:sparkext", "-p", "sparkext.testing.pytest_plugin"]
    else:
        # The installed wheel (its entry point registers the plugin); the tree goes last on
        # the path, for the tests only: conftest.py checks sparkext is not the tree's.
        environ.pop("PYTHONPATH", None)
        environ["SPARKEXT_COMPAT_INSTALLED"] = "1"
        run([py, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", wheel])
        how = ["--import-mode=append"]
    # -P: ``python -m`` would otherwise put the tree (the working directory) first.
    cmd = [py, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", *how,
           "-o", "console_output_style=count", *env.tests, *extra]
    log = CACHE / "compat-logs" / f"{env.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with log.open("w") as sink:  # written as it runs: tail -f it to follow a row
        try:
            rc = subprocess.run(["nice", "-n", "10", *map(str, cmd)], cwd=ROOT, env=environ,
                                stdout=sink, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            sink.write(f"\n[compat] {env.name}: timed out after {timeout:.0f} s\n")
            rc = -1
    wall = time.monotonic() - start
    out = log.read_text()
    tail = out.strip().splitlines()[-1] if out.strip() else ""
    counts = {k.rstrip("s") if k.startswith("error") else k: int(n)
              for n, k in SUMMARY.findall(tail)}
    return {"name": env.name, "rc": rc, "wall": wall, "counts": counts, "tail": tail,
            "log": log, "out": out}


def chains(rows: list[Env]) -> list[list[tuple[int, Env]]]:
    """The rows (with their index, which sets their stride offset) in chains that may run
    side by side: rows that share a venv or a lock are in one chain, in table order."""
    groups: list[tuple[set, list[tuple[int, Env]]]] = []  # (keys, rows) of each chain
    for i, env in enumerate(rows):
        keys = {venv_dir(env), *([("lock", env.lock)] if env.lock else [])}
        joined = [g for g in groups if g[0] & keys]  # every chain this row ties together
        groups = [g for g in groups if not g[0] & keys]
        groups.append((keys.union(*(k for k, _ in joined)),
                       sorted([*(r for _, rs in joined for r in rs), (i, env)],
                              key=lambda r: r[0])))
    return sorted((rs for _, rs in groups), key=lambda rs: rs[0][0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", help="run only this row (repeatable)")
    ap.add_argument("--skip", action="append", default=[], help="leave this row out "
                    "(repeatable): CI skips spark4.3_2.13, where the whole suite runs")
    ap.add_argument("--list", action="store_true", help="print the table and exit")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per row")
    ap.add_argument("--stride", type=int, default=1, help="run every N-th TPC-H query and "
                    "corpus pipeline, the i-th row from the (i mod N)-th on, so N rows run "
                    "each once (default: every one on every row)")
    ap.add_argument("--jobs", type=int, default=1, help="rows run side by side (default 1; "
                    "rows sharing a venv or a lock always run one after the other)")
    ap.add_argument("--wheel", type=Path, help="install this sparkext wheel into each venv "
                    "and test it instead of the tree's sparkext/")
    ap.add_argument("pytest_args", nargs="*", help="passed on to pytest (after --)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    if args.list:
        for e in ENVIRONMENTS:
            print(f"{e.name:16} pyspark {e.pyspark:8} {venv_dir(e)}"
                  f"{'  (optional)' if e.optional else ''}  {' '.join(e.tests)}")
        return 0
    names = {e.name for e in ENVIRONMENTS}
    for n in [*(args.only or ()), *args.skip]:
        if n not in names:
            ap.error(f"no row {n!r}; rows: {', '.join(sorted(names))}")
    rows = [e for e in ENVIRONMENTS
            if (e.name in args.only if args.only else not e.optional)
            and e.name not in args.skip]
    start = time.monotonic()
    prepare_data()
    results = []
    printing = threading.Lock()
    stop = threading.Event()  # Ctrl-C: no chain starts another row

    def run_chain(chain: list[tuple[int, Env]]) -> None:
        for i, env in chain:
            if stop.is_set():
                return
            t0 = time.monotonic()
            try:
                venv = ensure_venv(env)
                setup = time.monotonic() - t0
                r = run_env(env, venv, args.pytest_args, args.timeout,
                            args.wheel.resolve() if args.wheel else None, args.stride,
                            i % args.stride)
            except Exception:  # noqa: BLE001 - a row that cannot run is a failed row
                setup = time.monotonic() - t0
                r = {"name": env.name, "rc": -2, "wall": 0.0, "counts": {},
                     "log": "(none)", "out": traceback.format_exc()}
            r["setup"] = setup
            c = r["counts"]
            with printing:
                results.append(r)
                print(f"[compat] {env.name:14} pyspark {env.pyspark:7} "
                      f"{c.get('passed', 0):4} passed "
                      f"{c.get('failed', 0) + c.get('error', 0):3} failed "
                      f"{c.get('skipped', 0):3} skipped  {r['wall']:6.0f} s "
                      f"(+{setup:.0f} s venv)  rc={r['rc']}", flush=True)
                if r["rc"] != 0:
                    print("\n".join(r["out"].splitlines()[-40:]))
                    print(f"[compat] full log: {r['log']}")

    # Longest chains first: the pool's last chain to start should be a short one.
    ordered = sorted(chains(rows), key=len, reverse=True)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs)
    try:
        for f in [pool.submit(run_chain, c) for c in ordered]:
            f.result()
    except KeyboardInterrupt:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    total = time.monotonic() - start
    failed = [r["name"] for r in results if r["rc"] != 0]
    print(f"[compat] {len(results)} rows in {total:.0f} s; "
          + (f"FAILED: {', '.join(failed)}" if failed else "all passed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
