"""Fuzz findings kept as regression cases: each is the shrunk code the fuzzer printed,
checked in every mode by tests/fuzz/test_fuzz.py (so ``make test`` runs them).

To keep a finding: copy the ``Regression(...)`` entry that ``make fuzz`` (or a failing
``test_fuzz.py`` case) prints into ``REGRESSIONS``, rename it after the hazard it guards,
and say in ``note`` what went wrong and what fixed it. The code runs over the fuzzer's
tables (``tests/fuzz/tables.py``, seed 0) with ``spark`` and ``F`` in scope and ends in
``result``; ``order`` names the columns whose sequence the code determines (``()``: rows
are compared as a multiset only).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Regression:
    name: str
    note: str
    code: str
    order: tuple = ()


REGRESSIONS: list[Regression] = [
    Regression(
        name="filter_above_a_union_of_a_correlated_scalar_subquery",
        note="sweep seed 2, case 5134: 'instead' raised NoSuchElementException (key not "
             "found) in Catalyst's UnionBase.rewriteConstraints, from PruneFilters, before "
             "sparkext runs; Spark with PushDownPredicates excluded and sparkext off raises "
             "the same. Catalyst's own: the oracle now reports it as information.",
        code="""
df1 = spark.table("fz_a").toDF("t1_k", "t1_g", "t1_x", "t1_d", "t1_s", "t1_n", "t1_b", "t1_arr")
df2 = spark.sql('SELECT *, (SELECT max(s.x) FROM fz_a s WHERE s.g = t1_g) AS q2 FROM {d} WHERE true', d=df1)
df3 = df2.select("t1_b", "t1_k", "t1_g", "q2", "t1_d")
df4 = spark.table("fz_range").toDF("t3_k", "t3_g", "t3_x", "t3_d", "t3_s", "t3_n", "t3_b", "t3_arr")
df5 = df4.select(F.expr('CAST(NULL AS BOOLEAN)').alias("u4"), F.expr('CAST(t3_k AS INT)').alias("u5"), F.expr('CAST(t3_k AS INT)').alias("u6"), F.expr('CAST(t3_x AS INT)').alias("u7"), F.expr('CAST(t3_d AS DOUBLE)').alias("u8"))
df6 = df3.union(df5)
df7 = df6.where('t1_k % 2 = 1')
result = df7
"""),
]
