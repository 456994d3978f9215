"""Golden plans per Spark line: a line's own file, else the nearest older line's, else the
default line's (sparkext.testing.snapshots.golden_file), as Spark's PlanStabilitySuite and
Comet keep theirs. Plans here are plan text; the line a DataFrame's own session reports is
checked on every line by tests/compat/."""

from __future__ import annotations

import pytest

from sparkext.testing.snapshots import (
    DEFAULT_SPARK_LINE,
    PlanSnapshotError,
    SnapshotStats,
    assert_plan_snapshot,
    golden_file,
)

PLAN = "Project [a#1]\n+- Relation [a#1] parquet\n"
OTHER = "Project [a#1]\n+- Filter isnotnull(a#1)\n   +- Relation [a#1] parquet\n"


def write(folder, rel, text):
    path = folder / "plans" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def used(folder, line):
    return golden_file(folder, "q", line)[1]


def test_the_default_line_s_files_sit_in_plans_and_are_the_fallback_of_every_line(tmp_path):
    default = write(tmp_path, "q.txt", PLAN)
    assert DEFAULT_SPARK_LINE == "4.3"
    for line in ("3.5", "4.0", "4.2", "4.3", "4.4"):
        assert used(tmp_path, line) == default
    assert golden_file(tmp_path, "q", "4.3")[0] == default
    assert golden_file(tmp_path, "q", "4.1")[0] == tmp_path / "plans" / "spark4.1" / "q.txt"


def test_a_line_without_its_own_file_takes_the_nearest_older_line_s(tmp_path):
    default = write(tmp_path, "q.txt", PLAN)
    old = write(tmp_path, "spark3.5/q.txt", OTHER)
    mid = write(tmp_path, "spark4.1/q.txt", OTHER)
    assert used(tmp_path, "3.5") == old
    assert used(tmp_path, "4.0") == old
    assert used(tmp_path, "4.1") == mid
    assert used(tmp_path, "4.2") == mid
    assert used(tmp_path, "4.3") == default
    assert used(tmp_path, "4.4.0-preview1") == default


def test_each_line_is_checked_against_its_file(tmp_path):
    write(tmp_path, "q.txt", PLAN)
    write(tmp_path, "spark3.5/q.txt", OTHER)
    stats = SnapshotStats()
    assert_plan_snapshot(OTHER, "q", directory=tmp_path, update=False, stats=stats,
                         spark_line="4.0")
    assert_plan_snapshot(PLAN, "q", directory=tmp_path, update=False, stats=stats,
                         spark_line="4.3")
    assert stats.checked == 2 and not stats.failed
    with pytest.raises(PlanSnapshotError, match=r"on Spark 4\.0 differs from .*spark3\.5"):
        assert_plan_snapshot(PLAN, "q", directory=tmp_path, update=False, spark_line="4.0")
    # The plan to look at goes beside the file an update would write: the line's own.
    assert (tmp_path / "plans" / "spark4.0" / "q.actual.txt").read_text() == PLAN


def test_updating_writes_a_line_s_own_file_only_where_its_plan_differs(tmp_path):
    default = write(tmp_path, "q.txt", PLAN)
    own = tmp_path / "plans" / "spark4.1" / "q.txt"
    assert_plan_snapshot(PLAN, "q", directory=tmp_path, update=True, spark_line="4.1")
    assert not own.exists()
    assert_plan_snapshot(OTHER, "q", directory=tmp_path, update=True, spark_line="4.1")
    assert own.read_text() == OTHER and default.read_text() == PLAN
    assert_plan_snapshot(PLAN, "q", directory=tmp_path, update=True, spark_line="4.1")
    assert not own.exists()  # it would only repeat its fallback
    assert_plan_snapshot(OTHER, "q", directory=tmp_path, update=True, spark_line="4.3")
    assert default.read_text() == OTHER


def test_a_first_recording_goes_to_the_line_s_own_file(tmp_path):
    stats = SnapshotStats()
    assert_plan_snapshot(PLAN, "q", directory=tmp_path, update=False, stats=stats,
                         spark_line="3.5")
    assert (tmp_path / "plans" / "spark3.5" / "q.txt").read_text() == PLAN
    assert stats.updated == 1
    assert used(tmp_path, "4.3") == tmp_path / "plans" / "spark3.5" / "q.txt"


def test_a_spark_line_must_be_a_version():
    with pytest.raises(ValueError, match="cannot read a Spark version"):
        assert_plan_snapshot(PLAN, "q", directory=".", spark_line="latest")
