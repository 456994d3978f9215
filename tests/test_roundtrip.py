"""The bridge loses nothing: every TPC-H query and every corpus pipeline goes JVM -> Python
-> JVM and comes back as the same plan, or as an equivalent plan Spark accepts and runs to
the same rows.

(a) a rule that copies every node leaves the plan ``fastEquals`` to Catalyst's;
(b) a rule that rebuilds every mirrored node and expression from its fields gives a plan
    that passes validation (strict mode, ``planChangeValidation``) and the same rows;
(c) encode -> decode -> encode gives the same JSON document.

Each runs on the analyzed plan (which still has SubqueryAlias, Distinct, Deduplicate...)
and on the optimized plan.
"""

from __future__ import annotations

import json

import pytest

import sparkext
from sparkext import Batch, Once, _tree
from sparkext.codec import Decoded
from sparkext.expressions import Literal
from sparkext.plan import ExistenceJoin, Join, LogicalPlan, Opaque, Relation
from sparkext.testing.request_encoder import encode_request
from sparkext.testing.rules import copy_nodes, rebuild_everything
from tests.conftest import apply_rules, conf, dataframe_of, request_document, rules_enabled
from tests.corpus.pipelines import PIPELINES
from tests.rows import assert_same_rows, collect
from tests.tpch import QUERY_NAMES

CASES = [f"tpch_{q}" for q in QUERY_NAMES] + sorted(PIPELINES)


@pytest.fixture(scope="module")
def frame(spark, tables, tpch):
    def build(name: str):
        if name.startswith("tpch_"):
            return spark.sql(tpch[name[len("tpch_"):]])
        return PIPELINES[name](spark)
    return build


def plans(df):
    qe = df._jdf.queryExecution()
    return {"analyzed": qe.analyzed(), "optimized": qe.optimizedPlan()}


@pytest.mark.parametrize("name", CASES)
def test_copying_every_node_keeps_the_plan_fast_equal(spark, frame, name):
    df = frame(name)
    with rules_enabled(spark, batches=[Batch("copy", Once(), (copy_nodes,))]):
        for kind, jplan in plans(df).items():
            sparkext.reset_metrics(spark)
            out = apply_rules(spark, jplan)
            assert out.fastEquals(jplan), f"{kind} plan changed:\n{jplan}\n---\n{out}"
            m = sparkext.metrics(spark)
            assert m["calls"] == 1 and m["accepted"] + m["unchanged"] == 1, m


@pytest.mark.parametrize("name", CASES)
def test_rebuilding_every_node_gives_a_valid_plan_and_the_same_rows(spark, frame, name):
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        expected = collect(frame(name))
    with rules_enabled(spark, batches=[Batch("rebuild", Once(), (rebuild_everything,))]):
        sparkext.reset_metrics(spark)
        df = frame(name)
        assert_same_rows(expected, collect(df))
        # (Catalyst's withNewChildren hands back an opaque node itself when its rebuilt
        # children equal the old ones: "unchanged" is then the JVM's honest answer.)
        m = sparkext.metrics(spark)
        assert m["accepted"] + m["unchanged"] >= 1, m
        assert m["rejected"] == 0 and m["python_errors"] == 0, m

        analyzed = df._jdf.queryExecution().analyzed()
        root = Decoded(request_document(spark, analyzed)).plan
        sparkext.reset_metrics(spark)
        rebuilt = apply_rules(spark, analyzed)
        m = sparkext.metrics(spark)
        assert m["calls"] == 1 and m["rejected"] == 0 and m["python_errors"] == 0, m
        # A mirrored root is rebuilt from scratch, so the JVM must have taken a new plan.
        assert m["accepted"] == 1 or isinstance(root, (Relation, Opaque)), (m, type(root))
        assert_same_rows(expected, collect(dataframe_of(spark, rebuilt)))


@pytest.mark.parametrize("name", CASES)
def test_decoding_and_encoding_again_gives_the_same_document(spark, frame, name):
    for kind, jplan in plans(frame(name)).items():
        doc = request_document(spark, jplan)
        again = encode_request(Decoded(doc))
        assert json.dumps(again, sort_keys=True) == json.dumps(doc, sort_keys=True), kind


#: Every Spark SQL data type, as :func:`type_kind` names them.
DATA_TYPES = {
    "byte", "short", "integer", "long", "float", "double", "decimal", "string", "binary",
    "boolean", "date", "timestamp", "timestamp_ntz", "time", "day-time interval",
    "year-month interval", "calendar interval", "variant", "collated string", "char",
    "varchar", "array", "map", "struct", "void",
}


def type_kind(t, metadata=None) -> str:
    name = t.name
    if metadata and "__CHAR_VARCHAR_TYPE_STRING" in metadata:
        return json.loads(metadata)["__CHAR_VARCHAR_TYPE_STRING"].split("(")[0]
    if name.startswith("decimal"):
        return "decimal"
    if name.startswith("time("):
        return "time"
    if name.startswith("interval "):
        return "year-month interval" if "year" in name or "month" in name \
            else "day-time interval"
    if name == "interval":
        return "calendar interval"
    if name.startswith("string collate"):
        return "collated string"
    return {"null": "void"}.get(name, name)


def test_the_corpus_covers_every_mirrored_node_join_type_and_data_type(spark, frame):
    seen_nodes: set[str] = set()
    join_types: set[str] = set()
    data_types: set[str] = set()
    for name in CASES:
        for jplan in plans(frame(name)).values():
            plan = Decoded(request_document(spark, jplan)).plan
            for node in plan.walk():
                seen_nodes.add(type(node).__name__)
                if isinstance(node, Join):
                    jt = node.join_type
                    join_types.add("ExistenceJoin" if isinstance(jt, ExistenceJoin) else str(jt))
                data_types.update(type_kind(a.data_type, a.metadata) for a in node.output)
                for e in node.expressions:  # NULL literals carry the void type
                    data_types.update(type_kind(x.data_type) for x in e.walk()
                                      if isinstance(x, Literal))
    mirrored = {c.__name__ for c in _tree.MIRRORED.values() if issubclass(c, LogicalPlan)}
    # LocalRows only comes from rules (Spark's own LocalRelations arrive as Relation): its
    # way to the JVM and back is tests/test_top_k_statistics.py's, rows compared.
    assert mirrored - seen_nodes == {"LocalRows"}
    assert {"Inner", "Cross", "LeftOuter", "RightOuter", "FullOuter", "LeftSemi", "LeftAnti",
            "LeftSingle", "ExistenceJoin"} <= join_types
    assert DATA_TYPES - data_types == set()
