"""python -m sparkext: plan, plan-diff and explain, as a user runs them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests import tpch as TPCH
from tests.conftest import ROOT, tpch_dir


def sparkext_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparkext", *map(str, args)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)


PLAN_A = """Project [a#12L, b#13]
+- Filter (a#12L > 5)
   +- Relation [a#12L,b#13] parquet
"""


def test_plan_files_that_differ_only_in_ids_are_the_same(tmp_path):
    (tmp_path / "a.txt").write_text(PLAN_A)
    (tmp_path / "b.txt").write_text(PLAN_A.replace("#12", "#40").replace("#13", "#41"))
    out = sparkext_cli("plan-diff", tmp_path / "a.txt", tmp_path / "b.txt")
    assert out.returncode == 0 and "plans are the same" in out.stdout


def test_plan_files_that_differ_give_a_diff_and_exit_one(tmp_path):
    (tmp_path / "a.txt").write_text(PLAN_A)
    (tmp_path / "b.txt").write_text(PLAN_A.replace("> 5", "> 6"))
    out = sparkext_cli("plan-diff", tmp_path / "a.txt", tmp_path / "b.txt")
    assert out.returncode == 1
    assert "-+- Filter (a#1 > 5)" in out.stdout and "++- Filter (a#1 > 6)" in out.stdout


SORTED = """Sort [b#7 ASC NULLS FIRST, a#6L ASC NULLS FIRST], true
+- Project [a#6L, b#7, c#8]
   +- Filter (a#6L > 5)
      +- Join Inner, (a#6L = a#9L)
         :- Relation [a#6L,b#7,c#8] parquet
         +- Relation [a#9L] parquet
"""


def test_dropping_one_sort_key_is_a_one_line_diff(tmp_path):
    """Ids numbered by first appearance would shift every attribute after the dropped key
    (here five more lines); by name, then position, only the edited line differs."""
    (tmp_path / "a.txt").write_text(SORTED)
    (tmp_path / "b.txt").write_text(SORTED.replace("b#7 ASC NULLS FIRST, ", "")
                                    .replace("#6L", "#16L").replace("#7", "#17")
                                    .replace("#8", "#18").replace("#9L", "#19L"))
    out = sparkext_cli("plan-diff", tmp_path / "a.txt", tmp_path / "b.txt")
    assert out.returncode == 1, out.stderr
    changed = [line for line in out.stdout.splitlines()
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == ["-Sort [b#1 ASC NULLS FIRST, a#1 ASC NULLS FIRST], true",
                       "+Sort [a#1 ASC NULLS FIRST], true"], out.stdout


def test_plan_diff_tells_apart_two_attributes_of_one_name(tmp_path):
    """The self-join's two ``a``: by position, so a swap of the join keys is a diff."""
    swapped = SORTED.replace("(a#6L = a#9L)", "(a#9L = a#6L)")
    (tmp_path / "a.txt").write_text(SORTED)
    (tmp_path / "b.txt").write_text(swapped)
    out = sparkext_cli("plan-diff", tmp_path / "a.txt", tmp_path / "b.txt")
    assert out.returncode == 1 and "+      +- Join Inner, (a#2 = a#1)" in out.stdout, out.stdout


@pytest.mark.spark  # a Spark of its own (a child process)
def test_plan_diff_of_two_queries(tmp_path):
    data = tpch_dir()
    original = TPCH.query("q06")
    (tmp_path / "a.sql").write_text(original)
    (tmp_path / "b.sql").write_text(original.replace("l_quantity < 24", "l_quantity < 25"))
    out = sparkext_cli("plan-diff", tmp_path / "a.sql", tmp_path / "b.sql", "--catalog", data)
    assert out.returncode == 1, out.stderr[-2000:]
    assert "(l_quantity#" in out.stdout and "24.00" in out.stdout and "25.00" in out.stdout


@pytest.mark.spark  # a Spark of its own (a child process)
def test_explain_shows_what_each_rule_changed():
    out = sparkext_cli("explain", TPCH.QUERIES_DIR / "q03.sql", "--catalog", tpch_dir(),
                       "--instead-of-catalyst")
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout
    assert "== Optimized plan without sparkext ==" in text
    assert "== Optimized plan with sparkext's rules ==" in text
    # (with Catalyst's ColumnPruning off, prune_subquery_inputs prunes every column
    # prune_columns would, and more: it subsumes it, and prune_columns does not run)
    for rule in ("push_down_filters", "infer_filters", "prune_subquery_inputs"):
        assert f". {rule} (batch" in text, rule
