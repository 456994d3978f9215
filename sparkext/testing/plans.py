"""The former name of :mod:`sparkext.testing.snapshots` (golden plan snapshots), kept so
that test suites written against it still import: every public name of that module."""

from sparkext.testing.snapshots import *  # noqa: F401,F403
from sparkext.testing.snapshots import __all__  # noqa: F401
