"""Golden fixture files for rule unit tests: one file per rule, one block per case.

    # title: a filter moves below a projection, aliases replaced
    # input:
    Filter (x#3 > 1)
    ...
    # expected:
    Project [...]
    ...

The input block documents the hand-built plan (and is checked too, so it cannot drift);
the expected block is what the rule must produce. ``pytest --sparkext-update-plans``
rewrites the blocks of the cases that ran.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "rules"
_BLOCK = re.compile(r"^# title: (.*)$", re.M)


def read_cases(path: Path) -> dict[str, tuple[str, str]]:
    if not path.exists():
        return {}
    text = path.read_text()
    starts = [(m.start(), m.group(1).strip()) for m in _BLOCK.finditer(text)]
    cases = {}
    for i, (pos, title) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        body = text[pos:end]
        _, _, rest = body.partition("# input:\n")
        given, _, expected = rest.partition("# expected:\n")
        cases[title] = (given.rstrip("\n"), expected.rstrip("\n"))
    return cases


def write_case(path: Path, title: str, given: str, expected: str) -> None:
    cases = read_cases(path)
    cases[title] = (given, expected)
    path.write_text("".join(f"# title: {t}\n# input:\n{g}\n# expected:\n{e}\n\n"
                            for t, (g, e) in cases.items()))


def check(rule_name: str, title: str, given: str, actual: str, update: bool) -> None:
    path = FIXTURES / f"{rule_name}.txt"
    if update:
        write_case(path, title, given, actual)
        return
    cases = read_cases(path)
    assert title in cases, f"no case {title!r} in {path}: run pytest --sparkext-update-plans"
    want_given, want = cases[title]
    assert given == want_given, _diff("input plan", want_given, given)
    assert actual == want, _diff("rewritten plan", want, actual)


def _diff(what: str, expected: str, actual: str) -> str:
    lines = difflib.unified_diff(expected.splitlines(), actual.splitlines(),
                                 "expected", "actual", lineterm="")
    return f"{what} differs from the fixture:\n" + "\n".join(lines) + \
        f"\n--- expected\n{expected}\n--- actual\n{actual}"
