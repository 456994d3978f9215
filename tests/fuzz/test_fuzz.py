"""The differential fuzzer in make test: 120 seeded random pipelines, each in three modes
(plain Spark; sparkext's built-in rules on top of Catalyst's; Catalyst's rules excluded and
sparkext's instead), strict mode on, compared with plain Spark's rows; and the kept
regressions of tests/fuzz/regressions.py. A failing case is shrunk and printed as code.

``make fuzz N=10000 SEED=...`` runs the same generator for longer (tests/fuzz/sweep.py).
"""

from __future__ import annotations

import os
from typing import get_args

import pytest

import sparkext
from tests.fuzz.generate import case_seed, generate
from tests.fuzz.oracle import (
    ALL_KEYS, check, check_code, determined_order, plan_key, reductions, regression_text,
    set_mode, shrink,
)
from tests.fuzz.pipeline import (
    Atom, Filter, Join, Limit, Select, Sort, Source, Step, WithColumn, size, steps,
)
from tests.fuzz.regressions import REGRESSIONS
from tests.fuzz.tables import make_tables, register

#: The cases make test runs: a fixed sweep seed, so a failure reproduces by its index. 120
#: keep CI's time (each case is several Spark jobs); every kind of step and every table is
#: among them (test_make_tests_cases_have_every_step_and_table); ``make fuzz`` sweeps more.
SEED = 16
CASES = int(os.environ.get("SPARKEXT_FUZZ_CASES", "120"))


@pytest.fixture(scope="module")
def fuzz_tables(spark):
    sparkext.enable(spark)
    saved = {k: spark.conf.get(k, None) for k in ALL_KEYS}
    tables = register(spark)
    yield tables
    for name in tables:
        spark.catalog.dropTempView(name)  # and its cache
    for key, value in saved.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def failures_message(spark, case, failures) -> str:
    small = shrink(spark, case, failures[0], budget=40)
    lines = [f"{f.kind} in {f.mode}: {f.detail}" for f in failures]
    return "\n".join(lines + ["shrunk to:", small.code(), "to keep it:",
                              regression_text(small, failures[0])])


@pytest.mark.parametrize("index", range(CASES))
def test_a_random_pipeline_returns_plain_sparks_rows_in_every_mode(spark, fuzz_tables, index):
    case = generate(case_seed(SEED, index), fuzz_tables)
    # Every 8th case runs every mode's plan; the others run each distinct plan once (as a
    # sweep does: docs/fuzzing.md).
    found, _ = check(spark, case, full=index % 8 == 0)
    failures = [f for f in found if f.failure]
    if failures:
        pytest.fail(failures_message(spark, case, failures), pytrace=False)


@pytest.mark.parametrize("regression", REGRESSIONS, ids=lambda r: r.name)
def test_a_kept_fuzz_finding_returns_plain_sparks_rows(spark, fuzz_tables, regression):
    found, outcomes = check_code(spark, regression.code, regression.order)
    failures = [f for f in found if f.failure]
    assert not failures, "\n".join(f"{f.kind} in {f.mode}: {f.detail}" for f in failures)
    assert outcomes["plain"].error is None, outcomes["plain"].error


def test_a_mode_that_optimizes_to_plain_sparks_plan_takes_its_rows_unless_the_case_is_full(
        spark, fuzz_tables):
    code = 'result = spark.table("fz_a").where("k > 3").select("k", "x")'
    _, shared = check_code(spark, code, full=False)
    assert shared["on_top"].shared and shared["on_top"].rows == shared["plain"].rows
    assert shared["on_top"].metrics is not None  # its own rewrite's metrics, still judged
    _, full = check_code(spark, code, full=True)
    assert not any(o.shared for o in full.values())
    assert full["on_top"].rows == shared["on_top"].rows


def test_plans_whose_conjuncts_differ_in_order_are_not_the_same_plan(spark, fuzz_tables):
    # Canonical forms sort AND's operands, but a guard must run before what it guards.
    set_mode(spark, "plain")
    guarded = spark.table("fz_a").where("k <> 0 AND 100 DIV k > 1")
    unguarded = spark.table("fz_a").where("100 DIV k > 1 AND k <> 0")
    a, b = (df._jdf.queryExecution().optimizedPlan() for df in (guarded, unguarded))
    assert a.sameResult(b)
    assert plan_key(a) != plan_key(b)
    assert plan_key(a) == plan_key(guarded._jdf.queryExecution().optimizedPlan())


# -- the fuzzer's own machinery (no Spark) -------------------------------------------------

class _Plan:
    def __init__(self, text):
        self.text = text

    def treeString(self):  # noqa: N802 - the JVM method's name
        return self.text


def test_a_plan_key_renumbers_expression_ids_in_order_of_appearance():
    a = _Plan("Filter (k#12 > 3)\n+- Project [k#12, x#14]\n   +- scalar-subquery#99 [k#12]")
    b = _Plan("Filter (k#40 > 3)\n+- Project [k#40, x#41]\n   +- scalar-subquery#7 [k#40]")
    swapped = _Plan("Filter (k#40 > 3)\n+- Project [k#41, x#40]\n   +- scalar-subquery#7 [k#40]")
    assert plan_key(a) == plan_key(b)
    assert plan_key(a) != plan_key(swapped)

def test_a_seed_always_gives_the_same_pipeline():
    tables = make_tables()
    assert [generate(case_seed(SEED, i), tables).code() for i in range(50)] == \
        [generate(case_seed(SEED, i), tables).code() for i in range(50)]


def test_make_tests_cases_have_every_step_and_table():
    tables = make_tables()
    kinds, sources = set(), set()
    for i in range(CASES):
        for s in steps(generate(case_seed(SEED, i), tables).root):
            kinds.add(type(s).__name__)
            if isinstance(s, Source):
                sources.add(s.table)
    assert kinds == {c.__name__ for c in get_args(Step)}
    assert sources == set(tables)


def test_a_window_or_a_join_ends_the_order_a_sort_determined():
    src = Source("fz_a", "t1", ("k", "x"))
    by_k = Sort(src, (("t1_k", True, False),))
    assert determined_order(Filter(by_k, Atom("t1_x > 0"))) == ("t1_k",)
    assert determined_order(Select(by_k, (("t1_x", "t1_x"),))) == ()
    assert determined_order(WithColumn(by_k, "t1_x + 1", "c")) == ("t1_k",)
    assert determined_order(WithColumn(by_k, "count(*) OVER ()", "c")) == ()
    assert determined_order(Join(by_k, src, "inner", None)) == ()


def test_every_reduction_is_a_smaller_pipeline_and_a_limit_keeps_its_sort():
    tables = make_tables()
    for i in range(200):
        root = generate(case_seed(SEED, i), tables).root
        for smaller in reductions(root):
            assert smaller != root
            assert size(smaller) <= size(root)
        for s in steps(root):
            if isinstance(s, Limit):
                assert all(not (isinstance(r, Limit) and not isinstance(r.child, (Sort, Limit)))
                           for r in reductions(s))
