"""The rule fixture files, ``tests/fixtures/rules/<rule>.sql``: one file per built-in rule,
one block per case, and each block is the whole case (sqlglot's optimizer fixtures are
the model):

    # title: a filter moves below a projection, aliases replaced by what they name
    # sql:
    SELECT * FROM (SELECT a + 1 AS k, b FROM l) WHERE k > 5
    # expected:
    Project [(a#1 + 1) AS k#2, b#3]
    +- Filter ((a#1 + 1) > 5)
       +- Relation spark_catalog.rule_fixtures.l[a#1,b#3,c#4] parquet

- ``# title:`` names the case after what it shows or the hazard it guards;
- ``# unchanged`` (optional, before ``# sql:``) says the rule must leave this plan as it
  is: a legality condition;
- ``# sql:`` is the query, over the tables of ``tests/fixtures/rules/tables.sql``;
- ``# expected:`` is the optimized plan with sparkext running only this rule, as
  :func:`sparkext.testing.snapshots.normalize_plan` prints it (ids renumbered in order of
  appearance, paths masked). ``pytest --sparkext-update-plans`` rewrites these blocks
  and nothing else.

Lines before the first ``# title:`` are the file's preamble, kept as they are. Cases are
separated by one blank line. ``tests/test_rule_fixtures.py`` runs them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "rules"
#: The test tables every rule fixture's SQL reads (statements separated by ``;``).
TABLES = FIXTURES / "tables.sql"

_TITLE = re.compile(r"^# title: (.*)$", re.M)
_DIRECTIVES = ("# unchanged", "# sql:", "# expected:")


class FixtureFormatError(ValueError):
    """A fixture file that does not follow the format; the message says where."""


@dataclass(frozen=True)
class Case:
    title: str
    sql: str
    #: the expected plan ("" when the block is missing: a case not yet recorded)
    expected: str
    #: the rule must not change the plan
    unchanged: bool = False

    def with_expected(self, expected: str) -> Case:
        return replace(self, expected=expected)


@dataclass(frozen=True)
class FixtureFile:
    path: Path
    preamble: str
    cases: tuple[Case, ...]

    def case(self, title: str) -> Case:
        for c in self.cases:
            if c.title == title:
                return c
        raise KeyError(f"no case {title!r} in {self.path}")


def path_of(rule: str) -> Path:
    return FIXTURES / f"{rule}.sql"


def parse(text: str, path: Path = Path("<text>")) -> FixtureFile:
    starts = list(_TITLE.finditer(text))
    preamble = text[:starts[0].start()] if starts else text
    cases: list[Case] = []
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        line = text.count("\n", 0, m.start()) + 1
        cases.append(_parse_case(m.group(1).strip(), text[m.end():end], path, line))
    titles = [c.title for c in cases]
    twice = sorted({t for t in titles if titles.count(t) > 1})
    if twice:
        raise FixtureFormatError(f"{path}: titles used twice: {twice}")
    return FixtureFile(path, preamble, tuple(cases))


def _parse_case(title: str, body: str, path: Path, line: int) -> Case:
    where = f"{path}:{line} ({title!r})"
    if not title:
        raise FixtureFormatError(f"{where}: empty title")
    lines = body.split("\n")[1:]  # (the rest of the title line is empty)
    unchanged = False
    while lines and lines[0].startswith("#") and lines[0] != "# sql:":
        if lines[0] != "# unchanged":
            raise FixtureFormatError(f"{where}: unknown line {lines[0]!r} before '# sql:' "
                                     f"(a case has {', '.join(_DIRECTIVES)})")
        unchanged = True
        lines = lines[1:]
    if not lines or lines[0] != "# sql:":
        raise FixtureFormatError(f"{where}: no '# sql:' block")
    rest = "\n".join(lines[1:])
    sql, marker, expected = rest.partition("# expected:\n")
    if not marker and rest.rstrip("\n").endswith("# expected:"):
        sql, expected = rest.rstrip("\n")[:-len("# expected:")], ""
    for block in (sql, expected):
        stray = [x for x in block.splitlines() if x.startswith("# ")]
        if stray:
            raise FixtureFormatError(f"{where}: a directive inside a block: {stray[0]!r}")
    sql = sql.strip("\n")
    if not sql.strip():
        raise FixtureFormatError(f"{where}: empty '# sql:' block")
    return Case(title, sql, expected.strip("\n"), unchanged)


def render(fixture: FixtureFile) -> str:
    """The file's text: ``parse(render(f)) == f``, and ``render(parse(text)) == text`` for
    a file in this form (tests/test_rule_fixtures.py checks every fixture is)."""
    out = [fixture.preamble]
    for c in fixture.cases:
        out.append(f"# title: {c.title}\n" + ("# unchanged\n" if c.unchanged else "")
                   + f"# sql:\n{c.sql}\n# expected:\n"
                   + (f"{c.expected}\n" if c.expected else "") + "\n")
    return "".join(out).rstrip("\n") + "\n"


def read(path: Path) -> FixtureFile:
    return parse(path.read_text(), path)


def write_expected(path: Path, title: str, expected: str) -> None:
    """Rewrites one case's ``# expected:`` block in place (the update flag)."""
    fixture = read(path)
    cases = tuple(c.with_expected(expected) if c.title == title else c
                  for c in fixture.cases)
    path.write_text(render(replace(fixture, cases=cases)))


def statements(text: str) -> list[str]:
    """The statements of a SQL script: split at a ``;`` that ends a line; ``--`` comment
    lines dropped."""
    body = "\n".join(x for x in text.splitlines() if not x.lstrip().startswith("--"))
    return [s.strip() for s in re.split(r";[ \t]*$", body, flags=re.M) if s.strip()]
