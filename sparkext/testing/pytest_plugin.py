"""The sparkext pytest plugin (registered through the ``pytest11`` entry point).

Fixtures:
    spark          one local SparkSession for the whole test session, sparkext
                   configured, strict mode and Catalyst's plan-change validation on,
                   built-in rules enabled.
    plan_snapshot  ``plan_snapshot(df, name, kind="optimized")`` compares ``df``'s
                   normalised plan with ``plans/<name>.txt`` next to the test file.
    update_plans   True when golden plan files are being (re)written.

Options: ``--sparkext-update-plans`` (or ``SPARKEXT_UPDATE_PLANS=1``) rewrites golden plan
files instead of comparing. The run ends with a line counting the snapshots checked and
updated.

Under pytest, rules' claims about themselves (``Rule.idempotent``, ``Rule.subsumes``) are
checked on every plan they see (``SPARKEXT_CHECK_RULE_CLAIMS=1``, unless the environment
sets it otherwise), as Catalyst checks its ``Once`` batches under test.
"""

from __future__ import annotations

import os

import pytest

from sparkext.optimizer import CHECK_CLAIMS_ENV
from sparkext.testing.snapshots import SnapshotStats, assert_plan_snapshot

_STATS = pytest.StashKey[SnapshotStats]()


def pytest_addoption(parser):
    group = parser.getgroup("sparkext")
    group.addoption("--sparkext-update-plans", action="store_true", default=False,
                    help="rewrite golden plan files instead of comparing against them")


def pytest_configure(config):
    config.stash[_STATS] = SnapshotStats()
    # Before any session exists: each registration's executors read it.
    os.environ.setdefault(CHECK_CLAIMS_ENV, "1")


def updating(config) -> bool:
    return bool(config.getoption("--sparkext-update-plans", default=False)
                or os.environ.get("SPARKEXT_UPDATE_PLANS", "") not in ("", "0"))


@pytest.fixture(scope="session")
def update_plans(request) -> bool:
    return updating(request.config)


@pytest.fixture
def plan_snapshot(request):
    """``plan_snapshot(df, name, kind="optimized")``: the golden-file check, with the
    golden files in ``plans/`` next to the test module."""
    directory = request.path.parent
    update = updating(request.config)
    stats = request.config.stash[_STATS]

    def check(df, name: str, kind: str = "optimized", **kw):
        __tracebackhide__ = True
        assert_plan_snapshot(df, name, kind, directory=directory, update=update, stats=stats,
                             **kw)
    return check


def pytest_sessionfinish(session):
    # Under pytest-xdist each worker counts its own snapshots: they go to the controller,
    # which prints the one line (pytest_testnodedown).
    out = getattr(session.config, "workeroutput", None)
    stats = session.config.stash.get(_STATS, None)
    if out is not None and stats is not None:
        out["sparkext_snapshots"] = [stats.checked, stats.updated, list(stats.failed)]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """(pytest-xdist, on the controller) adds a finished worker's snapshot counts."""
    got = getattr(node, "workeroutput", {}).get("sparkext_snapshots")
    stats = node.config.stash.get(_STATS, None)
    if got and stats is not None:
        checked, updated, failed = got
        stats.checked += checked
        stats.updated += updated
        stats.failed.extend(failed)


def pytest_terminal_summary(terminalreporter, config):
    stats = config.stash.get(_STATS, None)
    if stats is None or not (stats.checked or stats.updated):
        return
    line = f"sparkext: {stats.checked} plan snapshots checked, {stats.updated} updated"
    if stats.failed:
        line += f", {len(stats.failed)} differ: {', '.join(stats.failed[:10])}"
    terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def spark():
    import sparkext
    from sparkext.testing.session import local_session

    session = local_session()
    sparkext.enable(session)
    yield session
    session.stop()
