"""The sparkext pytest plugin (registered through the ``pytest11`` entry point).

Fixtures:
    spark          one local SparkSession for the whole test session, sparkext
                   configured, strict mode and Catalyst's plan-change validation on,
                   built-in rules enabled.
    update_plans   True when golden plan files should be (re)written:
                   ``pytest --sparkext-update-plans`` or ``SPARKEXT_UPDATE_PLANS=1``.
"""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser):
    group = parser.getgroup("sparkext")
    group.addoption("--sparkext-update-plans", action="store_true", default=False,
                    help="rewrite golden plan files instead of comparing against them")


def updating(config) -> bool:
    return bool(config.getoption("--sparkext-update-plans", default=False)
                or os.environ.get("SPARKEXT_UPDATE_PLANS", "") not in ("", "0"))


@pytest.fixture(scope="session")
def update_plans(request) -> bool:
    return updating(request.config)


@pytest.fixture(scope="session")
def spark():
    import sparkext
    from sparkext.testing.session import test_session

    session = test_session()
    sparkext.enable(session)
    yield session
    session.stop()
