"""Guards (issue 35): Python checks that refuse queries, named at launch, failing closed,
and out of any session's reach.

Two kinds of test:

- the built-in guards on hand-built plans (no Spark): what each counts as a partition
  filter, a file read, an equality between join sides;
- real Spark with the real shim: guards are static, fixed when a SparkContext starts, so
  a child process (``tests/guards_app.py``) runs three contexts one after another (the main
  configuration; a guard module that fails to import; a guard that hangs, and a built-in
  guard in warn mode), and a Spark Connect server with guards serves a client in another
  child. Both start with the module and run while the shared session computes plain Spark's
  rows for every query the guards allow.

The data is written here, with pyarrow: ``events`` partitioned by ``p`` (4 partitions of
2 files), ``lookup`` partitioned by ``day`` (allow-listed), ``tiny`` three rows of VALUES;
``ev2`` is a temp view reading the files of ``events`` through DSv2 (parquet taken off
``spark.sql.sources.useV1SourceList``), whose scan Spark builds before the guards see it.
The main configuration refuses a partitioned read without a partition filter, more than 5
files, and a join without an equality of two inputs both estimated over 300 bytes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkext.expressions import (
    AttributeReference,
    EqualTo,
    GreaterThan,
    IsNotNull,
    LessThan,
    OpaqueExpression,
    lit,
)
from sparkext.facts import DataFile, Format, PushedFilter, RelationFacts, TableId
from sparkext.guards import (
    Query,
    Refused,
    limit_cartesian_joins,
    limit_scans,
    require_partition_filters,
)
from sparkext.plan import Filter, Join, Project, Relation
from sparkext import types as T
from tests.conftest import ROOT
from tests.servers import ConnectServer

REFUSED = "SPARKEXT_QUERY_REFUSED"
GUARD_NAMES = "require_partition_filters,limit_scans,limit_cartesian_joins"
SPARKEXT_CATALYST_RULES = "io.sparkext.PythonRules(once),io.sparkext.PythonRules(fixed_point)"
PRUNING_RULE = "org.apache.spark.sql.execution.datasources.PruneFileSourcePartitions"
STATIC_KEY = "spark.sparkext.guards.partitionFilter.tables"
#: The user a Connect client says it is (its URL's user_id): the audit records name it.
CONNECT_USER = "guards-test-user"


def _no_connect() -> str | None:
    """Why this environment cannot run the Connect half (the compat rows of older lines and
    their venvs: pyspark 3.5 ships no Connect server, and no venv of theirs has grpcio)."""
    import pyspark

    if int(pyspark.__version__.split(".")[0]) < 4:
        return f"pyspark {pyspark.__version__} ships no Spark Connect server"
    try:
        import grpc  # noqa: F401
    except ImportError:
        return "the Spark Connect client needs grpcio, not installed here"
    return None


NO_CONNECT = _no_connect()
#: Spark 3.5 (the compat row) plans a refused query twice: once more for its UI, whose
#: failure it catches (docs/guards.md, "Known gaps"); each planning is judged and audited.
SPARK_35 = __import__("pyspark").__version__.startswith("3.")
PLANNED = 2 if SPARK_35 else 1


def static_refusal(got: dict) -> bool:
    """Spark's refusal to set or unset a static setting (its error class differs by line:
    CANNOT_MODIFY_STATIC_CONFIG, CANNOT_MODIFY_CONFIG on 4.0, a legacy class on 3.5)."""
    return got.get("error") == "AnalysisException" and \
        "Cannot modify the value of" in got.get("message", "")

BUILTIN = {
    "spark.sparkext.guards.partitionFilter.tables": "*",
    "spark.sparkext.guards.partitionFilter.allow": "default.lookup",
    "spark.sparkext.guards.maxScan.files": "5",
    "spark.sparkext.guards.cartesian.bytes": "300",
}

# Queries the main configuration lets through; their rows are compared with plain Spark's.
ALLOWED = {
    "partition filter": "SELECT id, s FROM events WHERE p = 1",
    "through a view": "SELECT count(*), max(id) FROM ev WHERE p = 2",
    "through a CTE": "WITH e AS (SELECT * FROM events) SELECT s, count(*) FROM e WHERE p = 0 "
                     "GROUP BY s",
    "pushed from an outer query": "SELECT * FROM (SELECT id, p FROM events) x WHERE x.p > 2",
    "through a join": "SELECT e.id, t.v FROM events e JOIN tiny t ON e.id % 3 = t.k "
                      "WHERE e.p = 1",
    "in a subquery": "SELECT k FROM tiny WHERE k < (SELECT count(*) FROM events WHERE p = 3)",
    "allow-listed table": "SELECT day, count(*) FROM lookup GROUP BY day",
    "equi-join of large inputs": "SELECT count(*) FROM events a JOIN events b ON a.id = b.id "
                                 "WHERE a.p = 1 AND b.p = 2",
    "cartesian with a small input": "SELECT e.id, t.k FROM events e CROSS JOIN tiny t "
                                    "WHERE e.p = 1",
    "DSv2 scan with a partition filter": "SELECT id, s FROM ev2 WHERE p = 1",
    "DSv2 scan with a partition and a data filter": "SELECT id FROM ev2 WHERE p = 2 AND id > 450",
}
# Queries it refuses, and the guard that must say so.
REFUSED_BY = {
    "no partition filter": ("SELECT count(*) FROM events", "require_partition_filters"),
    "a data column filter only": ("SELECT * FROM events WHERE id = 7",
                                  "require_partition_filters"),
    "a view without filter": ("SELECT count(*) FROM ev", "require_partition_filters"),
    "in a subquery": ("SELECT k FROM tiny WHERE k < (SELECT count(*) FROM events)",
                      "require_partition_filters"),
    "an IN subquery": ("SELECT * FROM tiny WHERE k IN (SELECT id FROM events)",
                       "require_partition_filters"),
    "a join on the partition column only": (
        "SELECT count(*) FROM events e JOIN tiny t ON e.p = t.k", "require_partition_filters"),
    "too many files": ("SELECT count(*) FROM events WHERE p < 3", "limit_scans"),
    "a cartesian product of large inputs": (
        "SELECT a.id, b.id FROM events a, events b WHERE a.p = 1 AND b.p = 2",
        "limit_cartesian_joins"),
    "a non-equi join of large inputs": (
        "SELECT a.id, b.id FROM events a JOIN events b ON a.id < b.id "
        "WHERE a.p = 1 AND b.p = 2", "limit_cartesian_joins"),
    # ev2 reads events' files through DSv2: the scan Spark built holds the filters
    "DSv2 scan without a partition filter": ("SELECT count(*) FROM ev2 WHERE id > 7",
                                             "require_partition_filters"),
    "DSv2 scan over the file limit": ("SELECT count(*) FROM ev2 WHERE p < 3", "limit_scans"),
    # (Spark infers p IS NOT NULL and hands it to the scan as a partition filter)
    "DSv2 scan joined on the partition column only": (
        "SELECT count(*) FROM ev2 e JOIN tiny t ON e.p = t.k", "require_partition_filters"),
}
# The same rows in plain Spark, for the DataFrame query and the union of a cached part.
PLAIN = {
    "dataframe": "SELECT s, count(*) FROM events WHERE p = 0 GROUP BY s",
    "cached union": "SELECT * FROM events WHERE p = 1 UNION ALL SELECT * FROM events "
                    "WHERE p = 1 UNION ALL SELECT * FROM events WHERE p = 1",
}
# What the Connect client runs: one refusal of each guard, and three kinds of allowed read.
CONNECT_REFUSED = ("no partition filter", "too many files", "a cartesian product of large inputs")
CONNECT_ALLOWED = ("through a view", "through a join", "in a subquery")
# The user's guards (TEAM_GUARDS), asked by a literal in the query.
USER = {
    "refuses": "SELECT id FROM events WHERE p = 1 AND s <> 'please refuse'",
    "raises": "SELECT id FROM events WHERE p = 1 AND s <> 'please raise'",
    "warns": "SELECT id FROM events WHERE p = 1 AND s <> 'please warn'",
}

TEAM_GUARDS = '''
import threading

from sparkext import guard, refuse
from sparkext.expressions import Literal


def says(query, word):
    return any(isinstance(e, Literal) and e.value == word
               for node in query.walk() for x in node.expressions for e in x.walk())


@guard()
def refuses_when_asked(query):
    if says(query, "please refuse"):
        refuse("the query asked to be refused")


@guard()
def raises_when_asked(query):
    if says(query, "please raise"):
        raise ValueError("a bug in the team's guard")


@guard(mode="warn")
def warns_when_asked(query):
    if says(query, "please warn"):
        refuse("the query asked for a warning")


@guard()
def hangs_when_asked(query):
    if says(query, "please hang"):
        threading.Event().wait()


GUARDS = [refuses_when_asked, raises_when_asked, warns_when_asked]
SLOW = [hangs_when_asked]
'''
BROKEN_GUARDS = "import sparkext_no_such_module_for_guards\n"

LOG4J = '''
rootLogger.level = error
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %p %c: %m%n
appender.audit.type = File
appender.audit.name = audit
appender.audit.fileName = {audit}
appender.audit.layout.type = PatternLayout
appender.audit.layout.pattern = %m%n
logger.audit.name = sparkext.audit
logger.audit.level = info
logger.audit.additivity = false
logger.audit.appenderRef.audit.ref = audit
logger.guards.name = io.sparkext.Guards
logger.guards.level = warn
'''


# -- the built-in guards on hand-built plans ----------------------------------------------

def attr(name, i, t=T.LONG):
    return AttributeReference(name, t, True, None, i)


ID, P, K = attr("id", 1), attr("p", 2), attr("k", 3)


def relation(handle=0, table="events", partitioned=True, files=None, fmt=Format.PARQUET,
             **more):
    more = {"partitioning": ("p",) if partitioned else (), **more}
    facts = RelationFacts(fmt, TableId("spark_catalog", ("default",), table) if table else None,
                          ("/data/t",), (P,) if partitioned else (), files=files,
                          files_unknown=None if files is not None else "a time-out", **more)
    return Relation("LogicalRelation", (ID, P), handle, table, facts_=facts)


def refusal(guard, plan, **query) -> str | None:
    try:
        guard(Query(plan, **query))
    except Refused as r:
        return r.reason
    return None


PARTITIONS = require_partition_filters()


def test_a_partition_column_comparison_is_a_partition_filter_through_projects():
    plan = Project((ID,), Filter(EqualTo(P, lit(1, T.LONG)), relation()))
    assert refusal(PARTITIONS, plan) is None


def test_is_not_null_on_the_partition_column_is_not_a_partition_filter():
    """Spark infers it from a join on the column: it prunes nothing but NULL partitions."""
    reason = refusal(PARTITIONS, Filter(IsNotNull(P), relation()))
    assert reason == "spark_catalog.default.events is partitioned by p and read without a " \
                     "filter on it"


def test_dynamic_partition_pruning_is_not_a_partition_filter():
    """Spark adds it for a join with a filtered table, and may drop it at run time."""
    dpp = OpaqueExpression("DynamicPruningSubquery", (P,), 9, _type=T.BOOLEAN)
    assert refusal(PARTITIONS, Filter(dpp, relation())) is not None


def test_a_filter_on_data_columns_or_mixing_them_is_not_a_partition_filter():
    mixed = GreaterThan(P, ID)
    assert refusal(PARTITIONS, Filter(EqualTo(ID, lit(7, T.LONG)), relation())) is not None
    assert refusal(PARTITIONS, Filter(mixed, relation())) is not None


def test_a_partition_filter_on_one_side_of_a_join_leaves_the_other_side_unfiltered():
    other = Relation("LogicalRelation", (K,), 1, "other", facts_=RelationFacts(
        Format.PARQUET, TableId("spark_catalog", ("default",), "other"), partition_columns=(K,),
        partitioning=("k",)))
    plan = Join(Filter(EqualTo(P, lit(1, T.LONG)), relation()), other, "Inner", EqualTo(ID, K))
    assert "default.other" in refusal(PARTITIONS, plan)


def test_subqueries_are_judged_with_their_query():
    filtered = Filter(EqualTo(P, lit(1, T.LONG)), relation())
    assert refusal(PARTITIONS, filtered, subqueries=[relation(handle=5)]) is not None


@pytest.mark.parametrize(("tables", "allow", "refused"), [
    (("events",), (), True),
    (("default.events",), (), True),
    (("spark_catalog.default.events",), (), True),
    (("EVENTS",), (), True),
    (("other.events",), (), False),
    (("vents",), (), False),
    (("*",), ("events",), False),
    (("*",), ("default.lookup",), True),
])
def test_tables_and_the_allow_list_match_the_end_of_the_qualified_name(tables, allow, refused):
    guard = require_partition_filters(tables, allow)
    assert (refusal(guard, relation()) is not None) is refused


def test_a_path_read_is_covered_by_star_only():
    path_read = relation(table=None)
    assert refusal(require_partition_filters(("*",)), path_read) is not None
    assert refusal(require_partition_filters(("events",)), path_read) is None


def files(*sizes_and_partitions):
    return tuple(DataFile(f"/data/t/f{i}", size, 0, {P.expr_id: p}, None, {}, partition=(p,))
                 for i, (size, p) in enumerate(sizes_and_partitions))


def test_a_scan_that_took_filters_is_judged_by_them_not_by_the_plans_filters():
    """A DSv2 scan (Iceberg's; a file source through DSv2) after push-down: the filters its
    source applies in full are gone from the plan, and one left in the plan was not used to
    prune. A filter on the source column of a hidden partitioning restricts too."""
    day = PushedFilter("day = 3", True)
    data = PushedFilter("id > 7", False)
    on_day = Filter(EqualTo(P, lit(3, T.LONG)), relation(pushed_filters=(data,)))
    assert refusal(PARTITIONS, relation(pushed_filters=(day,))) is None
    assert refusal(PARTITIONS, relation(pushed_filters=(data, day))) is None
    assert refusal(PARTITIONS, relation(pushed_filters=())) is not None
    assert refusal(PARTITIONS, on_day) is not None
    unpartitioned = relation(partitioned=False, pushed_filters=())
    assert refusal(PARTITIONS, unpartitioned) is None
    hidden = relation(partitioned=False, pushed_filters=(data,), partitioning=("days(ts)",))
    assert refusal(PARTITIONS, hidden) == ("spark_catalog.default.events is partitioned by "
                                           "days(ts) and read without a filter on it")


def test_a_scan_whose_filters_are_unknown_is_refused_saying_why():
    unknown = relation(pushed_unknown="a com.example.Scan scan does not say which filters it took")
    reason = refusal(PARTITIONS, Filter(EqualTo(P, lit(3, T.LONG)), unknown))
    assert reason == ("spark_catalog.default.events is partitioned by p and cannot be checked "
                      "for a filter on it: a com.example.Scan scan does not say which filters "
                      "it took")


def test_limit_scans_counts_bytes_files_and_partitions_over_every_read():
    read = relation(files=files((100, 1), (100, 1), (50, 2)))
    plan = Join(read, relation(handle=1, files=files((10, 3))), "Inner", EqualTo(ID, ID))
    assert refusal(limit_scans(max_bytes=260), plan) is None   # (at the limit is not over)
    assert refusal(limit_scans(max_bytes=259), plan) == \
        "its scans read 260 bytes, over the limit of 259"
    assert refusal(limit_scans(max_files=3), plan) == \
        "its scans read 4 files, over the limit of 3"
    assert refusal(limit_scans(max_partitions=2), plan) == \
        "its scans read 3 partitions, over the limit of 2"
    assert refusal(limit_scans(max_files=4, max_partitions=3), plan) is None


def test_limit_scans_refuses_a_file_source_whose_files_are_unknown_and_skips_others():
    unknown = relation(files=None)
    assert "files of spark_catalog.default.events (a time-out) are not known" in \
        refusal(limit_scans(max_files=100), unknown)
    cached = relation(files=None, fmt=Format.CACHED, partitioned=False)
    assert refusal(limit_scans(max_files=0), cached) is None


def sized(join, left, right):
    return {"input_sizes": {7: (left, right)}, "handle_of": lambda n: 7 if n is join else None}


@pytest.mark.parametrize(("condition", "refused"), [
    (None, True),
    (LessThan(ID, K), True),
    (EqualTo(ID, lit(1, T.LONG)), True),   # one side only: still a nested loop
    (EqualTo(ID, K), False),
])
def test_a_join_without_an_equality_between_its_sides_of_two_large_inputs(condition, refused):
    other = Relation("LocalRelation", (K,), 1)
    join = Join(relation(), other, "Inner", condition)
    assert (refusal(limit_cartesian_joins(300), join, **sized(join, 400, 400)) is not None) \
        is refused
    assert refusal(limit_cartesian_joins(300), join, **sized(join, 400, 200)) is None


def test_an_unknown_join_input_size_counts_as_large():
    join = Join(relation(), Relation("LocalRelation", (K,), 1), "Cross", None)
    assert "an unknown size" in refusal(limit_cartesian_joins(300), join, **sized(join, None, 400))


# -- real Spark ----------------------------------------------------------------------------

def write_data(root: Path) -> dict[str, Path]:
    """``events``: 4 partitions of 2 files of 200 rows; ``lookup``: 2 of one file."""
    events, lookup = root / "events", root / "lookup"
    for p in range(4):
        for f in range(2):
            first = (p * 2 + f) * 200
            ids = list(range(first, first + 200))
            (events / f"p={p}").mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.table({"id": pa.array(ids, pa.int64()),
                                     "s": [f"s{i % 5}" for i in ids]}),
                           events / f"p={p}" / f"part-{f}.parquet")
    for day, keys in (("mon", [1, 2]), ("tue", [3])):
        (lookup / f"day={day}").mkdir(parents=True)
        pq.write_table(pa.table({"k": pa.array(keys, pa.int64()),
                                 "name": [f"n{k}" for k in keys]}),
                       lookup / f"day={day}" / "part-0.parquet")
    return {"events": events, "lookup": lookup}


VIEWS = ["CREATE OR REPLACE TEMP VIEW ev AS SELECT * FROM events",
         "CREATE OR REPLACE TEMP VIEW tiny AS SELECT * FROM VALUES (0L, 'a'), (1L, 'b'), "
         "(2L, 'c') AS t(k, v)"]


def table_statements(data: dict[str, Path]) -> list[str]:
    return [f"CREATE TABLE events (id BIGINT, s STRING, p INT) USING parquet PARTITIONED BY (p) "
            f"LOCATION '{data['events']}'",
            "ALTER TABLE events RECOVER PARTITIONS",
            f"CREATE TABLE lookup (k BIGINT, name STRING, day STRING) USING parquet "
            f"PARTITIONED BY (day) LOCATION '{data['lookup']}'",
            "ALTER TABLE lookup RECOVER PARTITIONS"]


def child(kind: str, setup: dict, tmp: Path) -> subprocess.Popen:
    path = tmp / f"{kind}.json"
    path.write_text(json.dumps(setup))
    # The guard worker inherits the driver's environment, so it finds the guard modules.
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp / "modules")])}
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    return subprocess.Popen([sys.executable, "-m", "tests.guards_app", kind, str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)


def facts_of(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=900)
    assert process.returncode == 0, err[-8000:]
    line = next(line for line in out.splitlines() if line.startswith("FACTS "))
    return json.loads(line[len("FACTS "):])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Runs the classic child and the Connect server (with its client child) at once, and
    gives their facts."""
    tmp = tmp_path_factory.mktemp("guards")
    (tmp / "modules").mkdir()
    (tmp / "modules" / "team_guards.py").write_text(TEAM_GUARDS)
    (tmp / "modules" / "broken_guards.py").write_text(BROKEN_GUARDS)
    data = write_data(tmp / "data")
    (tmp / "log4j2.properties").write_text(LOG4J.format(audit=tmp / "audit.jsonl"))
    common = {"tables": table_statements(data), "views": VIEWS, "v2_events": str(data["events"]),
              "allowed": ALLOWED,
              "refused": {name: q for name, (q, _) in REFUSED_BY.items()},
              "guard_names": GUARD_NAMES, "sparkext_catalyst_rules": SPARKEXT_CATALYST_RULES,
              "pruning_rule": PRUNING_RULE, "static_key": STATIC_KEY}
    classic = child("classic", {
        **common, "user": USER, "warehouse": str(tmp / "warehouse"), "out": str(tmp / "out"),
        "log4j": str(tmp / "log4j2.properties"),
        "hang": "SELECT id FROM events WHERE p = 1 AND s <> 'please hang'",
        "over_limit": "SELECT count(*) FROM events WHERE p = 1",
        "conf": {
            "main": {**BUILTIN, "spark.sparkext.guards": "team_guards:GUARDS"},
            "broken": {"spark.sparkext.guards": "broken_guards:GUARDS"},
            "hangs": {"spark.sparkext.guards": "team_guards:SLOW",
                      "spark.sparkext.guards.timeoutMs": "5000",
                      "spark.sparkext.guards.maxScan.files": "1",
                      "spark.sparkext.guards.maxScan.mode": "warn"},
            "plain": {},
        },
        # what else plain Spark's rows are needed for (the DataFrame and cache queries)
        "plain": PLAIN}, tmp)
    server = None if NO_CONNECT else ConnectServer(
        conf={**BUILTIN, "spark.sparkext.python": sys.executable,
              "spark.sql.extensions": "io.sparkext.SparkextExtensions",
              "spark.sql.catalogImplementation": "in-memory",
              "spark.sql.warehouse.dir": str(tmp / "connect-warehouse")},
        args=["--jars", __import__("sparkext").jar_path()],
        env={"PYTHONPATH": str(ROOT)}, name="connect-guards", log_dir=tmp).launch()
    results: dict = {"audit": tmp / "audit.jsonl", "server": server}
    children = [classic]
    try:
        if server is not None:
            server.wait_ready()
            connect = {**common, "url": f"{server.url}/;user_id={CONNECT_USER}",
                       "connect": {"allowed": {n: ALLOWED[n] for n in CONNECT_ALLOWED},
                                   "refused": {n: REFUSED_BY[n][0] for n in CONNECT_REFUSED}}}
            children.append(child("connect", connect, tmp))
        results["classic"], *connected = map(facts_of, children)
        results["connect"] = connected[0] if connected else None
        yield results
    finally:
        for c in children:
            if c.poll() is None:
                c.kill()
                c.wait()
        if server is not None:
            server.stop()


def connected(runs) -> dict:
    """The Connect client's facts, or a skip where this pyspark cannot run Connect."""
    if runs["connect"] is None:
        pytest.skip(NO_CONNECT)
    return runs["connect"]


@pytest.fixture(scope="module")
def plain_rows(runs):
    """Each allowed query's rows in plain Spark (no guards, sparkext off), from the classic
    child's last context, over the same tables."""
    return {name: sorted(map(repr, got)) for name, got in runs["classic"]["plain"].items()}


def same_rows(got: dict, expected: list) -> bool:
    assert "ok" in got, got
    return sorted(map(repr, got["ok"])) == expected


def refused_by(got: dict, guard: str) -> bool:
    assert got.get("condition") == REFUSED, got
    return f"guard '{guard}' refused the query" in got["message"]


def test_each_built_in_guard_refuses_what_it_must(runs):
    facts = runs["classic"]["main"]
    for name, (_, guard) in REFUSED_BY.items():
        got = facts["refused"][name]
        assert got["error"] == "AnalysisException", (name, got)
        assert refused_by(got, guard), (name, got)
        assert got["sql_state"] == "42000" and got["parameters"]["guard"] in GUARD_NAMES
    assert refused_by(facts["dataframe_refused"], "require_partition_filters")
    assert refused_by(facts["uncached_union"], "limit_scans")


def test_allowed_queries_return_plain_sparks_rows(runs, plain_rows):
    facts = runs["classic"]["main"]
    for name in ALLOWED:
        assert same_rows(facts["allowed"][name], plain_rows[name]), name
    assert same_rows(facts["dataframe_allowed"], plain_rows["dataframe"])


def test_a_cached_result_needs_no_scan_and_a_refused_cache_caches_nothing(runs, plain_rows):
    facts = runs["classic"]["main"]
    assert refused_by(facts["cache_refused"], "require_partition_filters")
    assert facts["cached_after_refusal"] is False
    assert facts["cache_allowed"] == {"ok": None}
    assert same_rows(facts["cached_union"], plain_rows["cached union"])


def test_writes_and_inserts_are_judged_by_the_query_they_run(runs):
    facts = runs["classic"]["main"]
    assert refused_by(facts["write_refused"], "require_partition_filters")
    assert facts["write_refused_left_nothing"]
    assert facts["write_allowed"] == {"ok": None} and facts["written_rows"] == 400
    assert refused_by(facts["insert_refused"], "require_partition_filters")
    assert "ok" in facts["insert_allowed"] and facts["copied_rows"] == 400


def test_explain_shows_the_refusal_and_the_guards_decisions(runs):
    facts = runs["classic"]["main"]
    text = "\n".join(r[0] for r in facts["sql_explain_refused"]["ok"])
    physical = text.split("== Physical Plan ==", 1)[1]
    assert physical.lstrip().startswith(f"org.apache.spark.sql.sparkext.SparkextQueryRefused: "
                                        f"[{REFUSED}] guard 'require_partition_filters'")
    # df.explain() raises the refusal; Spark 3.5's prints it as the physical plan
    explained = facts["df_explain_refused"]
    if SPARK_35:
        assert f"[{REFUSED}] guard 'require_partition_filters'" in explained["ok"], explained
    else:
        assert explained["condition"] == REFUSED, explained
    allowed = "\n".join(r[0] for r in facts["sql_explain_allowed"]["ok"])
    if not SPARK_35:  # (Spark 3.5 has no extended explain providers)
        assert "== Extended Information (sparkext) ==" in allowed
        assert "guard require_partition_filters: allowed" in allowed
    refused = facts["sparkext_explain_refused"]
    assert "== Guards, on the plan with sparkext's rules ==" in refused
    assert "require_partition_filters: refused" in refused
    assert "the query is refused: [SPARKEXT_QUERY_REFUSED]" in refused
    assert "limit_scans: refused" in refused   # 8 files
    assert "limit_cartesian_joins: allowed" in refused


def test_a_users_guards_refuse_fail_closed_and_warn(runs):
    facts = runs["classic"]["main"]
    assert refused_by(facts["user_refuses"], "refuses_when_asked")
    assert "the query asked to be refused" in facts["user_refuses"]["message"]
    raised = facts["user_raises"]
    assert raised["condition"] == REFUSED
    assert "guard 'raises_when_asked' failed, and guards fail closed: ValueError: a bug in " \
           "the team's guard (at " in raised["message"]
    assert "team_guards.py:" in raised["message"]
    assert "ok" in facts["user_warns"]


@pytest.mark.parametrize("attempt", [
    "enabled=false", "excludedRules", "optimizer.excludedRules", "pruning excluded",
    "disable()", "enable(builtin=False)", "newSession()", "RESET",
    "py4j: session SQLConf and SparkConf"])
def test_no_session_setting_or_call_removes_the_guards(runs, attempt):
    got = runs["classic"]["main"]["bypasses"][attempt]
    assert refused_by(got, "require_partition_filters"), got


def test_the_guards_settings_are_static(runs):
    bypasses = runs["classic"]["main"]["bypasses"]
    for attempt in ("conf.set static", "conf.unset static", "SET static", "RESET static"):
        assert static_refusal(bypasses[attempt]), (attempt, bypasses[attempt])
    # ... and the guards prune for themselves when Spark's partition pruning is excluded.
    assert "ok" in bypasses["pruning excluded, allowed query"]


def test_a_killed_guard_worker_refuses_then_a_new_one_judges(runs, plain_rows):
    facts = runs["classic"]["main"]
    after = facts["after_kill"]
    if SPARK_35:
        # Spark 3.5 plans the query once more for its UI first: that planning meets the
        # dead worker (refused there, counted and audited: the two tests below), and the
        # query's own planning starts a new worker, which judges it.
        assert same_rows(after, plain_rows["partition filter"])
    else:
        assert after["condition"] == REFUSED
        assert "the guards could not judge the query, and guards fail closed: the guard " \
               "worker (pid " in after["message"] and "exited with code 137" in after["message"]
    assert same_rows(facts["recovered"], plain_rows["partition filter"]) and facts["new_pid"]
    assert facts["starts"] == 2


def test_refusals_are_counted_per_guard(runs):
    m = runs["classic"]["main"]["metrics"]
    guards = m["guards"]
    assert set(guards) == {*GUARD_NAMES.split(","), "refuses_when_asked", "raises_when_asked",
                           "warns_when_asked"}
    assert guards["limit_cartesian_joins"]["refused_queries"] == 2 * PLANNED
    assert guards["raises_when_asked"]["errors"] == PLANNED
    assert guards["raises_when_asked"]["refused_queries"] == PLANNED
    assert guards["warns_when_asked"]["warned"] >= 1
    assert guards["warns_when_asked"]["refused_queries"] == 0
    assert m["guard_failures"] == 1   # the killed worker
    # a query counts once, however many guards refuse it
    assert max(g["refused_queries"] for g in guards.values()) <= m["refused_queries"] \
        <= sum(g["refused_queries"] for g in guards.values()) + m["guard_failures"]


def test_every_refusal_and_warning_is_an_audit_record(runs):
    records = [json.loads(line) for line in runs["audit"].read_text().splitlines()]
    assert records and all(set(r) == {"time", "application", "application_id", "user",
                                      "query_id", "guard", "decision", "reason"}
                           for r in records)
    assert {r["decision"] for r in records} == {"refused", "warned"}
    warned = [r for r in records if r["guard"] == "warns_when_asked"]
    # one line per query and guard: the warned query ran once
    assert len(warned) == 1 and warned[0]["reason"] == "the query asked for a warning"
    collect = [r for r in records if r["guard"] == "limit_cartesian_joins"]
    assert len(collect) == 2 * PLANNED and all(r["query_id"] is not None for r in collect)
    assert any(r["guard"] == "sparkext.guards" and "exited with code 137" in r["reason"]
               for r in records)


def test_a_guard_module_that_fails_to_import_refuses_every_query_naming_the_error(runs):
    broken = runs["classic"]["broken"]
    for got in (broken["first"], broken["second"]):
        assert got["condition"] == REFUSED
        assert "the guard worker for spark.sparkext.guards=broken_guards:GUARDS could not " \
               "start" in got["message"]
        assert "ModuleNotFoundError: No module named 'sparkext_no_such_module_for_guards'" \
               in got["message"]
    assert broken["starts"] == 0   # (no worker ever started)


def test_a_guard_that_never_answers_refuses_and_its_worker_is_replaced(runs, plain_rows):
    hangs = runs["classic"]["hangs"]
    assert hangs["hang"]["condition"] == REFUSED
    assert "the guards did not answer within spark.sparkext.guards.timeoutMs=5000 ms" \
        in hangs["hang"]["message"]
    assert same_rows(hangs["after_hang"], plain_rows["partition filter"])
    assert hangs["starts"] == PLANNED   # the worker the time-out stopped was replaced
    # maxScan in warn mode: over the limit, and let through
    assert "ok" in hangs["warned"]


def test_a_connect_client_gets_the_refusal_and_cannot_remove_the_guards(runs, plain_rows):
    facts = connected(runs)
    for name in CONNECT_REFUSED:
        got = facts["refused"][name]
        assert got["error"] == "AnalysisException", (name, got)
        assert refused_by(got, REFUSED_BY[name][1]), (name, got)
    for name in CONNECT_ALLOWED:
        assert same_rows(facts["allowed"][name], plain_rows[name]), name
    bypasses = facts["bypasses"]
    for attempt in ("spark.sparkext.enabled", "spark.sparkext.excludedRules",
                    "spark.sql.optimizer.excludedRules", "new session"):
        assert refused_by(bypasses[attempt], "require_partition_filters"), attempt
    assert static_refusal(bypasses["conf.set static"]), bypasses["conf.set static"]
    explain = "\n".join(r[0] for r in facts["sql_explain_refused"]["ok"])
    assert REFUSED in explain
    assert facts["metrics"]["guards"]["require_partition_filters"]["refused_queries"] >= 1


def test_the_connect_servers_audit_names_the_clients_user_and_operation(runs):
    connected(runs)
    log = runs["server"].log_tail(10**7)
    records = [json.loads(line.split(" audit: ", 1)[1]) for line in log.splitlines()
               if " audit: {" in line]
    assert records and {r["user"] for r in records} == {CONNECT_USER}
    assert all(r["query_id"] for r in records)
