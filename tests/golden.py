"""Expected plans of the rule unit tests on hand-built mirror plans
(tests/test_push_down_filters.py, tests/test_infer_filters.py, tests/test_prune_columns.py):
one file per rule in tests/plans/mirror/, one block per case, keyed by the case's title:

    # title: a filter moves below a projection, aliases replaced by what they name
    Project [(x#11 + 1) AS k#32, y#12]
    +- Filter ((x#11 + 1) > 5)
       +- LocalRelation r [x#11, y#12, z#13]

The test module's ``CASES`` is the single source of each case: the hand-built input plan
lives there and only there; the file holds what the rule must make of it, as
``tree_string()`` prints it (a golden output, as tests/plans/*.txt are TPC-H's). A block
whose title no case has fails ``stale``'s test. ``pytest --sparkext-update-plans``
rewrites the blocks of the cases that ran.

(The rule fixtures run in Spark, tests/fixtures/rules/<rule>.sql, are another thing: each
holds its case whole, SQL input and expected plan; tests/rule_fixtures.py.)
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from pathlib import Path

PLANS = Path(__file__).parent / "plans" / "mirror"
_BLOCK = re.compile(r"^# title: (.*)$", re.M)


def path_of(rule_name: str) -> Path:
    return PLANS / f"{rule_name}.txt"


def read_plans(path: Path) -> dict[str, str]:
    """title -> expected plan."""
    if not path.exists():
        return {}
    text = path.read_text()
    starts = [(m.start(), m.end(), m.group(1).strip()) for m in _BLOCK.finditer(text)]
    plans = {}
    for i, (_, end_of_title, title) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        plans[title] = text[end_of_title:end].strip("\n")
    return plans


def write_plan(path: Path, title: str, expected: str) -> None:
    plans = read_plans(path)
    plans[title] = expected
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(f"# title: {t}\n{p}\n" for t, p in plans.items()))


def check(rule_name: str, title: str, actual: str, update: bool) -> None:
    path = path_of(rule_name)
    if update:
        write_plan(path, title, actual)
        return
    plans = read_plans(path)
    assert title in plans, f"no plan {title!r} in {path}: run pytest --sparkext-update-plans"
    assert actual == plans[title], _diff("rewritten plan", plans[title], actual)


def stale(rule_name: str, titles: Iterable[str]) -> list[str]:
    """The titles of ``rule_name``'s file that none of ``titles`` (the cases) has."""
    cases = set(titles)
    return [t for t in read_plans(path_of(rule_name)) if t not in cases]


def _diff(what: str, expected: str, actual: str) -> str:
    lines = difflib.unified_diff(expected.splitlines(), actual.splitlines(),
                                 "expected", "actual", lineterm="")
    return f"{what} differs from the golden file:\n" + "\n".join(lines) + \
        f"\n--- expected\n{expected}\n--- actual\n{actual}"
