"""``python -m sparkext``: command-line tools (see :mod:`sparkext.cli`)."""

import sys

from sparkext.cli import main

if __name__ == "__main__":
    sys.exit(main())
