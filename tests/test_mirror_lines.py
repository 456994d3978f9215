"""The mirror spec per Spark line: each line's spec names the arguments that line's Catalyst
constructor takes, and the codec reads and writes exactly those.

The constructors below are the public ones ``javap`` printed from each line's
spark-catalyst jar (pyspark 3.5.9, 4.0.5, 4.1.4, 4.2.1, 4.3.0; the issue 14 research,
docs/spark-lines.md, "The Python side"). Every other mirrored class has the same public
constructors on every line. The real-Spark side (no class dropped at ``enable()``) is in
tests/compat/.
"""

import json

import pytest

from sparkext._tree import MIRRORED, arg, mirror, mirror_spec, spark_line
from sparkext.codec import Decoded, WireError, encode_answer
from sparkext.expressions import Alias, Expression, Floor
from sparkext.plan import LogicalPlan, Sample, Sort
from sparkext.testing.request_encoder import encode_request

LINES = ("3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0")

# class -> line -> its constructor's parameter types (javap, erased)
JAVAP = {
    "Floor": {"3.5": ["Expression"], "4.0": ["Expression"], "4.1": ["Expression"],
              "4.2": ["Expression"], "4.3": ["Expression", "boolean"]},
    "Aggregate": {"3.5": ["Seq", "Seq", "LogicalPlan"]}
    | {v: ["Seq", "Seq", "LogicalPlan", "Option"] for v in ("4.0", "4.1", "4.2", "4.3")},
    "Sort": {"3.5": ["Seq", "boolean", "LogicalPlan"]}
    | {v: ["Seq", "boolean", "LogicalPlan", "Option"] for v in ("4.0", "4.1", "4.2", "4.3")},
    "Window": {"3.5": ["Seq", "Seq", "Seq", "LogicalPlan"]}
    | {v: ["Seq", "Seq", "Seq", "LogicalPlan", "Option"] for v in ("4.0", "4.1", "4.2", "4.3")},
    "Deduplicate": {v: ["Seq", "LogicalPlan"] for v in ("3.5", "4.0", "4.1", "4.2")}
    | {"4.3": ["Seq", "LogicalPlan", "Option"]},
    "Sample": {v: ["double", "double", "boolean", "long", "LogicalPlan"]
               for v in ("3.5", "4.0", "4.1")}
    | {v: ["double", "double", "boolean", "Option", "LogicalPlan", "SampleMethod"]
       for v in ("4.2", "4.3")},
}
JAVAP["Ceil"] = JAVAP["Floor"]

# What a parameter of each kind erases to (MirrorSpec.Kind's erasure; "x" fits any class).
ERASURE = {"e": "Expression", "p": "LogicalPlan", "es": "Seq", "b": "boolean", "d": "double",
           "l": "long", "l?": "Option", "x?": "Option"}


@pytest.fixture(autouse=True)
def newest_line_after():
    yield
    mirror_spec()  # the codec speaks the newest line again, as every other test expects


def kinds_on(version: str) -> dict:
    return {e["name"]: e["kinds"] for e in mirror_spec(version)}


@pytest.mark.parametrize("version", LINES)
def test_each_line_spec_takes_the_arguments_of_that_line_s_constructor(version):
    spec = kinds_on(version)
    line = ".".join(version.split(".")[:2])
    for name, per_line in JAVAP.items():
        params = per_line[line]
        kinds = spec[name]
        assert len(kinds) == len(params), (name, kinds, params)
        for kind, param in zip(kinds, params):
            assert kind == "x" or ERASURE[kind] == param, (name, version, kinds, params)


def test_the_other_classes_are_the_same_on_every_line():
    newest = kinds_on("4.3.0")
    for version in LINES:
        spec = kinds_on(version)
        assert {n: k for n, k in spec.items() if n not in JAVAP} == \
            {n: k for n, k in newest.items() if n not in JAVAP}, version
    assert set(newest) == set(MIRRORED)


def test_no_version_means_the_newest_line_and_a_newer_line_is_the_newest():
    assert kinds_on("4.3.0") == {e["name"]: e["kinds"] for e in mirror_spec()}
    assert kinds_on("4.4.0-SNAPSHOT") == kinds_on("4.3.0")
    assert spark_line("3.5.9") == (3, 5)
    with pytest.raises(ValueError, match="cannot read a Spark version"):
        spark_line("three")


# -- the codec speaks the line ----------------------------------------------------------------


def request(plan_json, attrs, types):
    return {"v": 2, "id": 1, "pos": "once", "root": {"k": plan_json["k"], "h": plan_json["h"]},
            "plan": plan_json, "attrs": attrs, "types": types}


LEAF = {"h": 9, "k": "Relation", "cls": "LocalRelation", "out": [{"a": 0}]}
ATTRS = [["a", 11, 0, True, []]]
TYPES = ['"decimal(10,2)"']
ORDER = {"h": 2, "k": "SortOrder", "p": [{"a": 0}, "ASC", "FIRST", []]}


def sort_doc(args_after_child):
    return request({"h": 1, "k": "Sort", "p": [[ORDER], True, LEAF, *args_after_child]},
                   ATTRS, TYPES)


def decode(doc):
    return Decoded(json.loads(json.dumps(doc)))


def test_a_3_5_sort_has_no_hint_on_the_wire_and_holds_none():
    mirror_spec("3.5.9")
    doc = sort_doc([])
    d = decode(doc)
    assert isinstance(d.plan, Sort) and d.plan.hint is None and d.plan.is_global
    assert encode_request(d) == doc  # the decoder loses nothing, adds nothing
    changed = d.plan.copy(is_global=False)
    assert encode_answer(changed, d, [])["plan"]["p"][1:] == [False, {"ref": 9}]


def test_a_4_x_sort_carries_its_hint():
    mirror_spec("4.0.5")
    doc = sort_doc([None])
    d = decode(doc)
    assert d.plan.hint is None and encode_request(d) == doc
    assert encode_answer(d.plan.copy(is_global=False), d, [])["plan"]["p"][1:] == \
        [False, {"ref": 9}, None]


def sample_doc(args):
    return request({"h": 1, "k": "Sample", "p": args}, ATTRS, TYPES)


def test_sample_before_4_2_has_a_long_seed_and_no_method():
    mirror_spec("4.1.4")
    doc = sample_doc([0.0, 0.5, False, 42, LEAF])
    d = decode(doc)
    assert isinstance(d.plan, Sample)
    assert (d.plan.seed, d.plan.sample_method) == (42, None)
    assert encode_request(d) == doc
    assert encode_answer(d.plan.copy(upper_bound=0.25), d, [])["plan"]["p"] == \
        [0.0, 0.25, False, 42, {"ref": 9}]


def test_sample_from_4_2_has_an_optional_seed_and_a_method():
    mirror_spec("4.2.1")
    doc = sample_doc([0.0, 0.5, False, None, LEAF, {"h": 3, "s": "Bernoulli", "v": 7}])
    d = decode(doc)
    assert d.plan.seed is None and d.plan.sample_method.text == "Bernoulli"


@pytest.mark.parametrize("version,wire", [("4.2.1", [{"a": 0}]), ("4.3.0", [{"a": 0}, False])])
def test_floor_takes_fail_on_error_from_4_3(version, wire):
    mirror_spec(version)
    doc = request({"h": 1, "k": "Project", "p": [
        [{"h": 2, "k": "Alias", "p": [{"h": 3, "k": "Floor", "p": wire, "t": 0}, "f", 20, [],
                                       None, []]}], LEAF]}, ATTRS, TYPES)
    d = decode(doc)
    floor = d.plan.project_list[0].child
    assert isinstance(floor, Floor) and floor.fail_on_error is False
    assert encode_request(d) == doc
    new = d.plan.copy(project_list=(d.plan.project_list[0].copy(child=Floor(d.attrs[0])),))
    written = encode_answer(new, d, [])["plan"]["p"][0][0]["p"][0]
    assert written == {"k": "Floor", "p": wire}


def test_a_value_the_line_cannot_take_is_refused_not_dropped():
    mirror_spec("4.2.1")
    doc = request({"h": 1, "k": "Project", "p": [[{"a": 0}], LEAF]}, ATTRS, TYPES)
    d = decode(doc)
    ansi_floor = Floor(d.attrs[0], fail_on_error=True)
    plan = d.plan.copy(project_list=(Alias(ansi_floor, "f"),))
    with pytest.raises(WireError, match="Floor.fail_on_error is not an argument"):
        encode_answer(plan, d, [])
    mirror_spec("4.3.0")
    assert encode_answer(plan, d, [])["plan"]["p"][0][0]["p"][0] == \
        {"k": "Floor", "p": [{"a": 0}, True]}


def test_lazily_decoded_nodes_fill_what_their_line_leaves_out():
    mirror_spec("3.5.9")
    d = decode(sort_doc([]))
    plan = d.plan
    assert plan.copy(is_global=False).hint is None  # replace() reads every field


# -- declarations ------------------------------------------------------------------------------


def test_an_argument_absent_on_older_lines_needs_a_default():
    with pytest.raises(TypeError, match="needs the default"):
        arg("x?", since="4.0")


def test_arguments_absent_on_older_lines_come_last():
    with pytest.raises(TypeError, match="must come last"):
        @mirror("org.example.Misplaced")
        class Misplaced(LogicalPlan):
            hint: object = arg("x?", default=None, since="4.0")
            child: LogicalPlan = arg("p", default=None)
    assert "Misplaced" not in MIRRORED


def test_a_class_declared_after_a_line_was_chosen_speaks_that_line():
    mirror_spec("3.5.9")
    try:
        @mirror("org.example.LateExpr")
        class LateExpr(Expression):
            child: Expression = arg("e")
            flag: bool = arg("b", default=False, since="4.3")
        assert {e["name"]: e["kinds"] for e in mirror_spec("3.5.9")}["LateExpr"] == ["e"]
        assert LateExpr._absent == (("flag", False),)
    finally:
        MIRRORED.pop("LateExpr", None)
