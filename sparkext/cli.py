"""The commands behind ``python -m sparkext``.

    python -m sparkext jar [--spark 3.5 --scala 2.12]     print the shim jar's path (for
                                                          the local pyspark, or a cluster's)
    python -m sparkext --version                          the package, the jars it carries
                                                          and the Spark it finds here
    python -m sparkext server-conf [--rules M:A ...]      the spark-submit arguments that
                                                          start a Connect or Thrift server
                                                          with sparkext (docs/connect.md)
    python -m sparkext plan Q.sql --catalog DIR           the normalised optimized plan
    python -m sparkext plan-diff A B [--catalog DIR]      diff two plan files or SQL files
                                                          (ids numbered by name, then
                                                          position: small edits stay small)
    python -m sparkext explain Q.sql --catalog DIR        plans before/after sparkext, and
                                                          which rule changed what, and why
                                                          (sparkext.explain)

``--catalog DIR``: every ``<name>.parquet`` (file or folder) and every folder of parquet
files in DIR becomes a temporary view ``<name>``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from sparkext.testing.snapshots import IDS_BY_NAME, diff_plans, normalize_plan


def _session(quiet: bool = True):
    from pyspark.sql import SparkSession

    import sparkext

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master("local[1]").appName("sparkext-cli")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC"))
    spark = sparkext.configure(builder).getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
    return spark


def register_catalog(spark, directory: str | None) -> list[str]:
    """Temp views for the parquet tables in ``directory``; returns their names."""
    if directory is None:
        return []
    names = []
    for entry in sorted(Path(directory).iterdir()):
        if entry.suffix == ".parquet" or (entry.is_dir() and any(entry.glob("*.parquet"))):
            name = entry.name.split(".")[0]
            spark.read.parquet(str(entry)).createOrReplaceTempView(name)
            names.append(name)
    if not names:
        raise SystemExit(f"sparkext: no parquet tables in {directory}")
    return names


def _sql(path: str) -> str:
    return Path(path).read_text()


def _plan_of(spark, path: str, kind: str, ids: str = "appearance") -> str:
    return normalize_plan(spark.sql(_sql(path)), kind, ids=ids)


def cmd_plan(args) -> int:
    import sparkext

    spark = _session()
    register_catalog(spark, args.catalog)
    if not args.no_sparkext:
        sparkext.enable(spark)
    print(_plan_of(spark, args.file, args.kind), end="")
    return 0


def cmd_plan_diff(args) -> int:
    import sparkext

    texts = []
    spark = None
    for path in (args.a, args.b):
        if path.endswith(".sql"):
            if spark is None:
                spark = _session()
                register_catalog(spark, args.catalog)
                if not args.no_sparkext:
                    sparkext.enable(spark)
            texts.append(_plan_of(spark, path, args.kind, IDS_BY_NAME))
        else:
            texts.append(normalize_plan(Path(path).read_text(), ids=IDS_BY_NAME))
    diff = diff_plans(texts[0], texts[1], args.a, args.b)
    if diff:
        print(diff, end="")
        return 1
    print("plans are the same")
    return 0


def cmd_explain(args) -> int:
    import sparkext
    from sparkext.catalyst import excluded_rules_conf

    spark = _session()
    register_catalog(spark, args.catalog)
    if args.instead_of_catalyst:
        for key, value in excluded_rules_conf().items():
            spark.conf.set(key, value)
    print(sparkext.explain(spark.sql(_sql(args.file))), end="")
    return 0


def cmd_jar(args) -> int:
    from sparkext.session import SparkextError, jar_path

    if args.scala and not args.spark:
        print("sparkext: --scala needs --spark (the local pyspark's Scala is found, not given)",
              file=sys.stderr)
        return 2
    try:
        print(jar_path(args.spark, args.scala))
    except SparkextError as e:
        print(f"sparkext: {e}", file=sys.stderr)
        return 1
    return 0


def version_report() -> str:
    """What ``--version`` prints: the package, each jar it carries (line, Scala, the
    sparkext version it was built from) and the local Spark with the jar it would use."""
    import sparkext
    from sparkext import versions
    from sparkext.session import JARS_DIR, SparkextError, jar_path, local_spark

    lines = [f"sparkext {sparkext.__version__}"]
    for line in versions.LINES:
        info = versions.jar_info(JARS_DIR / line.jar)
        built = f"built from sparkext {info.get('version', '?')}" if info else "missing"
        lines.append(f"  jar for Spark {line.spark} / Scala {line.scala}: {built}")
    try:
        spark, scala = local_spark()
        found = f"pyspark {spark} (Scala {scala or '?'})"
        try:
            found += f", uses {Path(jar_path()).name}"
        except SparkextError as e:
            found += f": {e}"
    except ImportError:
        found = "no pyspark installed"
    lines.append(f"Spark here: {found}")
    return "\n".join(lines)


class _Version(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="print the package version, the "
                         "jars it carries and the Spark it finds, then exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_report())
        parser.exit()


def cmd_server_conf(args) -> int:
    from sparkext.session import SparkextError, connect_server_args

    try:
        argv = connect_server_args(args.rules, builtin=not args.no_builtin,
                                   python=None if args.no_python else args.python)
    except (SparkextError, ValueError) as e:
        print(f"sparkext: {e}", file=sys.stderr)
        return 1
    # One flag and its value per line, unquoted: `spark-submit $(python -m sparkext
    # server-conf) ...` splits them back into arguments.
    for flag, value in zip(argv[::2], argv[1::2]):
        print(f"{flag} {value}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparkext",
                                     description="sparkext: Catalyst rules in Python")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("jar", help="print the path of the bundled shim jar (for --jars)")
    p.add_argument("--spark", help="a cluster's Spark version or line (default: the local pyspark)")
    p.add_argument("--scala", choices=("2.12", "2.13"), help="with --spark: its Scala version")

    p = sub.add_parser(
        "server-conf", help="print the spark-submit arguments (--jars, --conf) that start a "
                            "Spark Connect or Thrift server with sparkext and its rules")
    p.add_argument("--rules", action="append", default=[], metavar="MODULE:ATTRIBUTE",
                   help="more rules for spark.sparkext.rules (repeat or comma-separate)")
    p.add_argument("--no-builtin", action="store_true",
                   help="leave sparkext's built-in rules (sparkext.rules:BATCHES) out")
    p.add_argument("--python", default=sys.executable,
                   help="the interpreter for the server's rule worker (default: this one)")
    p.add_argument("--no-python", action="store_true",
                   help="leave spark.sparkext.python unset (Spark's interpreter choice)")

    def with_catalog(p):
        p.add_argument("--catalog", help="a folder of parquet tables, registered as views")
        return p

    p = with_catalog(sub.add_parser("plan", help="print a query's normalised plan"))
    p.add_argument("file")
    p.add_argument("--kind", default="optimized", choices=("optimized", "analyzed", "physical"))
    p.add_argument("--no-sparkext", action="store_true", help="plan without sparkext's rules")

    p = with_catalog(sub.add_parser("plan-diff", help="diff two plan files or SQL files' plans"))
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--kind", default="optimized", choices=("optimized", "analyzed", "physical"))
    p.add_argument("--no-sparkext", action="store_true", help="plan without sparkext's rules")

    p = with_catalog(sub.add_parser(
        "explain", help="the plan before and after sparkext's rules, rule by rule"))
    p.add_argument("file")
    p.add_argument("--instead-of-catalyst", action="store_true",
                   help="switch Catalyst's own pushdown/pruning/sort rules off first")

    args = parser.parse_args(argv)
    commands = {"jar": cmd_jar, "plan": cmd_plan, "plan-diff": cmd_plan_diff,
                "explain": cmd_explain, "server-conf": cmd_server_conf}
    return commands[args.command](args)
