"""What sparkext did, shown where Spark users look (issue 19, items 1 and 2): per-rule
metrics, the ``sparkext`` section of the extended explain, Catalyst's plan change log per
Python rule, and ``sparkext.explain(df)``. Every test also compares rows with plain
Spark's."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import pytest

import sparkext
from sparkext import types as T
from sparkext.catalyst import excluded_rules_conf
from sparkext.expressions import And, AttributeReference, IsNotNull, lit
from sparkext.optimizer import Rule
from sparkext.plan import Filter, Join, LogicalPlan, Opaque
from sparkext.rules.push_down_filters import push_down_filters
from tests.conftest import conf, rules_enabled
from tests.rows import collect

#: Catalyst's own pushdown and pruning off, so sparkext's rules have something to do
INSTEAD_OF_CATALYST = excluded_rules_conf()

#: the test session is strict (a failure raises); these tests need the fallback
LENIENT = {"spark.sparkext.strict": "false"}

REASON = "the filter reads only columns the projection passes through"


def pushes_and_says_why(plan: LogicalPlan) -> LogicalPlan:
    new = push_down_filters(plan)
    if new is not plan:
        sparkext.because(REASON)
    return new


PUSH = Rule("push_and_say_why", pushes_and_says_why, matches=(Filter, Join))


def looks_only(plan: LogicalPlan) -> LogicalPlan:
    return plan


LOOK = Rule("look_only", looks_only)


def breaks(plan: LogicalPlan) -> LogicalPlan:
    raise ValueError("this rule is broken on purpose")


BREAK = Rule("breaks_on_purpose", breaks)


def filtered_projection(spark):
    return spark.table("people").select("id", "name").where("id > 2")


def plain_rows(spark, build) -> list:
    with conf(spark, {"spark.sparkext.enabled": "false"}):
        return collect(build(spark))


def extended_explain(df) -> str:
    jvm = df.sparkSession._jvm
    return jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), "extended")


def section(text: str) -> str | None:
    """The sparkext section of an extended explain (None when there is none)."""
    head = "== Extended Information (sparkext) =="
    if head not in text:
        return None
    rest = text.split(head, 1)[1]
    return rest.split("\n== ", 1)[0]


# -- per-rule metrics -------------------------------------------------------------------

def test_per_rule_metrics_count_invocations_changes_and_time(spark, tables):
    expected = plain_rows(spark, filtered_projection)
    with conf(spark, INSTEAD_OF_CATALYST), rules_enabled(spark, [PUSH, LOOK]):
        sparkext.reset_metrics(spark)
        assert collect(filtered_projection(spark)) == expected
        rules = sparkext.metrics(spark)["rules"]
    push, look = rules["push_and_say_why"], rules["look_only"]
    assert set(push) == {"invocations", "effective", "nanos", "refused", "refusal_reasons"}
    # one fixed-point batch: the pushing round, then a round that changes nothing (where
    # look_only is not run again: it left that very plan alone in the first round)
    assert push["invocations"] >= 2 and push["effective"] >= 1, push
    assert look["invocations"] >= 1 and look["effective"] == 0, look
    # ... so look_only runs once fewer than push_and_say_why in every call where the push
    # changed the plan (and as often in any other call)
    assert look["invocations"] < push["invocations"], (push, look)
    assert push["nanos"] > 0 and look["nanos"] > 0
    assert push["refused"] == look["refused"] == 0
    assert push["refusal_reasons"] == []


def test_a_rule_that_raises_is_counted_as_refused_with_its_reason(spark, tables):
    expected = plain_rows(spark, filtered_projection)
    with conf(spark, LENIENT), rules_enabled(spark, [BREAK]):
        sparkext.reset_metrics(spark)
        assert collect(filtered_projection(spark)) == expected
        figures = sparkext.metrics(spark)["rules"]["breaks_on_purpose"]
    assert figures["invocations"] >= 1 and figures["effective"] == 0
    assert figures["refused"] >= 1
    assert any("broken on purpose" in r for r in figures["refusal_reasons"]), figures


def test_the_metrics_keep_one_unit_per_figure(spark, tables):
    m = sparkext.metrics(spark)
    assert not [k for k in m if k.endswith("_ms")], m
    assert "python_nanos" in m and "rules" in m


# -- the sparkext section of the extended explain (Spark 4.x) ---------------------------

def test_extended_explain_names_the_rules_that_ran_and_why(spark, tables):
    expected = plain_rows(spark, filtered_projection)
    with conf(spark, INSTEAD_OF_CATALYST), rules_enabled(spark, [PUSH, LOOK]):
        df = filtered_projection(spark)
        text = section(extended_explain(df))
        assert collect(df) == expected
    assert text is not None
    assert "push_and_say_why: ran" in text and "changed the plan" in text, text
    assert f"because: {REASON}" in text, text
    assert "look_only: ran" in text and "unchanged" in text, text


def test_explain_extended_in_sql_has_the_section_too(spark, tables):
    with conf(spark, INSTEAD_OF_CATALYST), rules_enabled(spark, [PUSH]):
        spark.table("people").createOrReplaceTempView("explain_people")
        rows = spark.sql("EXPLAIN EXTENDED SELECT id, name FROM "
                         "(SELECT id, name FROM explain_people) WHERE id > 2").collect()
    text = section(rows[0][0])
    assert text is not None and "push_and_say_why: ran" in text, rows[0][0]


def test_extended_explain_shows_a_refused_rule_with_its_reason(spark, tables):
    with conf(spark, LENIENT), rules_enabled(spark, [BREAK]):
        text = section(extended_explain(filtered_projection(spark)))
    assert text is not None and "breaks_on_purpose: ran" in text, text
    assert "refused:" in text and "broken on purpose" in text, text


def test_no_sparkext_section_where_sparkext_never_ran(spark, tables):
    other = spark.newSession()  # no rules registered there: sparkext is off
    df = other.range(10).where("id > 2")
    assert section(extended_explain(df)) is None
    assert sorted(r.id for r in df.collect()) == list(range(3, 10))


def test_no_rule_listed_when_sparkext_is_switched_off(spark, tables):
    expected = plain_rows(spark, filtered_projection)
    with rules_enabled(spark, [PUSH]), conf(spark, {"spark.sparkext.enabled": "false"}):
        df = filtered_projection(spark)
        text = section(extended_explain(df))
        assert collect(df) == expected
    # Spark prints the section's header whatever the provider answers: one line says why
    # nothing follows it
    assert text is not None and "push_and_say_why" not in text, text
    assert text.strip() == ("sparkext is off in this session (spark.sparkext.enabled=false): "
                            "no Python rule ran"), text


# -- Catalyst's plan change log -----------------------------------------------------------

@contextlib.contextmanager
def plan_change_log(spark) -> Iterator[object]:
    """What Catalyst's PlanChangeLogger writes during the block (a log4j appender on it)."""
    jvm = spark._jvm
    log4j = jvm.org.apache.logging.log4j
    writer = jvm.java.io.StringWriter()
    layout = log4j.core.layout.PatternLayout.newBuilder().withPattern("%m%n").build()
    appender = log4j.core.appender.WriterAppender.createAppender(
        layout, None, writer, "sparkext-test-plan-change-log", False, True)
    appender.start()
    logger = log4j.LogManager.getLogger("org.apache.spark.sql.catalyst.rules.PlanChangeLogger")
    old_level = logger.getLevel()
    logger.addAppender(appender)
    logger.setLevel(log4j.Level.TRACE)
    try:
        yield writer
    finally:
        logger.removeAppender(appender)
        logger.setLevel(old_level)
        appender.stop()


def test_plan_change_log_shows_each_python_rule_under_its_own_name(spark, tables):
    expected = plain_rows(spark, filtered_projection)
    settings = {**INSTEAD_OF_CATALYST, "spark.sql.planChangeLog.level": "warn"}
    with conf(spark, settings), rules_enabled(spark, [PUSH, LOOK]), \
            plan_change_log(spark) as log:
        assert collect(filtered_projection(spark)) == expected
    text = log.toString()
    assert "=== Applying Rule sparkext:push_and_say_why ===" in text, text[-3000:]
    # a rule that changed nothing has no entry, as a native rule has none
    assert "sparkext:look_only" not in text
    # the before/after of the Python rule: the Filter above the Project, then below it
    entry = text.split("=== Applying Rule sparkext:push_and_say_why ===", 1)[1]
    assert "Filter" in entry and "Project" in entry


def test_no_trace_is_asked_of_python_when_the_log_is_silent(spark, tables):
    """The per-rule plans cost an encoding each: only asked for when the log prints."""
    seen: list = []

    def records(plan: LogicalPlan) -> LogicalPlan:
        from sparkext.context import current

        seen.append(current().trace)
        return plan

    with rules_enabled(spark, [Rule("records", records)]):
        filtered_projection(spark).collect()
        with conf(spark, {"spark.sql.planChangeLog.level": "warn"}), plan_change_log(spark):
            filtered_projection(spark).where("id < 100").collect()
    assert seen and seen[0] is False and seen[-1] is True, seen


# -- sparkext.explain(df) -----------------------------------------------------------------

def test_sparkext_explain_shows_each_change_with_its_reason(spark, tables):
    expected = plain_rows(spark, filtered_projection)
    with conf(spark, INSTEAD_OF_CATALYST):
        df = filtered_projection(spark)
        report = sparkext.explain(df, rules=[PUSH, LOOK], builtin=False)
        assert collect(df) == expected
    assert [s.rule for s in report.steps] == ["push_and_say_why"]
    step = report.steps[0]
    assert step.reasons == (REASON,)
    assert report.stats["push_and_say_why"].effective == 1
    assert report.stats["look_only"].effective == 0
    text = str(report)
    assert "== Optimized plan without sparkext ==" in text
    assert f"because: {REASON}" in text
    assert "-- 1. push_and_say_why (batch 'user rules'" in text
    # the plan without sparkext still has the filter above the projection
    assert report.before != report.after


def test_sparkext_explain_runs_what_enable_would_built_in_rules_first(spark, tables):
    with conf(spark, INSTEAD_OF_CATALYST):
        report = sparkext.explain(filtered_projection(spark), rules=[LOOK])
    ran = list(report.stats)
    assert ran[-1] == "look_only" and "push_down_filters" in ran[:-1]
    assert report.steps and report.steps[0].rule == "push_down_filters"
    with pytest.raises(TypeError, match="exactly one"):
        sparkext.explain(filtered_projection(spark), rules=[lambda a, b: a])


def test_sparkext_explain_leaves_the_session_s_rules_alone(spark, tables):
    with rules_enabled(spark, [LOOK]) as handle:
        sparkext.explain(filtered_projection(spark), rules=[PUSH])
        sparkext.reset_metrics(spark)
        filtered_projection(spark).collect()
        assert set(sparkext.metrics(spark)["rules"]) == {"look_only"}
        assert handle.rules == (LOOK,)


def test_sparkext_explain_reports_a_refused_rule(spark, tables):
    with conf(spark, LENIENT):
        report = sparkext.explain(filtered_projection(spark), rules=BREAK)
    assert report.steps == []
    assert [r.rule for r in report.refusals] == ["breaks_on_purpose"]
    assert "broken on purpose" in str(report)


def test_sparkext_explain_names_the_rule_of_the_call_that_was_refused(spark):
    # One query, two calls: the subquery's, where one rule makes a valid change, and the
    # main plan's, where another makes one the JVM refuses. Only the second is refused.
    ghost = AttributeReference("ghost", T.LONG, True, None, 987654321)

    def in_subquery(plan: LogicalPlan) -> bool:
        return isinstance(plan, Opaque) and plan.cls.endswith("Subquery")

    def marks_subqueries(plan: LogicalPlan) -> LogicalPlan:
        if in_subquery(plan) and not isinstance(plan.children[0], Filter):
            return plan.with_new_children([Filter(lit(True), plan.children[0])])
        return plan

    def reads_a_ghost(plan: LogicalPlan) -> LogicalPlan:
        def add(node: LogicalPlan) -> LogicalPlan:
            if isinstance(node, Filter) and ghost.expr_id not in node.condition.references:
                return Filter(And(node.condition, IsNotNull(ghost)), node.child)
            return node
        return plan if in_subquery(plan) else plan.transform_down(add)

    df = spark.range(10).where("id > (SELECT max(id) - 5 FROM range(8))")
    with conf(spark, LENIENT):
        report = sparkext.explain(df, rules=[Rule("marks_subqueries", marks_subqueries),
                                             Rule("reads_a_ghost", reads_a_ghost)],
                                  builtin=False)
    assert [s.rule for s in report.steps].count("marks_subqueries") == 1
    assert {r.rule for r in report.refusals} == {"reads_a_ghost"}
    assert all("explain[" not in r.reason and "was rejected" in r.reason
               for r in report.refusals)
    assert report.stats["marks_subqueries"].effective == 1


def test_sparkext_explain_refuses_two_rules_with_one_name_as_enable_does(spark, tables):
    def eliminate_sorts(plan: LogicalPlan) -> LogicalPlan:
        return plan

    with pytest.raises(ValueError, match="two different rules are named 'eliminate_sorts'"):
        sparkext.explain(filtered_projection(spark), rules=[eliminate_sorts])


def test_sparkext_explain_knows_the_rules_an_exclusion_names(spark, tables, caplog):
    caplog.set_level(logging.WARNING, logger="sparkext")
    with conf(spark, {"spark.sparkext.excludedRules": "look_only"}):
        report = sparkext.explain(filtered_projection(spark), rules=[LOOK, PUSH],
                                  builtin=False)
    assert "look_only" not in report.stats and "push_and_say_why" in report.stats
    assert not [r for r in caplog.records if "no registered rule has" in r.getMessage()]


def test_because_outside_a_rule_does_nothing():
    from sparkext.optimizer import Batch, Once, RuleExecutor
    from sparkext.plan import Relation

    rel = Relation("LocalRelation", (AttributeReference("a", T.INT, True, None, 1),), 0)

    def says_why(plan: LogicalPlan) -> LogicalPlan:
        sparkext.because("inside")
        return plan.copy()

    sparkext.because("nobody listens")  # no error: a rule called directly in a test
    assert says_why(rel) is not rel  # nor inside one called directly
    result = RuleExecutor([Batch("b", Once(), (says_why,))]).execute(rel)
    # what was said outside a rule is not kept for the next rule that runs
    assert result.stats["says_why"].reasons == ["inside"]


def test_the_explain_of_no_change_says_so(spark, tables):
    report = sparkext.explain(spark.range(3), rules=[LOOK])
    assert report.steps == [] and "look_only: ran" in str(report)


# -- the answer's figures (pure Python: the bridge answers a hand-written request) ---------

def test_every_answer_carries_each_rule_s_figures_by_registration_index():
    import json

    from sparkext.bridge import RuleBridge
    from sparkext.optimizer import Batch, FixedPoint, Once, RuleExecutor
    from tests.test_mirror import DOC, wire_text

    def drop_filter(plan: LogicalPlan) -> LogicalPlan:
        if isinstance(plan, Filter):
            sparkext.because("the filter is dropped on purpose")
            return plan.child
        return plan

    executor = RuleExecutor([Batch("b", FixedPoint(10), (LOOK, Rule("drop", drop_filter)))])
    bridge = RuleBridge({"once": executor})
    text = wire_text(DOC)
    doc = json.loads(bridge.apply(text))
    # two rounds: the first drops the filter, the second changes nothing
    stats = doc["stats"]
    assert stats[0:3] == [0, 2, 0] and stats[4:7] == [1, 2, 1], stats
    assert doc["because"] == {"drop": ["the filter is dropped on purpose"]}
    assert "trace" not in doc  # the header did not ask for it
    traced = json.loads(bridge.apply(wire_text({**DOC, "trace": True})))
    assert [s["rule"] for s in traced["trace"]] == ["drop"]

    unchanged = RuleBridge({"once": RuleExecutor([Batch("b", Once(), (LOOK,))])}).apply(text)
    assert unchanged.startswith('{"unchanged":true,"stats":[0,1,0,'), unchanged
    assert json.loads(unchanged)["stats"][3] >= 0


# -- a batch that does not converge -------------------------------------------------------

def test_a_batch_that_never_converges_warns_naming_the_rule_and_its_plan_is_used(spark, tables):
    from sparkext.optimizer import Batch, FixedPoint
    from tests.test_optimizer import fixed_point_examples

    # docs/writing-rules.md's wrong rule: one more filter above each relation every round
    stacks_filters = fixed_point_examples()[0]["keep_non_negative"]

    def query(s):
        return s.table("people").where("id > 1").select("id", "name")

    expected = plain_rows(spark, query)
    with rules_enabled(spark, batches=[Batch("stacking", FixedPoint(3), (stacks_filters,))]):
        sparkext.reset_metrics(spark)
        df = query(spark)
        assert collect(df) == expected
        text = section(extended_explain(df))
        warnings = sparkext.metrics(spark)["warnings"]
    line = ("batch 'stacking' reached its limit of 3 rounds with the plan still changing: "
            "rule(s) keep_non_negative changed it in the last round")
    assert any(line in w for w in warnings), warnings
    assert text is not None and line in text, text
