"""A spark-submit application for tests/compat/test_standalone.py: a join, a filter and an
orderBy over generated parquet, run on a standalone cluster with two executors.

    spark-submit --master spark://... --jars SHIM \\
        --conf spark.sql.extensions=io.sparkext.SparkextExtensions standalone_job.py DATA

It writes the data, runs the query without sparkext (``spark.sparkext.enabled=false``,
Catalyst's rules as they come: plain Spark), then with sparkext's built-in rules
(Catalyst's own pushdown, pruning and sort removal switched off, so sparkext's do that
work) and a user rule, and checks, exiting non-zero if any check fails:

- both executors registered and each ran tasks (the driver's REST API);
- the run without sparkext kept its plan (the constant sort key is there);
- the user rule changed the plan (it runs here, in the driver's Python);
- the plan the executors ran is the rewritten one: the filters reached both file scans,
  the scans read only the columns the query needs, the constant sort key is gone, and the
  bridge accepted the rewrites;
- the rows equal the run without sparkext, in the same order.

It prints one JSON line, ``RESULT {...}``, with what it saw.
"""

from __future__ import annotations

import json
import re
import sys
import time
import urllib.request

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

EXECUTORS = 2
DEADLINE_SECONDS = 120
#: The query's sort keys without sparkext, and with it (region is constant under the filter).
PLAIN_KEYS = ["region ASC NULLS FIRST", "customer_id ASC NULLS FIRST", "order_id ASC NULLS FIRST"]
REWRITTEN_KEYS = PLAIN_KEYS[1:]


def generate(spark, data: str) -> None:
    """Orders (4 files) and customers (2 files); regions are the customers'."""
    orders = spark.range(0, 40_000, 1, 4).select(
        F.col("id").alias("order_id"),
        (F.col("id") * 7 % 500).alias("customer_id"),
        ((F.col("id") * 13 % 1000) / 4).cast("decimal(10,2)").alias("amount"),
        F.lit("x").alias("note"))
    customers = spark.range(0, 500, 1, 2).select(
        F.col("id").alias("customer_id"),
        F.concat(F.lit("c"), F.col("id").cast("string")).alias("name"),
        F.element_at(F.array(*map(F.lit, ["eu", "us", "apac"])),
                     (F.col("id") % 3 + 1).cast("int")).alias("region"))
    orders.write.parquet(f"{data}/orders")
    customers.write.parquet(f"{data}/customers")


def query(spark, data: str):
    orders = spark.read.parquet(f"{data}/orders")
    customers = spark.read.parquet(f"{data}/customers")
    return (orders.join(customers, "customer_id")
            .select("order_id", "customer_id", "name", "region", "amount")
            .where("region = 'eu' AND amount > 200")
            .orderBy("region", "customer_id", "order_id"))


def rows(df) -> list[list]:
    return [[str(v) if v is not None else None for v in r] for r in df.collect()]


def sort_keys(df) -> list[list[str]]:
    """The keys of every Sort in the optimized plan, expression ids removed."""
    out, stack = [], [df._jdf.queryExecution().optimizedPlan()]
    while stack:
        node = stack.pop()
        if node.nodeName() == "Sort":
            out.append([re.sub(r"#\d+L?", "", o.toString()) for o in _items(node.order())])
        stack.extend(_items(node.children()))
    return out


def _items(seq) -> list:
    it, out = seq.iterator(), []
    while it.hasNext():
        out.append(it.next())
    return out


def user_rule(changed: list):
    """A user's rule: a Filter over a Project moves below it when it reads only columns the
    Project passes through. ``changed`` records each plan it rewrote."""
    from sparkext import rule
    from sparkext.plan import Filter, Project

    @rule(matches=(Filter,))
    def filter_below_project(plan):
        def swap(node):
            match node:
                case Filter(condition=cond, child=Project(project_list=exprs, child=below)) if (
                        cond.deterministic and all(e.deterministic for e in exprs)
                        and cond.references <= below.output_ids):
                    return Project(exprs, Filter(cond, below))
                case _:
                    return node
        new = plan.transform_down(swap)
        if new is not plan:
            changed.append(type(plan).__name__)
        return new
    return filter_below_project


def executor_tasks(spark) -> dict[str, int]:
    """Tasks each executor (not the driver) has completed, from the driver's REST API. The
    listener that counts them runs behind the scheduler: poll until the count settles."""
    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/executors"
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        with urllib.request.urlopen(url, timeout=10) as answer:
            tasks = {e["id"]: e["completedTasks"] for e in json.load(answer)
                     if e["id"] != "driver"}
        if (len(tasks) >= EXECUTORS and all(tasks.values())) or time.monotonic() > deadline:
            return tasks
        time.sleep(0.2)


def check(failures: list, ok: bool, what: str) -> None:
    if not ok:
        failures.append(what)


def run_with_sparkext(spark, data: str, expected: list) -> tuple[dict, list]:
    import sparkext
    from sparkext.catalyst import excluded_rules_conf
    from sparkext.rules import builtin_batches
    from sparkext.testing.scans import file_scans

    for key, value in excluded_rules_conf().items():
        spark.conf.set(key, value)
    changed: list = []
    user = sparkext.Batch("user rules", sparkext.FixedPoint(10), (user_rule(changed),))
    sparkext.enable(spark, batches=[user, *builtin_batches()])
    sparkext.reset_metrics(spark)

    df = query(spark, data)
    got = rows(df)
    metrics = sparkext.metrics(spark)
    scans = {s.table: s for s in file_scans(df)}
    keys = sort_keys(df)
    seen = {
        "user rule changed": changed,
        "metrics": {k: metrics[k] for k in ("calls", "accepted", "rejected", "python_errors")},
        "scans": {t: {"columns": s.columns, "pushed": s.pushed_filters}
                  for t, s in scans.items()},
        "sort keys": keys,
        "rows": len(got),
    }
    failures: list = []
    check(failures, bool(changed), "the user rule never changed a plan")
    check(failures, metrics["accepted"] >= 1 and metrics["rejected"] == 0
          and metrics["python_errors"] == 0, f"bridge metrics: {seen['metrics']}")
    check(failures, set(scans) == {"orders", "customers"}, f"file scans: {sorted(scans)}")
    if set(scans) == {"orders", "customers"}:
        check(failures, any("amount" in f for f in scans["orders"].pushed_filters)
              and any("region" in f for f in scans["customers"].pushed_filters),
              f"the filters did not reach the scans: {seen['scans']}")
        check(failures, "note" not in scans["orders"].columns,
              f"the orders scan reads an unused column: {scans['orders'].columns}")
    check(failures, keys == [REWRITTEN_KEYS], f"the sort keys are not the rewritten ones: {keys}")
    check(failures, got == expected, "the rows differ from the run without sparkext")
    return seen, failures


def main(data: str) -> int:
    spark = SparkSession.builder.appName("sparkext-standalone").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    failures: list = []
    # spark.scheduler.minRegisteredResourcesRatio=1 held getOrCreate() until both
    # executors registered, or until its wait ran out: then this says so.
    registered = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    check(failures, registered == EXECUTORS, f"{registered} executors registered")
    generate(spark, data)

    spark.conf.set("spark.sparkext.enabled", "false")
    plain = query(spark, data)
    expected = rows(plain)
    plain_keys = sort_keys(plain)
    check(failures, plain_keys == [PLAIN_KEYS],
          f"without sparkext the plan should keep its sort keys: {plain_keys}")
    check(failures, bool(expected), "the query returned no rows: nothing was compared")
    spark.conf.set("spark.sparkext.enabled", "true")
    seen, more = run_with_sparkext(spark, data, expected)
    failures += more
    seen["plain sort keys"] = plain_keys

    tasks = executor_tasks(spark)
    seen["executor tasks"] = tasks
    check(failures, len(tasks) == EXECUTORS and all(tasks.values()),
          f"not every executor ran tasks: {tasks}")
    print("RESULT " + json.dumps(seen), flush=True)
    spark.stop()
    for failure in failures:
        print(f"CHECK FAILED: {failure}", file=sys.stderr, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
