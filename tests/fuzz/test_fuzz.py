"""The differential fuzzer in make test: 300 seeded random pipelines, each in three modes
(plain Spark; sparkext's built-in rules on top of Catalyst's; Catalyst's rules excluded and
sparkext's instead), strict mode on, compared with plain Spark's rows; and the kept
regressions of tests/fuzz/regressions.py. A failing case is shrunk and printed as code.

``make fuzz N=10000 SEED=...`` runs the same generator for longer (tests/fuzz/sweep.py).
"""

from __future__ import annotations

import os

import pytest

import sparkext
from tests.fuzz.generate import case_seed, generate
from tests.fuzz.oracle import ALL_KEYS, check, check_code, regression_text, shrink
from tests.fuzz.regressions import REGRESSIONS
from tests.fuzz.tables import register

#: The cases make test runs: a fixed sweep seed, so a failure reproduces by its index.
SEED = 16
CASES = int(os.environ.get("SPARKEXT_FUZZ_CASES", "300"))


@pytest.fixture(scope="module")
def fuzz_tables(spark):
    sparkext.enable(spark)
    saved = {k: spark.conf.get(k, None) for k in ALL_KEYS}
    yield register(spark)
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
    found, _ = check(spark, case)
    failures = [f for f in found if f.failure]
    if failures:
        pytest.fail(failures_message(spark, case, failures), pytrace=False)


@pytest.mark.parametrize("regression", REGRESSIONS, ids=lambda r: r.name)
def test_a_kept_fuzz_finding_returns_plain_sparks_rows(spark, fuzz_tables, regression):
    found, outcomes = check_code(spark, regression.code, regression.order)
    failures = [f for f in found if f.failure]
    assert not failures, "\n".join(f"{f.kind} in {f.mode}: {f.detail}" for f in failures)
    assert outcomes["plain"].error is None, outcomes["plain"].error
