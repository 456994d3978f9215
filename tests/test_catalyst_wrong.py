"""Catalyst's own wrong rewrites (tests/corpus/catalyst_wrong.py): with Catalyst's pushdown
family excluded, sparkext's built-in rules (strict mode) return exactly the rows of the
unrewritten plan, where plain Spark does not.

  U  unrewritten: Catalyst's pushdown/pruning/inference rules excluded, sparkext off
  S  the same exclusions, sparkext's built-in rules on
"""

from __future__ import annotations

import pytest

import sparkext
from sparkext.catalyst import excluded_rules_conf
from tests.conftest import conf
from tests.corpus.catalyst_wrong import CASES, EXPECTED
from tests.rows import assert_same_rows, collect

U = {"spark.sparkext.enabled": "false", **excluded_rules_conf()}
S = {"spark.sparkext.enabled": "true", **excluded_rules_conf()}
N = {"spark.sparkext.enabled": "false"}


@pytest.fixture(scope="module")
def builtin(spark):
    sparkext.enable(spark)


@pytest.mark.parametrize("name", sorted(CASES))
def test_sparkext_returns_the_unrewritten_plans_rows_where_catalyst_does_not(
        spark, builtin, name):
    build = CASES[name]
    with conf(spark, U):
        expected = collect(build(spark))
    with conf(spark, S):
        sparkext.reset_metrics(spark)
        actual = collect(build(spark))
        m = sparkext.metrics(spark)
    with conf(spark, N):
        plain = collect(build(spark))
    if name in EXPECTED:
        assert sorted(map(tuple, expected)) == sorted(EXPECTED[name])
    assert m["rejected"] == 0 and m["python_errors"] == 0, m
    assert_same_rows(expected, actual)
    agrees = sorted(plain, key=repr) == sorted(expected, key=repr)
    print(f"{name}: plain Spark {'agrees' if agrees else 'differs'}")
