"""The mirror and the codec on hand-built plans (no Spark)."""

from __future__ import annotations

import copy
import dataclasses
import decimal
import json
import math
import threading

import pytest

from sparkext import types as T
from sparkext._tree import MIRRORED, mirror_spec
from sparkext.bridge import RuleBridge
from sparkext.codec import (
    Decoded,
    MapValue,
    WireError,
    encode_answer,
    request_document,
    value_in,
    value_out,
)
from sparkext.expressions import (
    Add,
    Alias,
    And,
    AttributeReference,
    EqualTo,
    FreshId,
    GreaterThan,
    IsNotNull,
    Literal,
    OpaqueExpression,
    Rand,
    SortOrder,
    Value,
    asc,
    desc,
    lit,
)
from sparkext.optimizer import Batch, Once, RuleExecutor
from sparkext.plan import (
    AliasIdentifier,
    ExistenceJoin,
    Filter,
    Generate,
    Join,
    Opaque,
    Project,
    Relation,
    SubqueryAlias,
    Union,
    Window,
)
from sparkext.testing.request_encoder import encode_request


def attr(name, i, t=T.INT, nullable=True):
    return AttributeReference(name, t, nullable, None, i)


A, B, C = attr("a", 1), attr("b", 2), attr("c", 3)
R1 = Relation("LocalRelation", (A, B), 0, "r1")
R2 = Relation("LocalRelation", (C,), 1, "r2")


# -- structure ------------------------------------------------------------------------------


def test_nodes_compare_and_hash_by_structure():
    f1 = Filter(GreaterThan(A, lit(1)), R1)
    f2 = Filter(GreaterThan(A, lit(1)), R1)
    assert f1 == f2 and hash(f1) == hash(f2) and f1 is not f2
    assert f1 != Filter(GreaterThan(A, lit(2)), R1)


def test_transforms_return_the_same_object_when_nothing_changes():
    plan = Project((A,), Filter(GreaterThan(A, lit(1)), R1))
    assert plan.transform_up(lambda n: n) is plan
    assert plan.transform_down(lambda n: n) is plan
    assert plan.transform_expressions_up(lambda e: e) is plan


def test_transform_up_rebuilds_only_the_path_to_a_change():
    filt = Filter(GreaterThan(A, lit(1)), R1)
    plan = Project((A,), filt)
    out = plan.transform_up(lambda n: n.child if isinstance(n, Filter) else n)
    assert out == Project((A,), R1) and out.child is R1


def test_with_new_children_checks_the_count():
    with pytest.raises(ValueError, match="has 1 children, got 2"):
        Filter(lit(True), R1).with_new_children([R1, R2])


def test_replace_keeps_frozen_nodes_frozen():
    f = Filter(lit(True), R1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.condition = lit(False)


# -- derived facts ---------------------------------------------------------------------------


def test_project_output_uses_alias_ids():
    al = Alias(Add(A, B, _type=T.INT, _nullable=True), "s", 9)
    p = Project((A, al), R1)
    assert [a.expr_id for a in p.output] == [1, 9]
    assert p.output[1].data_type == T.INT and p.references == frozenset({1, 2})


def test_new_aliases_get_fresh_ids_until_the_jvm_allocates_them():
    al = Alias(A, "x")
    assert isinstance(al.expr_id, FreshId) and al.to_attribute().expr_id == al.expr_id
    assert Alias(A, "x").expr_id != al.expr_id


@pytest.mark.parametrize("join_type", ["Inner", "LeftOuter", "RightOuter", "FullOuter"])
def test_join_output_by_type(join_type):
    left = Relation("LocalRelation", (attr("a", 1, nullable=False), attr("b", 2)), 0)
    right = Relation("LocalRelation", (attr("c", 3, nullable=False),), 1)
    out = Join(left, right, join_type).output
    assert [a.expr_id for a in out] == [1, 2, 3]
    assert out[0].nullable == (join_type in ("RightOuter", "FullOuter"))
    assert out[2].nullable == (join_type in ("LeftOuter", "FullOuter"))


def test_semi_anti_and_existence_joins_output_the_left_side():
    exists = attr("exists", 7, T.BOOLEAN, False)
    assert Join(R1, R2, "LeftSemi").output == R1.output
    assert Join(R1, R2, "LeftAnti").output == R1.output
    assert Join(R1, R2, ExistenceJoin(exists)).output == R1.output + (exists,)


def test_generate_output_drops_unrequired_child_columns_and_qualifies():
    gen = OpaqueExpression("Explode", (A,), 5)
    out_attr = attr("col", 8)
    g = Generate(gen, (1,), True, "t", (out_attr,), R1)
    assert [a.expr_id for a in g.output] == [1, 8]
    assert g.output[1].qualifier == ("t",) and g.output[1].nullable
    assert g.references == frozenset({1})


def test_union_output_is_nullable_when_any_child_is():
    left = Relation("LocalRelation", (attr("a", 1, nullable=False),), 0)
    right = Relation("LocalRelation", (attr("x", 5, nullable=True),), 1)
    out = Union((left, right)).output
    assert out[0].expr_id == 1 and out[0].nullable


def test_subquery_alias_qualifies_its_output():
    sa = SubqueryAlias(AliasIdentifier("t", ("spark_catalog", "db")), R1)
    assert sa.output[0].qualifier == ("spark_catalog", "db", "t")


def test_window_output_appends_window_columns():
    w = Window((Alias(OpaqueExpression("RowNumber", (), 6), "rn", 10),), (A,), (asc(B),), R1)
    assert [a.expr_id for a in w.output] == [1, 2, 10]


def test_determinism_comes_from_every_expression():
    assert not Filter(GreaterThan(Rand(lit(1)), lit(0.5)), R1).deterministic
    opaque = OpaqueExpression("Uuid", (), 3, deterministic_=False)
    assert not Project((Alias(opaque, "u", 4),), R1).deterministic
    assert Filter(And(IsNotNull(A), EqualTo(A, B)), R1).deterministic


def test_sort_order_defaults_follow_spark():
    assert asc(A).null_ordering == "FIRST" and desc(A).null_ordering == "LAST"
    assert SortOrder(A, "DESC").null_ordering == "LAST"
    with pytest.raises(ValueError):
        SortOrder(A, "UP")


def test_semantic_equality_ignores_names_and_nullability():
    a_renamed = AttributeReference("A", T.INT, False, None, 1, ("t",))
    assert EqualTo(A, lit(1)).semantic_equals(EqualTo(a_renamed, lit(1)))
    assert not EqualTo(A, lit(1)).semantic_equals(EqualTo(B, lit(1)))


def test_values_compare_by_text():
    assert Value("ANSI", 3) == Value("ANSI", 8)


# -- literal values ---------------------------------------------------------------------------

VALUES = [
    ('"integer"', 42), ('"long"', -2**63), ('"double"', 1.5), ('"double"', math.inf),
    ('"float"', -math.inf), ('"string"', "héllo"), ('"binary"', b"\x00\xff"),
    ('"decimal(20,5)"', decimal.Decimal("-12345.00001")), ('"boolean"', False),
    ('"date"', 19782), ('"timestamp"', 1709209800000000), ('"interval"', (1, 2, 3)),
    ('{"type":"array","elementType":"integer","containsNull":true}', (1, None, 3)),
    ('{"type":"map","keyType":"string","valueType":"double","valueContainsNull":true}',
     MapValue(("k",), (1.0,))),
    ('{"type":"struct","fields":[{"name":"x","type":"integer","nullable":true,"metadata":{}},'
     '{"name":"y","type":"binary","nullable":true,"metadata":{}}]}', (1, b"\x01")),
    ('"integer"', None),
]


@pytest.mark.parametrize("type_json,value", VALUES)
def test_literal_values_round_trip(type_json, value):
    t = json.loads(type_json)
    wire = json.loads(json.dumps(value_out(value, t)))
    assert value_in(wire, t) == value


UNFIT = [
    ("integer", 2**31), ("long", 1.5), ("byte", 128), ("boolean", 1), ("integer", True),
    ("decimal(5,2)", decimal.Decimal("0.125")), ("decimal(5,2)", decimal.Decimal("1234.5")),
    ("decimal(5,2)", decimal.Decimal("NaN")), ("double", "1"), ("string", 5),
    ("date", 2**31), ("interval year to month", 2**31),
    ("decimal(29,1)", decimal.Decimal("99999999999999999999999999999.9")),
]


@pytest.mark.parametrize("type_name,value", UNFIT)
def test_a_literal_value_its_type_cannot_hold_is_refused_not_changed(type_name, value):
    # Sent on, 2**31 would reach Spark as another INT and 0.125 would be rounded: the
    # rule's rewrite must be refused instead.
    with pytest.raises(WireError, match="literal value"):
        value_out(value, type_name)


def test_decimal_values_that_fit_keep_every_digit():
    assert value_out(decimal.Decimal("123.45"), "decimal(5,2)") == "123.45"
    assert value_out(decimal.Decimal("1.20"), "decimal(3,1)") == "1.20"
    assert value_out(-100, "decimal(3,0)") == "-100"
    # More digits than Python's default decimal context holds (28): nothing rounded.
    wide = "9999999999999999999999999999.9"
    assert value_out(decimal.Decimal(wide), "decimal(29,1)") == wide


def test_zero_fits_a_decimal_with_no_integer_digits():
    # decimal(p, p) holds no integer digit, and zero needs none: cast(0 as decimal(4,4)).
    assert value_out(decimal.Decimal("0.0000"), "decimal(4,4)") == "0.0000"
    assert value_out(0, "decimal(4,4)") == "0"
    assert value_out(decimal.Decimal("-0.00"), "decimal(38,38)") == "-0.00"
    assert value_in("0.0000", "decimal(4,4)") == 0


def test_nan_travels_as_text():
    assert value_out(math.nan, "double") == "NaN" and math.isnan(value_in("NaN", "double"))


def test_lit_infers_spark_types():
    import datetime as dt

    assert lit(1).data_type == T.INT and lit(2**40).data_type == T.LONG
    assert lit("x").data_type == T.STRING and lit(None).data_type == T.NULL
    assert lit(decimal.Decimal("12.50")).data_type == T.decimal(4, 2)
    assert lit(dt.date(1970, 1, 2)) == Literal(1, T.DATE)
    with pytest.raises(ValueError, match="timezone-aware"):
        lit(dt.datetime(2024, 1, 1))


# -- the codec --------------------------------------------------------------------------------


def request(plan_json, attrs, types):
    return {"v": 2, "id": 1, "pos": "once", "root": {"k": plan_json["k"], "h": plan_json["h"]},
            "plan": plan_json, "attrs": attrs, "types": types}


DOC = request(
    {"h": 0, "k": "Filter", "p": [
        {"h": 1, "k": "GreaterThan", "p": [{"a": 0}, {"h": 2, "k": "Literal", "v": 5, "t": 0}],
         "t": 1, "n": True},
        {"h": 3, "k": "Opaque", "cls": "Intersect", "out": [{"a": 0}],
         "c": [{"h": 4, "k": "Relation", "cls": "LocalRelation", "out": [{"a": 0}]},
               {"h": 5, "k": "Relation", "cls": "LocalRelation", "out": [{"a": 1}]}]}]},
    [["a", 11, 0, True, []], ["b", 12, 0, True, ["t"], '{"comment":"x"}']],
    ['"integer"', '"boolean"'])


def test_decoding_builds_the_mirror():
    d = Decoded(json.loads(json.dumps(DOC)))
    plan = d.plan
    assert isinstance(plan, Filter) and isinstance(plan.child, Opaque)
    assert plan.condition == GreaterThan(attr("a", 11), lit(5))
    assert d.attrs[1].qualifier == ("t",) and d.attrs[1].metadata == '{"comment":"x"}'
    assert plan.child.children[1].output[0].expr_id == 12


def test_unchanged_objects_go_back_by_reference():
    d = Decoded(json.loads(json.dumps(DOC)))
    new = Filter(And(d.plan.condition, IsNotNull(d.attrs[0])), d.plan.child)
    answer = encode_answer(new, d, ["r"])
    assert answer["plan"] == {"k": "Filter", "p": [
        {"k": "And", "p": [{"ref": 1}, {"k": "IsNotNull", "p": [{"a": 0}]}]}, {"ref": 3}]}


def test_opaque_nodes_go_back_with_new_children():
    d = Decoded(json.loads(json.dumps(DOC)))
    op = d.plan.child
    swapped = op.with_new_children(op.children[::-1])
    j = encode_answer(swapped, d, [])["plan"]
    assert j == {"k": "Opaque", "src": 3, "c": [{"ref": 5}, {"ref": 4}]}


def test_fresh_ids_and_new_attributes_are_sent_in_full():
    d = Decoded(json.loads(json.dumps(DOC)))
    al = Alias(d.attrs[0], "copy")
    plan = Project((al,), d.plan)
    j = encode_answer(plan, d, [])
    assert j["plan"]["p"][0][0] == {"k": "Alias", "p": [{"a": 0}, "copy", {"nid": al.expr_id.n},
                                                         [], None, []]}
    renamed = d.attrs[0].copy(name="z")
    j = encode_answer(Project((renamed,), d.plan), d, [])
    assert j["plan"]["p"][0][0] == {"k": "AttributeReference", "p": ["z", 0, True, None, 11, []]}
    assert j["types"] == ['"integer"']


def test_relations_cannot_be_changed():
    d = Decoded(json.loads(json.dumps(DOC)))
    rel = d.plan.child.children[0]
    with pytest.raises(WireError, match="cannot be rebuilt"):
        encode_answer(rel.copy(output=()), d, [])


def wire_text(doc: dict) -> str:
    """The request as the JVM sends it: the header, a newline, the body."""
    body_keys = ("plan", "attrs", "types")
    header = {k: v for k, v in doc.items() if k not in body_keys}
    return json.dumps(header) + "\n" + json.dumps({k: doc[k] for k in body_keys})


def test_the_body_of_a_request_is_parsed_when_a_rule_first_reads_the_plan():
    text = wire_text(DOC)
    assert request_document(text) == DOC
    executor = RuleExecutor([Batch("b", Once(), (lambda p: p,))])
    assert json.loads(RuleBridge({"once": executor}).apply(text))["unchanged"] is True
    d = Decoded.from_json(text)
    assert isinstance(d.plan, Filter) and d.position == "once"
    assert executor.execute(d.plan).plan is d.plan
    assert "body" not in vars(d)  # nothing read: nothing parsed
    assert d.plan.condition == GreaterThan(attr("a", 11), lit(5))
    assert "body" in vars(d)
    assert encode_request(d) == DOC


def test_a_header_that_names_another_root_than_the_body_is_an_error():
    d = Decoded.from_json(wire_text({**DOC, "root": {"k": "Project", "h": 0}}))
    with pytest.raises(WireError, match="root"):
        d.plan.output


def test_lazily_decoded_nodes_behave_like_any_other():
    eager = Filter(GreaterThan(attr("a", 11), lit(5)), Decoded(DOC).plan.child)
    fresh = lambda: Decoded(json.loads(json.dumps(DOC))).plan  # noqa: E731
    lazy = fresh()
    assert isinstance(lazy, Filter) and type(lazy).__name__ == "Filter"
    assert type(lazy) is not Filter  # not decoded yet
    assert lazy.condition == eager.condition and type(lazy) is Filter  # read: decoded
    # Comparing, hashing, copying and matching decode first, from either side.
    assert eager == fresh() and fresh() == eager and hash(fresh()) == hash(eager)
    assert fresh() != Filter(GreaterThan(attr("a", 11), lit(6)), eager.child)
    assert copy.copy(fresh()) == eager and copy.deepcopy(fresh()) == eager
    assert dataclasses.replace(fresh(), condition=eager.condition, child=eager.child) == eager
    match fresh():
        case Filter(condition=GreaterThan(right=Literal(value=v))):
            assert v == 5
        case _:
            pytest.fail("a lazily decoded Filter did not match")
    assert fresh().transform_up(lambda n: n) == eager


def test_a_node_whose_decoding_reads_a_lazy_child_decodes_it_too():
    # Decoding a node reads other decoded objects (the InSet reads its child's type):
    # whatever of them is still lazy is filled on the same thread, under the same
    # (reentrant) lock; a plain lock hung here when expressions were lazy too.
    doc = request(
        {"h": 0, "k": "Filter", "p": [
            {"h": 1, "k": "InSet", "p": [{"h": 2, "k": "Upper", "p": [{"a": 0}], "t": 0,
                                          "n": True}, ["X", "Y"]], "t": 1, "n": True},
            {"h": 3, "k": "Relation", "cls": "LocalRelation", "out": [{"a": 0}]}]},
        [["s", 11, 0, True, []]], ['"string"', '"boolean"'])
    box = []
    reader = threading.Thread(target=lambda: box.append(Decoded(doc).plan.condition))
    reader.start()
    reader.join(timeout=60)
    assert box and box[0].hset == ("X", "Y") and box[0].child.data_type == T.STRING


def test_a_request_in_another_version_is_refused():
    with pytest.raises(WireError, match="version"):
        Decoded({**DOC, "v": 99})


def test_the_mirror_spec_lists_argument_kinds():
    spec = {e["name"]: e for e in mirror_spec()}
    assert spec["Filter"]["kinds"] == ["e", "p"]
    assert spec["Join"]["cls"] == "org.apache.spark.sql.catalyst.plans.logical.Join"
    assert spec["AttributeReference"]["kinds"] is None  # written by hand on both sides
    assert set(spec) == set(MIRRORED)
