"""Runs a case in each mode and judges the outcomes; shrinks a failing case.

Modes (strict mode is on in the test session, so a rejected rewrite raises):

  plain     plain Spark (sparkext off)
  on_top    sparkext's built-in rules after Catalyst's own
  instead   Catalyst's pushdown/pruning/sort rules excluded, sparkext's rules on

One more mode runs only to judge an error in ``instead``:

  unrewritten  Catalyst's rules excluded as in ``instead``, sparkext off

Catalyst itself can fail with its own rules excluded (excluding PushDownPredicates alone
makes ``UnionBase.rewriteConstraints`` raise ``key not found`` on a filter above a union
of a correlated scalar subquery: PruneFilters, before sparkext runs). An error that
``unrewritten`` raises as well is Catalyst's, reported as information, not failed.

The oracle, against ``plain``:
  * rows as multisets (NaN equal to NaN, -0.0 to 0.0: which of two equal keys a grouping
    or a min outputs is not determined);
  * the sequence of the columns a sort determines (``determined_order``);
  * an error where ``plain`` returns rows is a failure, and so is any rejected rewrite,
    Python error or timeout in the bridge's metrics, and any fact the ordering rules relied
    on that the rows of its sort's input contradict (``SPARKEXT_CHECK_ORDER_FACTS=1``); ``plain`` raising where a sparkext
    mode does not is recorded, not failed (a rewrite may remove an error Spark has).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, replace

from sparkext.catalyst import excluded_rules_conf
from tests.fuzz.pipeline import (
    Aggregate, Case, Filter, Join, Limit, Select, SetOp, Sort, Source, SqlWhere, WithColumn,
    render, run_code, simpler_predicates,
)

#: Settings of every mode. One shuffle partition and no adaptive execution: on this
#: 2-core machine they make a small query about twice as fast (make test runs 900).
COMMON = {"spark.sql.shuffle.partitions": "1", "spark.sql.adaptive.enabled": "false",
          # plan_key compares plans by their text: nothing elided.
          "spark.sql.debug.maxToStringFields": "100000"}
MODES = {
    "plain": {"spark.sparkext.enabled": "false"},
    "on_top": {"spark.sparkext.enabled": "true"},
    "instead": {"spark.sparkext.enabled": "true", **excluded_rules_conf()},
}
UNREWRITTEN = {"spark.sparkext.enabled": "false", **excluded_rules_conf()}
#: Execution without generated code, for all but the full cases (``check_code``). A case
#: runs each distinct plan once, so Janino's compilation is not shared between modes any
#: more and costs more than interpreting these few rows (docs/fuzzing.md, "Speed"); the
#: full cases keep whole-stage code generation, so both paths stay covered.
INTERPRETED = {"spark.sql.codegen.wholeStage": "false",
               "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
ALL_KEYS = sorted({k for m in MODES.values() for k in m} | set(COMMON) | set(INTERPRETED))
INFORMATIVE = ("plain_error", "catalyst_error")


@dataclass(frozen=True)
class Outcome:
    rows: list | None
    error: str | None
    columns: tuple = ()
    metrics: dict | None = None
    shared: bool = False  # the rows of an identical plan another mode ran (``run``)
    #: the facts the ordering rules relied on in this mode that the rows contradict
    facts: tuple = ()


@dataclass(frozen=True)
class Finding:
    kind: str  # error, rows, order, rejected (failures); INFORMATIVE ones
    mode: str
    detail: str

    @property
    def failure(self) -> bool:
        return self.kind not in INFORMATIVE


def set_mode(spark, mode: str, interpreted: bool = False) -> None:
    settings = {**COMMON, **(UNREWRITTEN if mode == "unrewritten" else MODES[mode]),
                **(INTERPRETED if interpreted else {})}
    for key in ALL_KEYS:
        if key in settings:
            spark.conf.set(key, settings[key])
        else:
            spark.conf.unset(key)


def run(spark, build, mode: str, executed: dict | None = None) -> Outcome:
    """``build()``: the case's DataFrame, or the exception building it raised.

    ``executed``: the plans already run for this case, by ``plan_key``, with their
    outcomes; execution is then interpreted. A mode whose optimized plan is one of them
    takes that plan's rows (or error) instead of running it again: the same plan gives the
    same rows, so a second run would test Spark's determinism, not a rewrite. ``None``:
    always run, with generated code (a full case)."""
    import sparkext
    from sparkext.testing.session import check_order_facts

    set_mode(spark, mode, interpreted=executed is not None)
    if mode != "plain":
        sparkext.reset_metrics(spark)
    rows, error, columns, key = None, None, (), None
    try:
        df = build()
        columns = tuple(f"{f.name}:{f.dataType.simpleString()}" for f in df.schema.fields)
        if executed is not None:
            plan = df._jdf.queryExecution().optimizedPlan()  # rewrite errors raise here
            key = plan_key(plan)
            ran = executed.get(key)
            if ran is not None and ran[0].sameResult(plan):
                metrics = sparkext.metrics(spark) if mode != "plain" else None
                return Outcome(ran[1].rows, ran[1].error, columns, metrics, shared=True,
                               facts=tuple(check_order_facts(spark)))
        rows = df.collect()
    except Exception as e:  # noqa: BLE001 - any error is an outcome to compare
        rows, columns = None, ()
        error = describe(e)
    metrics = sparkext.metrics(spark) if mode != "plain" else None
    # What the ordering rules relied on, checked on the rows of each sort's input: a wrong
    # fact fails even where the query's rows came out in order by luck (issue 33).
    outcome = Outcome(rows, error, columns, metrics, facts=tuple(check_order_facts(spark)))
    if key is not None:
        executed[key] = (plan, outcome)
    return outcome


def plan_key(plan) -> str:
    """An optimized plan's text (subqueries included) with expression ids renumbered in
    order of appearance: two plans with the same key and ``sameResult`` are the same plan.
    Either alone is not enough: ``sameResult`` compares canonical forms, which reorder the
    operands of AND and OR (and a guard must stay before what it guards under ANSI); the
    text shows neither a literal's type nor what it elides beyond
    ``spark.sql.debug.maxToStringFields`` (raised in ``COMMON``)."""
    ids: dict[str, str] = {}
    return re.sub(r"#\d+", lambda m: ids.setdefault(m.group(), f"#{len(ids)}"),
                  plan.treeString())


def describe(e: Exception) -> str:
    """An error's class, condition and first line (the JVM exception's, through py4j)."""
    condition = e.getCondition() if hasattr(e, "getCondition") else None
    java = getattr(e, "java_exception", None)
    text = java.toString() if java is not None else str(e)
    return f"{type(e).__name__}[{condition}]: {text.splitlines()[0][:300]}"


def normal(v):
    """A value as the oracle compares it: NaN equal to NaN, -0.0 equal to 0.0."""
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else v + 0.0
    if isinstance(v, (list, tuple)):
        return tuple(normal(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((repr(k), normal(x)) for k, x in v.items()))
    return v


def determined_order(step) -> tuple:
    """The columns whose sequence ``step``'s output determines: the keys of a sort, through
    the steps that keep row order (filters, limits, projections that keep them)."""
    match step:
        case Sort(_, keys):
            return tuple(k[0] for k in keys)
        case WithColumn(child, sql) if " OVER (" not in sql:  # a window reorders rows
            return determined_order(child)
        case Filter(child) | Limit(child):
            return determined_order(child)
        case Select(child, items):
            kept = {n for s, n in items if s == n}
            return tuple(c for c in determined_order(child) if c in kept)
        case _:
            return ()


def judge(order: tuple, outcomes: dict[str, Outcome]) -> list[Finding]:
    """The failures (and informative differences) of ``outcomes`` against ``plain``;
    ``order``: the columns whose sequence is determined."""
    base = outcomes["plain"]
    found = []
    for mode, out in outcomes.items():
        if mode == "plain":
            continue
        m = out.metrics or {}
        bad = {k: m.get(k, 0) for k in ("rejected", "python_errors", "timeouts") if m.get(k, 0)}
        if bad:
            found.append(Finding("rejected", mode, f"metrics {bad}"))
        found.extend(Finding("fact", mode, f) for f in out.facts)
        if base.error is not None:
            if out.error is None:
                found.append(Finding("plain_error", mode, base.error))
            elif "sparkext" in out.error.lower() and "sparkext" not in base.error.lower():
                found.append(Finding("rejected", mode, out.error))
            continue
        if out.error is not None:
            found.append(Finding("error", mode, out.error))
            continue
        if out.columns != base.columns:
            found.append(Finding("rows", mode, f"schema {out.columns} != {base.columns}"))
            continue
        expected = Counter(normal(tuple(r)) for r in base.rows)
        actual = Counter(normal(tuple(r)) for r in out.rows)
        if expected != actual:
            missing = list((expected - actual).elements())[:5]
            extra = list((actual - expected).elements())[:5]
            found.append(Finding("rows", mode, f"{sum(expected.values())} rows expected, "
                                 f"{sum(actual.values())} returned; missing {missing}, "
                                 f"extra {extra}"))
            continue
        if order:
            def seq(rows):
                return [normal(tuple(r[c] for c in order)) for r in rows]
            if seq(base.rows) != seq(out.rows):
                found.append(Finding("order", mode, f"sequence of {order} differs"))
    return found


def check(spark, case: Case, modes=tuple(MODES), full: bool = True
          ) -> tuple[list[Finding], dict[str, Outcome]]:
    """Runs ``case`` in ``modes`` and judges it (``full``: see ``check_code``)."""
    return check_code(spark, case.code(), determined_order(case.root), modes, full)


def check_code(spark, code: str, order: tuple = (), modes=tuple(MODES), full: bool = True):
    """Runs a case's code in ``modes`` and judges it. The code runs (and is analyzed)
    once; each mode optimizes the analyzed plan afresh, with its own settings, and runs
    it unless another mode already ran the same optimized plan (``run``). ``full``: every
    mode runs its plan, identical or not, with whole-stage code generation (sweeps do so for
    a fixed share of the cases); the others run interpreted (``INTERPRETED``)."""
    from tests.conftest import dataframe_of

    set_mode(spark, "plain")
    try:
        analyzed = run_code(spark, code)._jdf.queryExecution().analyzed()
    except Exception as e:  # noqa: BLE001 - an analysis error: the same in every mode
        error = e

        def build():
            raise error
    else:
        def build():
            return dataframe_of(spark, analyzed)
    executed = None if full else {}
    outcomes = {mode: run(spark, build, mode, executed) for mode in modes}
    found = judge(order, outcomes)
    if any(f.kind == "error" and f.mode == "instead" for f in found):
        unrewritten = run(spark, build, "unrewritten", None if full else {})
        if unrewritten.error is not None:
            found = [Finding("catalyst_error", f.mode, f"{f.detail} (raised with sparkext "
                             "off too: Catalyst's own, with its rules excluded)")
                     if f.kind == "error" and f.mode == "instead"
                     and f.detail == unrewritten.error else f for f in found]
    return found, outcomes


# -- shrinking -----------------------------------------------------------------------------

def reductions(step, parent=None):
    """Smaller variants of the tree under ``step``: a step replaced by its input (either
    input of a join or set operation), a predicate with a part removed, a projection or an
    aggregate with an item removed, a join made inner, a read without rand or sample."""
    # A limit keeps its sort: without it the rows a limit keeps are not determined.
    if step.children and not (isinstance(parent, Limit) and isinstance(step, Sort)):
        yield from step.children
    match step:
        case Filter(child, pred) | SqlWhere(child, pred):
            for p in simpler_predicates(pred):
                yield replace(step, pred=p)
        case Join(_, _, how, on):
            if on is not None:
                for p in simpler_predicates(on):
                    yield replace(step, on=p)
            if how not in ("inner", "cross"):
                yield replace(step, how="inner")
        case Select(_, items) if len(items) > 1:
            for i in range(len(items)):
                yield replace(step, items=items[:i] + items[i + 1:])
        case Aggregate(_, keys, aggs):
            for i in range(len(keys)):
                yield replace(step, keys=keys[:i] + keys[i + 1:])
            for i in range(len(aggs)):
                if len(aggs) > 1:
                    yield replace(step, aggs=aggs[:i] + aggs[i + 1:])
        case SetOp(_, _, op) if op != "union":
            yield replace(step, op="union")
        case Source(_, _, _, extra) if extra:
            yield replace(step, extra=())
        case _:
            pass
    fields = [f for f in ("child", "left", "right") if hasattr(step, f)]
    for f in fields:
        for r in reductions(getattr(step, f), step):
            yield replace(step, **{f: r})


def limits_are_determined(spark, root) -> bool:
    """Every limit's sort still orders on every column of its input (a reduction below it
    may have added columns)."""
    from tests.fuzz.pipeline import steps

    for s in steps(root):
        if isinstance(s, Limit) and isinstance(s.child, Sort):
            try:
                columns = run_code(spark, render(s.child.child)).columns
            except Exception:  # noqa: BLE001 - an invalid candidate
                return False
            if set(columns) - {k[0] for k in s.child.keys}:
                return False
    return True


def shrink(spark, case: Case, finding: Finding, budget: int = 80) -> Case:
    """The smallest case found (greedily) that still fails the same way in the same mode."""
    modes = ("plain", finding.mode)
    current, tries = case, 0
    improved = True
    while improved and tries < budget:
        improved = False
        for root in reductions(current.root):
            if tries >= budget:
                break
            candidate = Case(root, seed=case.seed)
            if not limits_are_determined(spark, root):
                continue
            tries += 1
            found, _ = check(spark, candidate, modes)
            if any(f.kind == finding.kind and f.mode == finding.mode for f in found):
                current, improved = candidate, True
                break
    return current


def regression_text(case: Case, finding: Finding) -> str:
    """The entry to paste into REGRESSIONS in tests/fuzz/regressions.py to keep a shrunk
    case (give it a name that says what it guards)."""
    note = f"{finding.kind} in {finding.mode}: {finding.detail}"[:200]
    return (f"Regression(\n    name=\"seed_{case.seed}\",\n    note={note!r},\n"
            f"    order={determined_order(case.root)!r},\n"
            f"    code=\"\"\"\n{case.code()}\n\"\"\"),")
