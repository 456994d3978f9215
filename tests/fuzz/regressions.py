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
]
