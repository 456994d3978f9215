"""sparkext ships typed (``py.typed``): ``make test`` runs mypy over ``sparkext/`` first,
with the configuration in pyproject.toml, so a change that breaks the types fails CI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _recipe(target: str) -> list[str]:
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    recipe = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


def test_make_test_runs_mypy_before_the_suite():
    # First, and on its own line: make stops at the first failing line.
    assert _recipe("test")[0] == "$(PY) -m mypy"


def test_make_venv_installs_the_pinned_mypy():
    pins = (ROOT / "requirements-dev.txt").read_text()
    assert re.search(r"^mypy==\d+\.\d+\.\d+$", pins, re.M)


def test_mypy_configuration_is_in_the_repository():
    config = (ROOT / "pyproject.toml").read_text()
    assert "[tool.mypy]" in config and 'files = ["sparkext"]' in config


def test_sparkext_type_checks():
    """What `make test` runs (skipped where mypy is not installed: `make venv` installs it)."""
    pytest.importorskip("mypy")
    run = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stdout + run.stderr
