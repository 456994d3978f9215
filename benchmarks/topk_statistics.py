"""What answering top-K and min/max/count from parquet statistics is worth, warm and cold.

Three copies of one table of ``--rows`` events (ts TIMESTAMP, id BIGINT, host STRING with
40 values, value DOUBLE, day DATE = to_date(ts)) over ``--days`` days, generated once with
Spark and cached outside the tree, in ``~/.cache/sparkext/bench/topk-<rows>-<files>/``
(``-<days>d`` appended for another ``--days``; ``--data DIR`` to put it elsewhere; a dataset
without its ``<name>.done`` marker, e.g. an interrupted generation, is written again;
``--generate-only`` stops there). 20M rows take ~4 minutes on 2 busy cores:

  appended  ``--files`` files in time order with overlapping ranges between neighbouring
            files, as appends do: file i holds timestamps drawn uniformly from
            [start + i*W, start + (i+1.5)*W), sorted within the file, 4 row groups each
  shuffled  the same rows dealt round-robin to as many files, in a hash's order within
            each: every file and row group spans the whole time range
  by_day    the same rows partitionBy("day"): one file per day directory, 1-2 row groups

Timestamps are written as TIMESTAMP_MICROS (``spark.sql.parquet.outputTimestampType``):
Spark's default, INT96, has no min/max statistics in parquet footers, so no rule could use
them. Queries (each builds its DataFrame anew, so planning and file listing are counted):

  topk         appended.orderBy(desc(ts)).limit(100).collect()
  show         appended.orderBy(desc(ts)).show()           (a limit of 21)
  by_day_topk  by_day.orderBy(desc(day), desc(ts)).limit(100).collect()
  max          appended.agg(max(ts)).collect()
  min_count    appended.agg(min(ts), count(*)).collect()
  shuffled     shuffled.orderBy(desc(ts)).limit(100).collect()  (control: nothing to gain)
  topk_id      appended.orderBy(desc(id)).limit(100).collect()  (a BIGINT key: ids grow
               file by file, each file's range apart)
  max_id       appended.agg(max(id)).collect()

In one local[2] session, ``plain`` (spark.sparkext.enabled=false) and ``sparkext``
(``sparkext.enable(spark)``, the built-in rules) interleaved: a first untimed run of each
query in each mode (footer caches filled: "warm"), then ``--rounds`` rounds, the modes'
order alternating. Reported per query: the median wall time per mode, plain/sparkext and
the goal. ``--cold`` adds a ``cold`` mode: sparkext right after
``io.sparkext.TestingSupport.clearFooterCache()``. ``--profile`` runs each query once more
per mode and splits its time into building the DataFrame (reading the path: listing files,
a Spark job beyond 32 directories, and a schema-inference job; analysis), optimization,
planning and execution, with the jobs, tasks, files read and rows scanned (fewer rows
than the table's: row groups were skipped). ``--catalog`` reads catalog tables (CREATE
TABLE ... USING parquet LOCATION) instead of paths. The machine's load average is printed
at the start and the end: the figures are noisy.

``--lake delta`` or ``--lake iceberg`` reads the appended and shuffled rows as a Delta table
(a path, ``delta-<name>/``) or an Iceberg table (``lake.db.<name>``, a Hadoop catalog in
``iceberg/``), written once from the parquet copies (one task per parquet file: one Delta
or Iceberg file each) next to them; ``plain`` then has the lake's own planning (Delta's
metadata-only queries, Iceberg's aggregate push-down and file pruning by its manifests),
which says where the lake already does what sparkext does. It runs in a venv with the
lake's package (the compat rows' venvs: ``delta-spark`` 4.4 with pyspark 4.2.0; pyspark
4.1 with Iceberg 1.12's runtime, fetched through ``spark.jars.packages`` into
``~/.cache/sparkext/ivy``)::

    ~/.cache/sparkext/venvs/<pyspark>-<hash>/bin/python benchmarks/topk_statistics.py \
        --lake iceberg --queries topk show max min_count topk_id max_id shuffled

    python benchmarks/topk_statistics.py [--rows 20000000] [--files 200] [--rounds 7]
        [--data DIR] [--days 700] [--modes plain sparkext] [--cold] [--profile] [--catalog]
        [--lake delta|iceberg] [--queries ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from py4j.protocol import Py4JError  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

import sparkext  # noqa: E402

DATASETS = ("appended", "shuffled", "by_day")
GENERATION = "3"  # bump when the data's layout changes: a marker of another version is stale
START_US = 1_672_531_200_000_000  # 2023-01-01T00:00:00Z
ROW_GROUPS_PER_FILE = 4

# name: (dataset, DataFrame -> DataFrame, action, goal as a ratio plain/sparkext)
QUERIES = {
    "topk": ("appended", lambda df: df.orderBy(F.desc("ts")).limit(100), "collect", 10.0),
    "show": ("appended", lambda df: df.orderBy(F.desc("ts")), "show", 10.0),
    "by_day_topk": ("by_day", lambda df: df.orderBy(F.desc("day"), F.desc("ts")).limit(100),
                    "collect", 10.0),
    "max": ("appended", lambda df: df.agg(F.max("ts")), "collect", 10.0),
    "min_count": ("appended", lambda df: df.agg(F.min("ts"), F.count("*")), "collect", 10.0),
    "shuffled": ("shuffled", lambda df: df.orderBy(F.desc("ts")).limit(100), "collect", 0.95),
    "topk_id": ("appended", lambda df: df.orderBy(F.desc("id")).limit(100), "collect", 10.0),
    "max_id": ("appended", lambda df: df.agg(F.max("id")), "collect", 10.0),
}
#: The queries a run makes unless told (--queries); the lakes have no by_day copy.
DEFAULT_QUERIES = ("topk", "show", "by_day_topk", "max", "min_count", "shuffled")
LAKE_DATASETS = ("appended", "shuffled")
IVY_DIR = Path.home() / ".cache/sparkext/ivy"
ICEBERG_PACKAGE = "org.apache.iceberg:iceberg-spark-runtime-{spark}_2.13:1.12.0"


def generate(spark, data: Path, rows: int, files: int, days: int) -> None:
    """Writes each dataset whose marker is missing or stale (the others are reused)."""
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    # A row group ends at this many rows (parquet-mr >= 1.14), not at parquet.block.size
    # (a size in the writer's buffers, which varies with the dictionaries): 4 row groups
    # per appended or shuffled file (1% slack: files differ by a few rows), 1-2 per day.
    group_rows = int(rows / files / ROW_GROUPS_PER_FILE * 1.01) + 1
    window_us = days * 86_400_000_000 / (files + 0.5)  # the last file ends after `days` days

    def write(name, df, partition_by=None):
        marker = data / f"{name}.done"
        if marker.exists() and marker.read_text().strip() == GENERATION:
            return
        for stale in DATASETS if name == "appended" else (name,):  # the others copy it
            (data / f"{stale}.done").unlink(missing_ok=True)
        shutil.rmtree(data / name, ignore_errors=True)
        started = time.perf_counter()
        writer = df.write.option("parquet.block.row.count.limit", str(group_rows))
        writer = writer.mode("overwrite")
        if partition_by:
            writer = writer.partitionBy(partition_by)
        writer.parquet(str(data / name))
        marker.write_text(GENERATION + "\n")
        print(f"generated {name} in {time.perf_counter() - started:.0f} s", flush=True)

    data.mkdir(parents=True, exist_ok=True)
    write("appended", events(spark, rows, files, window_us))
    appended = spark.read.parquet(str(data / "appended"))
    # Dealt round-robin (files of equal size), then in the order of a hash: every file and
    # row group covers the whole time range.
    write("shuffled", appended.repartition(files).sortWithinPartitions(F.xxhash64("id")))
    # Each task gets whole days, in time order: one file per day directory.
    write("by_day", appended.repartition(files, "day").sortWithinPartitions("day", "ts"),
          partition_by="day")


def events(spark, rows: int, files: int, window_us: float):
    """The appended rows: ``files`` partitions, partition i the i-th window of time (and
    the i-th range of ids), sorted by time."""
    # spark.range splits its ids into `files` contiguous partitions: partition i is file i.
    ts_us = F.lit(START_US) + ((F.spark_partition_id() + F.rand(7) * 1.5) * window_us).cast("long")
    return (spark.range(rows, numPartitions=files)
            .select(F.timestamp_micros(ts_us).alias("ts"), "id",
                    F.format_string("host-%02d", F.pmod(F.xxhash64("id"), F.lit(40)))
                    .alias("host"),
                    (F.rand(11) * 1000).alias("value"))
            .withColumn("day", F.to_date("ts"))
            .sortWithinPartitions("ts"))


def lake_conf(lake: str, data: Path) -> dict[str, str]:
    """The session settings a lake needs (Delta's jars come from its pip package)."""
    if lake == "delta":
        return {"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
                "spark.sql.catalog.spark_catalog":
                    "org.apache.spark.sql.delta.catalog.DeltaCatalog",
                "spark.jars.ivy": str(IVY_DIR)}
    import pyspark

    line = ".".join(pyspark.__version__.split(".")[:2])
    return {"spark.sql.extensions":
                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
            "spark.jars.packages": ICEBERG_PACKAGE.format(spark=line),
            "spark.jars.ivy": str(IVY_DIR),
            "spark.sql.catalog.lake": "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.catalog.lake.type": "hadoop",
            "spark.sql.catalog.lake.warehouse": str(data / "iceberg")}


def generate_lake(spark, lake: str, data: Path) -> None:
    """The appended and shuffled parquet rows written as Delta or Iceberg tables, one
    output file per parquet file (each task reads one file and writes its rows, in order)."""
    for name in LAKE_DATASETS:
        marker = data / f"{lake}-{name}.done"
        if marker.exists() and marker.read_text().strip() == GENERATION:
            continue
        started = time.perf_counter()
        # (no two files in one task: a split per file, whatever its size)
        spark.conf.set("spark.sql.files.maxPartitionBytes", str(1 << 40))
        spark.conf.set("spark.sql.files.openCostInBytes", str(1 << 40))
        rows = spark.read.parquet(str(data / name))
        if lake == "delta":
            shutil.rmtree(data / f"delta-{name}", ignore_errors=True)
            rows.write.format("delta").save(str(data / f"delta-{name}"))
        else:
            spark.sql(f"DROP TABLE IF EXISTS lake.db.{name}")
            rows.writeTo(f"lake.db.{name}").using("iceberg").tableProperty(
                "write.distribution-mode", "none").create()
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
        spark.conf.unset("spark.sql.files.openCostInBytes")
        marker.write_text(GENERATION + "\n")
        print(f"generated {lake} {name} in {time.perf_counter() - started:.0f} s", flush=True)


def describe(data: Path) -> None:
    """Files, bytes and row groups (from the footers, if pyarrow is there) per dataset."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        pq = None
    for name in DATASETS:
        paths = sorted(p for p in (data / name).rglob("*.parquet"))
        size = sum(p.stat().st_size for p in paths)
        line = f"{name}: {len(paths)} files, {size / 2**20:.0f} MiB"
        if pq is not None and paths:
            groups = [pq.ParquetFile(p).metadata.num_row_groups for p in paths]
            line += (f", {sum(groups)} row groups ({min(groups)}-{max(groups)} per file, "
                     f"median {statistics.median(groups):g})")
        if name == "by_day":
            line += f", {sum(1 for p in (data / name).glob('day=*'))} days"
        print(line)


def clear_footer_cache(spark) -> bool:
    """Empties sparkext's footer cache; False when the shim has no such method (yet)."""
    try:
        spark._jvm.io.sparkext.TestingSupport.clearFooterCache()
        return True
    except (Py4JError, TypeError):  # no method; TypeError: JavaPackage (no such class)
        return False


def run(spark, read, name: str, profile: bool = False):
    """Runs one query to completion: its wall time in seconds (and, profiling, the rest)."""
    dataset, build, action, _ = QUERIES[name]
    started = time.perf_counter()
    df = build(read(dataset))
    built = time.perf_counter()
    if profile:  # the DataFrame that runs must be this one, to read its QueryExecution
        df = df.limit(21) if action == "show" else df
        df.collect()
    elif action == "show":
        df._jdf.showString(20, 20, False)
    else:
        df.collect()
    wall = time.perf_counter() - started
    return (wall, built - started, df) if profile else wall


def jlist(jseq) -> list:
    it = jseq.iterator()
    out = []
    while it.hasNext():
        out.append(it.next())
    return out


def scans(plan) -> list:
    """The file scans of an executed physical plan (inside adaptive plans and stages)."""
    found, stack = [], [plan]
    while stack:
        node = stack.pop()
        kind = node.getClass().getSimpleName()
        if kind == "AdaptiveSparkPlanExec":
            stack.append(node.executedPlan())
        elif kind.endswith("QueryStageExec"):
            stack.append(node.plan())
        elif "FileSourceScan" in kind or "BatchScan" in kind:
            found.append(node)
        stack.extend(jlist(node.children()))
    return found


def metric(node, key: str) -> int:
    m = node.metrics().get(key)
    return int(m.get().value()) if m.isDefined() else 0


def profile_once(spark, read, name: str, mode: str) -> str:
    sc = spark.sparkContext
    group = f"topk-profile-{name}-{mode}-{time.monotonic_ns()}"
    sc.setJobGroup(group, group)
    try:
        wall, build, df = run(spark, read, name, profile=True)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    qe = df._jdf.queryExecution()
    phases = qe.tracker().phases()

    def phase(key):
        p = phases.get(key)
        return p.get().durationMs() / 1000 if p.isDefined() else 0.0

    opt, plan = phase("optimization"), phase("planning")
    tracker = sc.statusTracker()
    jobs = tracker.getJobIdsForGroup(group)
    stages = [s for j in jobs if (info := tracker.getJobInfo(j)) for s in info.stageIds]
    tasks = sum(info.numTasks for s in stages if (info := tracker.getStageInfo(s)))
    found = scans(qe.executedPlan())
    files = sum(metric(s, "numFiles") for s in found)
    rows = sum(metric(s, "numOutputRows") for s in found)
    return (f"| {name} | {mode} | {wall * 1000:.0f} | {build * 1000:.0f} "
            f"({phase('analysis') * 1000:.0f}) | {opt * 1000:.0f} | {plan * 1000:.0f} | "
            f"{(wall - build - opt - plan) * 1000:.0f} | {len(jobs)} | {tasks} | "
            f"{files} | {rows:,} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--days", type=int, default=700, help="the time span, in days")
    parser.add_argument("--data", type=Path, default=None,
                        help="default: ~/.cache/sparkext/bench/topk-<rows>-<files>[-<days>d]")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--queries", nargs="*", default=list(DEFAULT_QUERIES),
                        choices=list(QUERIES))
    parser.add_argument("--modes", nargs="*", default=["plain", "sparkext"],
                        choices=["plain", "sparkext"])
    parser.add_argument("--cold", action="store_true",
                        help="also time sparkext right after clearing its footer cache")
    parser.add_argument("--profile", action="store_true",
                        help="one more run per query and mode, its time split by phase")
    parser.add_argument("--lake", choices=["delta", "iceberg"],
                        help="read Delta or Iceberg copies of the appended and shuffled rows")
    parser.add_argument("--catalog", action="store_true",
                        help="read catalog tables over the data instead of paths")
    parser.add_argument("--generate-only", action="store_true")
    args = parser.parse_args()
    data = args.data or Path.home() / ".cache/sparkext/bench" / (
        f"topk-{args.rows}-{args.files}" + (f"-{args.days}d" if args.days != 700 else ""))
    print("load average at start: " + " ".join(f"{x:.2f}" for x in os.getloadavg()),
          flush=True)

    # CREATE TABLE must not leave a spark-warehouse in the working directory
    warehouse = tempfile.mkdtemp(prefix="topk-warehouse-")
    builder = SparkSession.builder.master("local[2]").appName("sparkext-topk-statistics")
    for key, value in {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                       "spark.sql.shuffle.partitions": "4", "spark.driver.memory": "4g",
                       "spark.sql.session.timeZone": "UTC",
                       "spark.sql.warehouse.dir": warehouse,
                       **(lake_conf(args.lake, data) if args.lake else {})}.items():
        builder = builder.config(key, value)
    if args.lake == "delta":
        from delta import configure_spark_with_delta_pip

        builder = configure_spark_with_delta_pip(builder)
    spark = sparkext.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")

    started = time.perf_counter()
    generate(spark, data, args.rows, args.files, args.days)
    print(f"data in {data} (ready after {time.perf_counter() - started:.0f} s)")
    describe(data)
    if args.generate_only:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)
        return

    if args.lake:
        generate_lake(spark, args.lake, data)
        unknown = [q for q in args.queries if QUERIES[q][0] not in LAKE_DATASETS]
        if unknown:
            raise SystemExit(f"--lake has no copy for {unknown} (datasets: {LAKE_DATASETS})")

        def read(name):
            if args.lake == "delta":
                return spark.read.format("delta").load(str(data / f"delta-{name}"))
            return spark.table(f"lake.db.{name}")
    elif args.catalog:
        for name in DATASETS:
            spark.sql(f"CREATE TABLE bench_{name} USING parquet LOCATION '{data / name}'")
        spark.sql("ALTER TABLE bench_by_day RECOVER PARTITIONS")

        def read(name):
            return spark.table(f"bench_{name}")
    else:
        def read(name):
            return spark.read.parquet(str(data / name))

    modes = list(args.modes)
    if "sparkext" in modes:
        sparkext.enable(spark)
    if args.cold:
        if "sparkext" in modes and clear_footer_cache(spark):
            modes.append("cold")
        else:
            print("cold mode unavailable: io.sparkext.TestingSupport.clearFooterCache() "
                  "does not exist in this shim (or sparkext is not among the modes)")

    def timed(mode, name):
        spark.conf.set("spark.sparkext.enabled", str(mode != "plain").lower())
        if mode == "cold":
            clear_footer_cache(spark)
        return run(spark, read, name)

    times: dict[str, dict[str, list[float]]] = {n: {m: [] for m in modes} for n in args.queries}
    for r in range(args.rounds + 1):  # round 0 warms up (footer caches filled), untimed
        for i, name in enumerate(args.queries):
            for mode in modes if (r + i) % 2 == 0 else reversed(modes):
                t = timed(mode, name)
                if r:
                    times[name][mode].append(t)
        print(f"round {r} done" + (" (warm-up)" if not r else ""), flush=True)

    if args.profile:
        print("\n| query | mode | wall (ms) | build (analysis) | optimization | planning | "
              "execution | jobs | tasks | files read | rows scanned |")
        print("| --- | --- |" + " ---: |" * 9)
        for name in args.queries:
            for mode in modes:
                spark.conf.set("spark.sparkext.enabled", str(mode != "plain").lower())
                if mode == "cold":
                    clear_footer_cache(spark)
                print(profile_once(spark, read, name, mode), flush=True)
        print("(show profiled as limit(21).collect(); build = reading the path or table: "
              "listing files, inferring the schema, analysis; execution = wall - build - "
              "optimization - planning; jobs and tasks include the build's, if any)")

    ours = [m for m in ("sparkext", "cold") if m in modes]
    ratios = [m for m in ours if "plain" in modes]
    header = [f"{m} (ms)" for m in modes] + [f"plain / {m}" for m in ratios]
    print("\n| query | goal: plain / sparkext, warm | " + " | ".join(header) + " |")
    print("| --- | ---: |" + " ---: |" * len(header))
    for name in args.queries:
        med = {m: statistics.median(v) for m, v in times[name].items()}
        cells = [f"{med[m] * 1000:.0f}" for m in modes]
        cells += [f"{med['plain'] / med[m]:.2f}x" for m in ratios]
        goal = QUERIES[name][3]
        print(f"| {name} | >= {goal:g}x | " + " | ".join(cells) + " |")
    print(f"\nrows: {args.rows:,}, files: {args.files}, days: {args.days}, rounds: "
          f"{args.rounds} (medians, after one untimed warm-up round), interleaved, "
          f"{args.lake or ('catalog tables' if args.catalog else 'path-based reads')}, cores: "
          f"{os.cpu_count()}")
    print("load average at end: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    spark.stop()
    shutil.rmtree(warehouse, ignore_errors=True)


if __name__ == "__main__":
    main()
