"""Every built-in rule's fixtures, run in a real session: tests/fixtures/rules/<rule>.sql.

Each case of a fixture file (format: tests/rule_fixtures.py) is a query over the tables
of tests/fixtures/rules/tables.sql, and is run in one session for the whole module:

1. with sparkext running only that rule (its batch, as ``sparkext.rules.BATCHES`` runs it,
   through ``sparkext.enable(session, batches=...)``), and with the Catalyst rules it
   duplicates switched off (``Rule.only_when_catalyst_excludes``: without that, the rule
   has nothing to do and does not run); then the same query in the same session with
   sparkext off (``spark.sparkext.enabled=false``), the plan the rule was given;
2. the rule must have changed the plan (the bridge's ``effective`` count, and an optimized
   plan that differs from the one without sparkext), or, for a case marked
   ``# unchanged``, must not have;
3. both plans return the same rows: the same multiset, and where the query has a
   top-level ORDER BY, the same sequence of sort-key values (ties may come in any order);
4. the optimized plan, normalised (``sparkext.testing.snapshots.normalize_plan``), is the
   case's ``# expected:`` block. ``pytest --sparkext-update-plans`` rewrites the blocks
   (after 2 and 3 pass). Plans are those of the default Spark line
   (``DEFAULT_SPARK_LINE``); on another line step 4 is skipped.

The rows without sparkext are those of the plan the rule was given, not plain Spark's
with every Catalyst rule on: a case isolates one rule, and plain Spark is wrong on some
of the very hazards the cases guard (tests/corpus/catalyst_wrong.py).

The tests at the end check that the runner can fail: a wrong expected block, a case whose
rule fires or does not fire against what it says, and a rule that changes the rows or
their order are each reported; and that the update flag writes a plan the check accepts.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import pytest
from chispa import DataFramesNotEqualError

import sparkext
from sparkext.optimizer import Batch, Rule
from sparkext.plan import Filter, Sort
from sparkext.rules import BATCHES
from sparkext.testing.snapshots import DEFAULT_SPARK_LINE, diff_plans, normalize_plan
from tests import rule_fixtures
from tests.conftest import conf, jvm_seq
from tests.rows import assert_same_rows, collect

_CATALYST = "org.apache.spark.sql.catalyst.optimizer."
DATABASE = "rule_fixtures"


def _builtin_rules() -> dict[str, tuple[Batch, Rule]]:
    """Each built-in rule with the batch it first runs in."""
    rules: dict[str, tuple[Batch, Rule]] = {}
    for batch in BATCHES:
        for r in batch.rules:
            rules.setdefault(r.name, (batch, r))
    return rules


RULES = _builtin_rules()


def _params() -> list:
    params = []
    for name in RULES:
        path = rule_fixtures.path_of(name)
        try:
            cases = rule_fixtures.read(path).cases if path.exists() else ()
        except rule_fixtures.FixtureFormatError:
            continue  # test_fixture_files_parse says what is wrong
        params += [pytest.param(name, c.title, id=f"{name}: {c.title}") for c in cases]
    return params


# --- the runner ------------------------------------------------------------------------

@dataclass
class Outcome:
    """One case run both ways: with the rule (``plan``, ``rows``) and without sparkext
    (``plain_plan``, ``plain_rows``)."""

    plan: str
    plain_plan: str
    effective: int
    rows: list
    plain_rows: list
    #: output positions of a top-level ORDER BY's keys (None: no top-level ORDER BY)
    order_keys: list[int] | None


class Runner:
    """The module's session: the tables created once, one rule enabled at a time."""

    def __init__(self, session):
        self.session = session
        self._enabled: tuple[str, Rule] | None = None

    def enable(self, batch: Batch, rule: Rule) -> None:
        if self._enabled != (batch.name, rule):
            sparkext.enable(self.session, batches=[Batch(batch.name, batch.strategy, (rule,))])
            self._enabled = (batch.name, rule)

    def run(self, batch: Batch, rule: Rule, sql: str) -> Outcome:
        self.enable(batch, rule)
        s = self.session
        with conf(s, catalyst_excluded(rule)):
            sparkext.reset_metrics(s)
            df = s.sql(sql)
            plan = normalize_plan(df)
            effective = sparkext.metrics(s)["rules"].get(rule.name, {}).get("effective", 0)
            rows = collect(df)
            with conf(s, {"spark.sparkext.enabled": "false"}):
                plain = s.sql(sql)
                plain_plan = normalize_plan(plain)
                plain_rows = collect(plain)
        return Outcome(plan, plain_plan, effective, rows, plain_rows, order_keys(df))


def catalyst_excluded(rule: Rule) -> dict[str, str]:
    """The session conf that switches off the Catalyst rules ``rule`` duplicates (none for
    a rule that does what Catalyst lacks)."""
    return {"spark.sql.optimizer.excludedRules":
            ",".join(_CATALYST + n for n in rule.only_when_catalyst_excludes)}


#: Nodes a top-level ORDER BY may sit under and still order the query's rows (not a
#: SubqueryAlias: an ORDER BY inside a subquery orders nothing the query promises).
_ORDER_KEEPING = ("Project", "Filter", "GlobalLimit", "LocalLimit", "Offset")


def order_keys(df) -> list[int] | None:
    """The output positions of the keys of the query's top-level ORDER BY (read from the
    analyzed plan), as far as they are columns of the output: rows in the order of all the
    keys are in the order of those first ones. None when the query has no top-level ORDER
    BY; an error when its first key is not an output column (the case must select it)."""
    plan = df._jdf.queryExecution().analyzed()
    output = [a.exprId().id() for a in jvm_seq(plan.output())]
    node = plan
    while node.nodeName() in _ORDER_KEEPING or node.nodeName() == "WithCTE":
        node = node.plan() if node.nodeName() == "WithCTE" else node.child()
    if node.nodeName() != "Sort" or not getattr(node, "global")():
        return None
    keys = []
    for order in jvm_seq(node.order()):
        key = order.child()
        if key.getClass().getSimpleName() != "AttributeReference" or \
                key.exprId().id() not in output:
            break
        keys.append(output.index(key.exprId().id()))
    if not keys:
        raise AssertionError("the first key of the query's ORDER BY is not a column of its "
                             "output: select it, so that the runner can compare the order")
    return keys


def _key(value):
    # Spark's sort puts NaN with NaN (and -0.0 with 0.0, which Python's == does already).
    return "NaN" if isinstance(value, float) and math.isnan(value) else value


def check_case(runner: Runner, rule_name: str, case: rule_fixtures.Case, *,
               path: Path, update: bool, rule: Rule | None = None) -> None:
    """Runs one case and fails, saying why, where it does not hold (module docstring).
    ``rule`` replaces the built-in rule of that name (the runner's own tests)."""
    __tracebackhide__ = True
    batch, builtin = RULES[rule_name]
    rule = rule or builtin
    out = runner.run(batch, rule, case.sql)
    where = f"{path.name}, case {case.title!r}"
    # 2. fired, or not
    if case.unchanged and (out.effective or out.plan != out.plain_plan):
        raise AssertionError(
            f"{where} is marked '# unchanged', but {rule.name} changed the plan "
            f"({out.effective} effective call(s)):\n"
            f"{diff_plans(out.plain_plan, out.plan, 'without sparkext', 'with the rule')}")
    if not case.unchanged and not out.effective:
        raise AssertionError(
            f"{where}: {rule.name} did not change the plan (mark the case '# unchanged' if "
            f"that is what it shows):\n{out.plan}")
    if not case.unchanged and out.plan == out.plain_plan:
        raise AssertionError(
            f"{where}: {rule.name} changed the plan, but the optimized plan is the same as "
            f"without sparkext (Catalyst did or undid the same): the case shows nothing of "
            f"the rule:\n{out.plan}")
    # 3. rows
    try:
        assert_same_rows(out.plain_rows, out.rows)
    except (AssertionError, DataFramesNotEqualError) as e:
        raise AssertionError(f"{where}: the rows differ with {rule.name} (left: without "
                             f"sparkext, right: with the rule):\n{e}\n"
                             f"plan with the rule:\n{out.plan}") from None
    if out.order_keys is not None:
        def keys(rows):
            return [tuple(_key(r[i]) for i in out.order_keys) for r in rows]
        if keys(out.rows) != keys(out.plain_rows):
            raise AssertionError(
                f"{where}: with {rule.name} the rows come in another order (sort keys at "
                f"output positions {out.order_keys}):\nwithout sparkext: "
                f"{keys(out.plain_rows)}\nwith the rule:     {keys(out.rows)}\n"
                f"plan with the rule:\n{out.plan}")
    # 4. the plan
    if ".".join(runner.session.version.split(".")[:2]) != DEFAULT_SPARK_LINE:
        return  # the expected plans are the default line's
    actual = out.plan.rstrip("\n")
    if update:
        if actual != case.expected:
            rule_fixtures.write_expected(path, case.title, actual)
        return
    if not case.expected:
        raise AssertionError(f"{where} has no '# expected:' plan: run pytest "
                             "--sparkext-update-plans, read the plan it writes, commit it")
    if actual != case.expected:
        diff = diff_plans(case.expected + "\n", actual + "\n", "expected", "actual")
        raise AssertionError(
            f"{where}: the plan after {rule.name} differs from its '# expected:' block:\n"
            f"{diff}\n--- expected\n{case.expected}\n--- actual\n{actual}\n"
            f"If the new plan is right, rerun with --sparkext-update-plans.")


@pytest.fixture(scope="module")
def runner(spark):
    """A session of its own (no temporary view of another test shadows a table), the
    tables created with sparkext not running in it."""
    session = spark.newSession()
    session.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    session.sql(f"USE {DATABASE}")
    for statement in rule_fixtures.statements(rule_fixtures.TABLES.read_text()):
        session.sql(statement)
    yield Runner(session)
    sparkext.disable(session)
    session.sql(f"DROP DATABASE IF EXISTS {DATABASE} CASCADE")


@pytest.mark.parametrize("rule_name,title", _params())
def test_rule_fixture(runner, update_plans, rule_name, title):
    path = rule_fixtures.path_of(rule_name)
    check_case(runner, rule_name, rule_fixtures.read(path).case(title), path=path,
               update=update_plans)


# --- the fixture files (no Spark) -----------------------------------------------------

#: Fewest cases a rule's file has: its main rewrites and its main refusals.
MIN_CASES = 5


@pytest.mark.parametrize("rule_name", list(RULES))
def test_every_builtin_rule_has_fixtures_that_fire_and_that_do_not(rule_name):
    path = rule_fixtures.path_of(rule_name)
    assert path.exists(), f"{rule_name} has no fixture file {path}"
    cases = rule_fixtures.read(path).cases
    assert len(cases) >= MIN_CASES, f"{path}: {len(cases)} cases, fewer than {MIN_CASES}"
    assert any(c.unchanged for c in cases), f"{path}: no '# unchanged' case (a refusal)"
    assert any(not c.unchanged for c in cases), f"{path}: no case where the rule fires"


def test_fixture_files_parse_and_are_written_as_the_update_writes_them():
    files = sorted(rule_fixtures.FIXTURES.glob("*.sql"))
    names = {p.stem for p in files} - {rule_fixtures.TABLES.stem}
    assert names <= set(RULES), f"fixture files of no built-in rule: {names - set(RULES)}"
    for path in files:
        if path == rule_fixtures.TABLES:
            continue
        fixture = rule_fixtures.read(path)
        assert rule_fixtures.render(fixture) == path.read_text(), (
            f"{path} is not in the form --sparkext-update-plans writes "
            "(tests/rule_fixtures.py): one blank line between cases, '# unchanged' before "
            "'# sql:'")
        missing = [c.title for c in fixture.cases if not c.expected]
        assert not missing, f"{path}: cases without '# expected:' plans: {missing}"


def test_the_format_reads_what_it_writes_and_refuses_what_it_does_not_know(tmp_path):
    text = ("-- preamble\n\n# title: one\n# sql:\nSELECT 1\n# expected:\nProject [1]\n\n"
            "# title: two\n# unchanged\n# sql:\nSELECT a\nFROM l\n# expected:\nX\n+- Y\n")
    fixture = rule_fixtures.parse(text)
    assert [(c.title, c.sql, c.expected, c.unchanged) for c in fixture.cases] == [
        ("one", "SELECT 1", "Project [1]", False), ("two", "SELECT a\nFROM l", "X\n+- Y", True)]
    assert rule_fixtures.render(fixture) == text
    path = tmp_path / "rule.sql"
    path.write_text(text)
    rule_fixtures.write_expected(path, "one", "Project [2]")
    assert path.read_text() == text.replace("Project [1]", "Project [2]")
    not_recorded = rule_fixtures.parse("# title: new\n# sql:\nSELECT 1\n# expected:\n")
    assert not_recorded.cases[0].expected == ""
    for bad, says in [("# title: t\n# unchanged\n", "no '# sql:'"),
                      ("# title: t\n# unchaged\n# sql:\nSELECT 1\n", "unknown line"),
                      ("# title: t\n# sql:\n\n# expected:\nX\n", "empty '# sql:'"),
                      ("# title: t\n# sql:\nSELECT 1\n# expected:\nX\n# unchanged\n",
                       "directive inside"),
                      ("# title: t\n# sql:\nA\n\n# title: t\n# sql:\nB\n", "used twice")]:
        with pytest.raises(rule_fixtures.FixtureFormatError, match=says):
            rule_fixtures.parse(bad)


def test_the_documented_example_is_a_fixture_case_as_it_is():
    doc = (Path(__file__).parent.parent / "docs" / "plan-testing.md").read_text()
    example = doc.split("### The rule fixtures", 1)[1].split("```\n", 2)[1]
    case = rule_fixtures.parse(example).cases[0]
    assert rule_fixtures.read(rule_fixtures.path_of("push_down_filters")).case(case.title) \
        == case, "docs/plan-testing.md's fixture example differs from push_down_filters.sql"


def test_the_tables_script_splits_into_statements():
    statements = rule_fixtures.statements(rule_fixtures.TABLES.read_text())
    assert statements[0].startswith("CREATE TABLE l ")
    assert not any(s.startswith("--") or s.endswith(";") for s in statements)


# --- the runner can fail --------------------------------------------------------------

def _first(rule_name: str, unchanged: bool) -> rule_fixtures.Case:
    return next(c for c in rule_fixtures.read(rule_fixtures.path_of(rule_name)).cases
                if c.unchanged == unchanged)


def test_a_wrong_expected_block_is_reported_with_a_diff(runner, tmp_path):
    case = _first("push_down_filters", unchanged=False)
    lines = case.expected.splitlines()
    wrong = case.with_expected("\n".join(lines[:1] + lines[2:]))  # one node missing
    path = tmp_path / "push_down_filters.sql"
    with pytest.raises(AssertionError, match="differs from its '# expected:' block") as err:
        check_case(runner, "push_down_filters", wrong, path=path, update=False)
    assert f"+{lines[1]}" in str(err.value)
    assert not path.exists()


def test_the_update_flag_writes_the_plan_a_check_then_accepts(runner, tmp_path):
    case = _first("push_down_filters", unchanged=False)
    path = tmp_path / "push_down_filters.sql"
    path.write_text(rule_fixtures.render(rule_fixtures.FixtureFile(
        path, "# a copy\n\n", (case.with_expected(""),))))
    check_case(runner, "push_down_filters", rule_fixtures.read(path).cases[0], path=path,
               update=True)
    assert rule_fixtures.read(path).cases == (case,)
    check_case(runner, "push_down_filters", case, path=path, update=False)


def test_a_case_that_says_the_wrong_thing_about_its_rule_is_reported(runner, tmp_path):
    path = tmp_path / "push_down_filters.sql"
    fires = _first("push_down_filters", unchanged=False)
    with pytest.raises(AssertionError, match="marked '# unchanged', but push_down_filters "
                                             "changed the plan"):
        check_case(runner, "push_down_filters", dataclasses.replace(fires, unchanged=True),
                   path=path, update=False)
    stays = _first("push_down_filters", unchanged=True)
    with pytest.raises(AssertionError, match="push_down_filters did not change the plan"):
        check_case(runner, "push_down_filters", dataclasses.replace(stays, unchanged=False),
                   path=path, update=False)


def _drop_filters(plan):
    return plan.transform_up(lambda n: n.child if isinstance(n, Filter) else n)


def _drop_sorts(plan):
    return plan.transform_up(lambda n: n.child if isinstance(n, Sort) else n)


@pytest.mark.parametrize("wrong,sql,says", [
    (_drop_filters, "SELECT * FROM l WHERE a > 1", "the rows differ"),
    (_drop_sorts, "SELECT a, b FROM l ORDER BY b DESC", "the rows come in another order"),
])
def test_a_rule_that_changes_the_rows_or_their_order_is_reported(runner, tmp_path, wrong,
                                                                 sql, says):
    rule = Rule(f"wrong_{wrong.__name__.strip('_')}", wrong)
    case = rule_fixtures.Case("a wrong rule", sql, expected="")
    # (the built-in rule whose batch it runs in: one that needs nothing excluded)
    with pytest.raises(AssertionError, match=says):
        check_case(runner, "simplify_sort_keys", case, path=tmp_path / "x.sql", update=False,
                   rule=rule)
