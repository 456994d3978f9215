"""The sparkext pytest plugin (registered through the ``pytest11`` entry point).

Fixtures:
    spark   one local SparkSession for the whole test session, sparkext configured,
            strict mode and Catalyst's plan-change validation on, built-in rules enabled.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    import sparkext
    from sparkext.testing.session import test_session

    session = test_session()
    sparkext.enable(session)
    yield session
    session.stop()
