"""``python -m sparkext``: command-line tools.

    python -m sparkext jar       print the path of the bundled shim jar
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparkext",
                                     description="sparkext: Catalyst rules in Python")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("jar", help="print the path of the bundled shim jar (for --jars)")
    args = parser.parse_args(argv)
    if args.command == "jar":
        from sparkext.session import SparkextError, jar_path

        try:
            print(jar_path())
        except SparkextError as e:
            print(f"sparkext: {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
