"""The rule executor on hand-built plans (no Spark)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from sparkext import types as T
from sparkext.bridge import split_by_position
from sparkext.expressions import AttributeReference, GreaterThan, lit
from sparkext.optimizer import (
    CHECK_CLAIMS_ENV,
    POSITIONS,
    Batch,
    FixedPoint,
    Once,
    Position,
    Rule,
    RuleError,
    RuleExecutor,
    as_rule,
    rule,
)
from sparkext.plan import Filter, Project, Relation, Window

A = AttributeReference("a", T.INT, True, None, 1)
B = AttributeReference("b", T.INT, True, None, 2)
REL = Relation("LocalRelation", (A, B), 0)


def nested_filters(n: int):
    plan = REL
    for i in range(n):
        plan = Filter(GreaterThan(A, lit(i)), plan)
    return plan


@rule
def drop_one_filter(plan):
    """Removes the top-most Filter: needs one round per filter."""
    return plan.child if isinstance(plan, Filter) else plan


def test_fixed_point_runs_until_nothing_changes():
    result = RuleExecutor([Batch("b", FixedPoint(10), (drop_one_filter,))]).execute(
        nested_filters(3))
    assert result.plan is REL and result.changed_by == ["drop_one_filter"]
    assert result.unconverged == []


def test_once_runs_each_rule_one_time():
    result = RuleExecutor([Batch("b", Once(), (drop_one_filter,))]).execute(nested_filters(3))
    assert result.plan == nested_filters(2)


def test_a_batch_that_does_not_converge_is_reported_with_the_rules_still_changing_it():
    batches = [Batch("b", FixedPoint(2), (drop_one_filter,))]
    result = RuleExecutor(batches).execute(nested_filters(5))
    assert result.plan == nested_filters(3)  # the plan at the limit is used, as Catalyst does
    [line] = result.unconverged
    assert line.startswith("batch 'b' reached its limit of 2 rounds with the plan still "
                           "changing: rule(s) drop_one_filter changed it in the last round"), line


def test_a_batch_that_converges_on_its_last_allowed_round_is_not_reported():
    batches = [Batch("b", FixedPoint(2), (drop_one_filter,))]
    done = RuleExecutor(batches).execute(nested_filters(1))
    assert done.plan is REL and done.unconverged == []


def test_an_unchanged_plan_is_returned_as_the_same_object():
    plan = nested_filters(1)
    result = RuleExecutor([Batch("b", FixedPoint(10), (lambda p: p,))]).execute(plan)
    assert result.plan is plan and result.changed_by == []


def _recording(name: str, seen: list):
    def look(plan):
        seen.append(plan)
        return plan
    return Rule(name, look)


def test_a_rule_is_not_run_again_on_a_plan_it_left_as_it_was():
    # Round 1: drop_one_filter changes the plan, `look` sees the result and leaves it.
    # Round 2 (confirming): drop_one_filter changes nothing, and `look` would see the
    # plan it has already left alone: it is not run again (as Catalyst's rules skip
    # trees they were ineffective on).
    seen: list = []
    result = RuleExecutor([Batch("b", FixedPoint(10), (drop_one_filter, _recording("look", seen)))]
                          ).execute(nested_filters(1))
    assert result.plan is REL and seen == [REL]
    assert result.stats["look"].invocations == 1
    assert result.stats["drop_one_filter"].invocations == 2


def test_a_rule_shared_by_two_batches_runs_again_only_on_a_changed_plan():
    seen: list = []
    look = _recording("look", seen)
    plan = nested_filters(2)
    unchanged = RuleExecutor([Batch("one", Once(), (look,)), Batch("two", Once(), (look,))]
                             ).execute(plan)
    assert unchanged.plan is plan and seen == [plan]
    seen.clear()
    changed = RuleExecutor([Batch("one", Once(), (look,)),
                            Batch("drop", Once(), (drop_one_filter,)),
                            Batch("two", Once(), (look,))]).execute(plan)
    assert changed.plan == nested_filters(1) and seen == [plan, changed.plan]


def test_excluded_rules_do_not_run():
    result = RuleExecutor([Batch("b", FixedPoint(10), (drop_one_filter,))]).execute(
        nested_filters(2), frozenset({"drop_one_filter"}))
    assert result.plan == nested_filters(2)


def test_trace_records_each_change():
    result = RuleExecutor([Batch("b", FixedPoint(10), (drop_one_filter,))]).execute(
        nested_filters(2), trace=True)
    assert [(s.rule, type(s.before).__name__, type(s.after).__name__) for s in result.steps] == [
        ("drop_one_filter", "Filter", "Filter"), ("drop_one_filter", "Filter", "Relation")]


@pytest.mark.parametrize("fn,message", [
    (lambda p: 1 / 0, "raised ZeroDivisionError"),
    (lambda p: None, "returned NoneType, not a plan node"),
    (lambda p: Project((A,), p), "changed the plan's output"),
])
def test_the_executor_refuses_a_broken_rule_and_names_it(fn, message):
    bad = Rule("bad", fn)
    with pytest.raises(RuleError, match=message) as err:
        RuleExecutor([Batch("b", Once(), (bad,))]).execute(REL)
    assert err.value.rule == "bad"


def test_rule_patterns_come_from_the_matched_classes():
    assert Rule("r", lambda p: p, (Filter, Window)).patterns == ("FILTER", "WINDOW")
    assert Rule("r", lambda p: p).patterns == ()
    assert Rule("r", lambda p: p, (Filter, Relation)).patterns == ()  # Relation has no bit


def test_rules_need_usable_names_and_positions():
    with pytest.raises(ValueError, match="commas"):
        Rule("a,b", lambda p: p)
    with pytest.raises(ValueError, match="position"):
        Rule("a", lambda p: p, position="sometimes")
    with pytest.raises(TypeError, match="not a rule"):
        as_rule(42)


def test_a_position_is_its_wire_string_and_a_rule_converts_the_string():
    late = Rule("late", lambda p: p, position="fixed_point")
    assert late.position is Position.FIXED_POINT
    assert late.position == "fixed_point" and str(late.position) == f"{late.position}" \
        == "fixed_point"
    assert {"fixed_point": 1}[late.position] == 1  # hashed as its string: wire lookups work
    assert json.dumps({"position": late.position}) == '{"position": "fixed_point"}'
    assert Rule("r", lambda p: p).position is Position.ONCE_PER_QUERY


def test_an_unknown_position_is_refused_naming_the_valid_ones():
    with pytest.raises(ValueError, match="'sometimes' is not a Position: the valid ones are "
                                         "once, fixed_point"):
        Position("sometimes")
    with pytest.raises(ValueError, match="rule 'a': unknown position .*once, fixed_point"):
        Rule("a", lambda p: p, position="sometimes")


def test_enable_names_each_position_in_its_log_line():
    from sparkext.session import _describe_positions

    rules = (Rule("a", lambda p: p), Rule("late", lambda p: p, position="fixed_point"),
             Rule("b", lambda p: p))
    assert _describe_positions(rules) == ("3 rules: once per query: 1 a, 2 b; "
                                          "in Catalyst's fixed-point batches: 1 late")


def test_the_positions_are_the_jvms():
    # The shim's sealed Position (Sparkext.scala) parses exactly these wire strings.
    scala = (Path(__file__).parents[1] / "jvm-shim/src/main/scala/io/sparkext/"
             "Sparkext.scala").read_text()
    jvm = re.findall(r'case object \w+ extends Position\("(\w+)"\)', scala)
    assert jvm == [p.value for p in POSITIONS]


def test_rules_are_split_by_position():
    late = Rule("late", lambda p: p, position="fixed_point")
    executors = split_by_position([Batch("b", Once(), (drop_one_filter, late))])
    assert [r.name for r in executors["once"].rules] == ["drop_one_filter"]
    assert [r.name for r in executors["fixed_point"].rules] == ["late"]


# -- what rules claim of themselves (Rule.idempotent, Rule.subsumes) ------------------------

@rule
def drop_all_filters(plan):
    """Removes every Filter in one pass: idempotent."""
    return plan.transform_up(lambda n: n.child if isinstance(n, Filter) else n)


def test_an_idempotent_rule_is_not_run_again_on_its_own_result():
    plain = RuleExecutor([Batch("b", FixedPoint(10), (drop_all_filters,))], check_claims=False)
    assert plain.execute(nested_filters(3)).stats["drop_all_filters"].invocations == 2
    idem = rule(drop_all_filters.fn, idempotent=True)
    result = RuleExecutor([Batch("b", FixedPoint(10), (idem,))], check_claims=False).execute(
        nested_filters(3))
    assert result.plan is REL and result.stats["drop_all_filters"].invocations == 1


def test_an_idempotent_rule_runs_again_once_another_rule_changed_the_plan():
    seen: list = []

    def drop_filters(plan):
        seen.append(plan)
        return drop_all_filters(plan)

    @rule
    def drop_top_project(plan):
        return plan.child if isinstance(plan, Project) else plan

    idem = Rule("drop_filters", drop_filters, idempotent=True)
    plan = Project((A, B), nested_filters(2))
    result = RuleExecutor([Batch("b", FixedPoint(10), (idem, drop_top_project))],
                          check_claims=False).execute(plan)
    # Round 1: drop_filters gives Project(REL), drop_top_project gives REL. Round 2:
    # drop_filters sees REL (another rule's result), then nothing changes.
    assert result.plan is REL and seen == [plan, REL]


def test_a_false_idempotence_claim_fails_the_rule_when_claims_are_checked():
    liar = dataclasses.replace(drop_one_filter, idempotent=True)
    batches = [Batch("b", FixedPoint(10), (liar,))]
    # Unchecked, the executor trusts the claim: one filter is dropped, not all three.
    assert RuleExecutor(batches, check_claims=False).execute(nested_filters(3)).plan == \
        nested_filters(2)
    with pytest.raises(RuleError, match="is declared idempotent, but changed this plan") as err:
        RuleExecutor(batches, check_claims=True).execute(nested_filters(3))
    assert err.value.rule == "drop_one_filter"


def test_a_subsumed_rule_runs_only_where_the_rule_that_subsumes_it_does_not():
    seen: list = []
    look = _recording("look", seen)
    wider = dataclasses.replace(drop_all_filters, subsumes=("look",))
    executor = RuleExecutor([Batch("b", FixedPoint(10), (look, wider))], check_claims=False)
    assert executor.execute(nested_filters(2)).plan is REL and seen == []
    executor.execute(nested_filters(2), frozenset({"drop_all_filters"}))
    assert seen == [nested_filters(2)]


def test_a_false_subsumption_claim_fails_the_subsumed_rule_when_claims_are_checked():
    # drop_one_filter is not subsumed by a rule that changes nothing.
    idle = Rule("idle", lambda p: p, subsumes=("drop_one_filter",))
    batches = [Batch("b", FixedPoint(10), (drop_one_filter, idle))]
    assert RuleExecutor(batches, check_claims=False).execute(nested_filters(1)).plan == \
        nested_filters(1)
    with pytest.raises(RuleError, match="is subsumed by idle, but changed this plan") as err:
        RuleExecutor(batches, check_claims=True).execute(nested_filters(1))
    assert err.value.rule == "drop_one_filter"


def test_claims_are_checked_where_the_environment_asks(monkeypatch):
    monkeypatch.setenv(CHECK_CLAIMS_ENV, "1")
    assert RuleExecutor([]).check_claims
    monkeypatch.setenv(CHECK_CLAIMS_ENV, "0")
    assert not RuleExecutor([]).check_claims


def fixed_point_examples() -> tuple[dict, dict]:
    """The namespaces of docs/writing-rules.md's two 'fixed point' examples, run as written."""
    import re

    from tests.conftest import ROOT

    text = (ROOT / "docs" / "writing-rules.md").read_text()
    section = text.split("### Rules that run to a fixed point", 1)[1].split("\n## ", 1)[0]
    wrong, right = re.findall(r"```python\n(.*?)```", section, re.S)
    first: dict = {}
    exec(wrong, first)  # noqa: S102 - the documentation's own code
    second = dict(first)
    exec(right, second)  # noqa: S102
    return first, second


def test_the_documented_rule_that_adds_a_filter_each_round_never_converges():
    wrong, _ = fixed_point_examples()
    batches = [Batch("b", FixedPoint(5), (wrong["keep_non_negative"],))]
    result = RuleExecutor(batches).execute(Project((A,), REL))
    assert len(result.unconverged) == 1 and "keep_non_negative" in result.unconverged[0]


def test_the_documented_way_to_write_it_converges_in_one_round():
    _, right = fixed_point_examples()
    rule_ = right["keep_non_negative"]
    for plan in (REL, Project((A,), REL)):
        result = RuleExecutor([Batch("b", FixedPoint(5), (rule_,))]).execute(plan)
        assert result.unconverged == [] and result.stats["keep_non_negative"].effective == 1
        filters = [n for n in result.plan.walk() if isinstance(n, Filter)]
        assert len(filters) == 1 and filters[0].child is REL
        assert rule_(result.plan) is result.plan
