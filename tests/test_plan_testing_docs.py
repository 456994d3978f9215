"""The example in docs/plan-testing.md works as written: record, check, catch a change.
It runs pytest on it in a child process, as a user's CI would (a JVM of its own)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

DOC = ROOT / "docs" / "plan-testing.md"


def example() -> tuple[str, str]:
    """(file name, code) of the example block that starts with a '# tests/...' line."""
    for block in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S):
        first = block.splitlines()[0]
        if first.startswith("# tests/"):
            return first[2:].strip(), block
    raise AssertionError("docs/plan-testing.md has no '# tests/...' example")


def run_pytest(folder, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *args], cwd=folder, capture_output=True, text=True, timeout=600)


@pytest.mark.spark  # a Spark of its own (a child process)
def test_the_documented_example_records_checks_and_catches_a_changed_plan(tmp_path):
    name, code = example()
    test_file = tmp_path / name
    test_file.parent.mkdir(parents=True)
    test_file.write_text(code)

    recorded = run_pytest(tmp_path, name, "--sparkext-update-plans")
    assert recorded.returncode == 0, recorded.stdout[-3000:] + recorded.stderr[-3000:]
    golden = test_file.parent / "plans" / "report.txt"
    assert golden.exists() and "Aggregate" in golden.read_text()
    assert "0 plan snapshots checked, 1 updated" in recorded.stdout

    checked = run_pytest(tmp_path, name)
    assert checked.returncode == 0, checked.stdout[-3000:]
    assert "1 plan snapshots checked, 0 updated" in checked.stdout

    test_file.write_text(code.replace('.where("NOT cancelled")', ""))
    changed = run_pytest(tmp_path, name)
    assert changed.returncode == 1
    assert "differs from" in changed.stdout and "-   +- Filter (NOT" in changed.stdout
    assert (test_file.parent / "plans" / "report.actual.txt").exists()
