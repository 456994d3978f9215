"""The former name of :mod:`sparkext.testing.snapshots` (golden plan snapshots), kept so
that test suites written against it still import: this very module object is
:mod:`sparkext.testing.snapshots`."""

import sys

from sparkext.testing import snapshots

sys.modules[__name__] = snapshots
