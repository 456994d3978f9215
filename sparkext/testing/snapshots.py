"""Stable plan text, golden plan snapshots, plan diffs.

    from sparkext.testing.snapshots import assert_plan_snapshot, normalize_plan

    def test_daily_report_plan(spark):
        df = build_daily_report(spark)
        assert_plan_snapshot(df, "daily_report")             # plans/daily_report.txt
        assert_plan_snapshot(df, "daily_report_physical", kind="physical")

The first run (or ``pytest --sparkext-update-plans``, or ``SPARKEXT_UPDATE_PLANS=1``)
writes the golden file; later runs compare against it and fail with a unified diff,
leaving ``<name>.actual.txt`` beside the golden file.

Plans differ between Spark lines, so golden files are kept per line, as Spark's
PlanStabilitySuite and Comet keep theirs: ``plans/<name>.txt`` is the file of the default
line (:data:`DEFAULT_SPARK_LINE`), ``plans/spark3.5/<name>.txt`` that of Spark 3.5. A line
with no file of its own is checked against the nearest older line's, else the default's;
updating writes a line's own file only where its plan differs from that fallback.

Why not syrupy: its storage (``__snapshots__/<module>/<test>``), update flag and report
are its own; plan snapshots want one readable file per plan next to the test, named by
the caller, an ``.actual.txt`` to diff by hand, and the update flag shared with the rest
of sparkext's tooling. What is left to write by hand is a few lines of file handling.
"""

from __future__ import annotations

import difflib
import inspect
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sparkext import _tree, versions

__all__ = ["DEFAULT_SPARK_LINE", "IDS_BY_APPEARANCE", "IDS_BY_NAME", "PlanSnapshotError",
           "SnapshotStats", "assert_plan_snapshot", "diff_plans", "golden_file",
           "normalize_plan", "plan_text"]

#: The Spark line whose golden files sit directly in ``plans/`` (the newest sparkext
#: supports); every other line's go in ``plans/spark<line>/``.
DEFAULT_SPARK_LINE = versions.LINES[-1].spark

_EXPR_ID = re.compile(r"#(\d+)L?\b")
_PLAN_ID = re.compile(r"\bplan_id=\d+")
_CODEGEN = re.compile(r"\*\(\d+\)")
_CODEGEN_STAGE = re.compile(r"(WholeStageCodegen|codegen id) ?\(?\d+\)?")
_STATS = re.compile(r"Statistics\([^)]*\)")
_LOCATION = re.compile(r"(Location: \w+)(?:\(\d+ paths?\))?\[[^\]]*\]")
_PATH = re.compile(r"\b(?:file|hdfs|s3a?|abfss?|gs|dbfs):/[^\s,\]\)]*")
_HASH = re.compile(r"@[0-9a-f]{6,}\b")
_RDD = re.compile(r"\b([A-Za-z]*RDD)\[\d+\]")
_STAGE_ID = re.compile(r"\b(id=)#?\d+")


def plan_text(df_or_plan, kind: str = "optimized") -> str:
    """The plan of a DataFrame (``optimized``, ``analyzed`` or ``physical``), or the text
    of a JVM plan object, as Spark prints it."""
    if isinstance(df_or_plan, str):
        return df_or_plan
    jdf = getattr(df_or_plan, "_jdf", None)
    if jdf is not None:
        qe = jdf.queryExecution()
        plans = {"optimized": qe.optimizedPlan, "analyzed": qe.analyzed,
                 "physical": qe.executedPlan}
        if kind not in plans:
            raise ValueError(f"kind must be one of {sorted(plans)}, not {kind!r}")
        return plans[kind]().treeString()
    if hasattr(df_or_plan, "treeString"):
        return df_or_plan.treeString()
    if hasattr(df_or_plan, "tree_string"):
        return df_or_plan.tree_string()
    raise TypeError(f"cannot read a plan from {type(df_or_plan).__name__}")


#: How :func:`normalize_plan` renumbers expression ids.
IDS_BY_APPEARANCE = "appearance"
IDS_BY_NAME = "name"


def normalize_plan(text_or_plan, kind: str = "optimized", *, ids: str = IDS_BY_APPEARANCE
                   ) -> str:
    """Plan text that is the same in every session and every run.

    Expression ids are renumbered (``#123L`` -> ``#1``, the same id always getting the same
    number): with ``ids=IDS_BY_APPEARANCE`` (golden plans) in order of first appearance;
    with ``ids=IDS_BY_NAME`` (``plan-diff``) by name, then by position among the ids of
    that name (``a#12``, ``b#40``, ``a#13`` -> ``a#1``, ``b#1``, ``a#2``), so a small edit
    (one sort key dropped) renumbers no other attribute. Plan ids, codegen stage ids,
    statistics, file paths and locations, object hashes and RDD ids are masked; trailing
    spaces go. Like Spark's own PlanStabilitySuite, but keeping which attributes are the
    same.
    """
    if ids not in (IDS_BY_APPEARANCE, IDS_BY_NAME):
        raise ValueError(f"ids must be {IDS_BY_APPEARANCE!r} or {IDS_BY_NAME!r}, not {ids!r}")
    text = plan_text(text_or_plan, kind)
    text = _PLAN_ID.sub("plan_id=x", text)
    text = _STAGE_ID.sub(r"\1x", text)
    text = _EXPR_ID.sub(_renumber_by_name(text) if ids == IDS_BY_NAME
                        else _renumber_by_appearance(), text)
    text = _CODEGEN.sub("*(x)", text)
    text = _CODEGEN_STAGE.sub(lambda m: m.group(1) + " (x)", text)
    text = _STATS.sub("Statistics(...)", text)
    text = _LOCATION.sub(r"\1 [...]", text)
    text = _PATH.sub("<path>", text)
    text = _HASH.sub("@x", text)
    text = _RDD.sub(r"\1[x]", text)
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines()) + "\n"


def _renumber_by_appearance() -> Callable[[re.Match], str]:
    seen: dict[str, int] = {}

    def renumber(m: re.Match) -> str:
        return "#" + str(seen.setdefault(m.group(1), len(seen) + 1))

    return renumber


def _id_name(text: str, at: int) -> str:
    """The name written before the ``#`` at ``at``: ``a`` in ``(a#1 > 5)``, ``sum(x)`` in
    ``sum(x#2) AS sum(x)#3``."""
    start = at
    while start > 0 and text[start - 1] not in " \t\n[,=":
        start -= 1
    name = text[start:at]
    while name.startswith("(") and name.count("(") > name.count(")"):
        name = name[1:]
    return name


def _renumber_by_name(text: str) -> Callable[[re.Match], str]:
    """Numbers each id by its name's order among the distinct ids of that name."""
    number: dict[str, int] = {}
    per_name: dict[str, int] = {}
    for m in _EXPR_ID.finditer(text):
        if m.group(1) not in number:
            name = _id_name(text, m.start())
            per_name[name] = per_name.get(name, 0) + 1
            number[m.group(1)] = per_name[name]

    def renumber(m: re.Match) -> str:
        return "#" + str(number[m.group(1)])

    return renumber


def diff_plans(expected: str, actual: str, expected_name: str = "expected",
               actual_name: str = "actual") -> str:
    """A unified diff of two plan texts (empty when they are equal)."""
    return "".join(difflib.unified_diff(expected.splitlines(keepends=True),
                                        actual.splitlines(keepends=True),
                                        expected_name, actual_name))


class PlanSnapshotError(AssertionError):
    """A plan differs from its golden file."""


@dataclass
class SnapshotStats:
    """How many snapshots were compared and (re)written: the pytest plugin reports it."""

    checked: int = 0
    updated: int = 0
    failed: list[str] = field(default_factory=list)


def _updating() -> bool:
    return os.environ.get("SPARKEXT_UPDATE_PLANS", "") not in ("", "0")


def _caller_directory() -> Path:
    here = Path(__file__).resolve()
    for frame in inspect.stack()[1:]:
        path = Path(frame.filename).resolve()
        if path != here:
            return path.parent
    return Path.cwd()


def _spark_line_of(df) -> str:
    """The line of the Spark that planned ``df`` (its session's), else of the local pyspark."""
    session = getattr(df, "sparkSession", None)
    version = getattr(session, "version", None)
    if not isinstance(version, str):
        import pyspark

        version = pyspark.__version__
    return "{}.{}".format(*_tree.spark_line(version))


def _line_files(folder: Path, name: str) -> dict[tuple[int, int], Path]:
    """line -> its own golden file of ``name``, for the lines that have one."""
    files = {}
    default = folder / "plans" / f"{name}.txt"
    if default.exists():
        files[_tree.spark_line(DEFAULT_SPARK_LINE)] = default
    for sub in (folder / "plans").glob(f"spark*/{name}.txt"):
        try:
            files[_tree.spark_line(sub.parent.name[len("spark"):])] = sub
        except ValueError:
            continue
    return files


def golden_file(folder: str | os.PathLike, name: str,
                spark_line: str) -> tuple[Path, Path | None]:
    """``(own, used)`` for a snapshot on a Spark line: ``own`` is the line's own golden file
    (``plans/<name>.txt`` for the default line, ``plans/spark<line>/<name>.txt`` for the
    others), ``used`` the file it is checked against: its own, else the nearest older
    line's, else the default line's (None when there is none)."""
    folder, line = Path(folder), _tree.spark_line(spark_line)
    default = folder / "plans" / f"{name}.txt"
    own = default if line == _tree.spark_line(DEFAULT_SPARK_LINE) else \
        folder / "plans" / f"spark{line[0]}.{line[1]}" / f"{name}.txt"
    files = _line_files(folder, name)
    older = [v for v in files if v <= line]
    if older:
        return own, files[max(older)]
    return own, default if default.exists() else None


def assert_plan_snapshot(df, name: str, kind: str = "optimized", *,
                         directory: str | os.PathLike | None = None,
                         update: bool | None = None,
                         stats: SnapshotStats | None = None,
                         normalize: Callable[[str], str] | None = None,
                         spark_line: str | None = None) -> None:
    """Compares ``df``'s normalised plan with its golden file in ``plans/``.

    ``spark_line`` (``"3.5"``; default: the line of the Spark that planned ``df``) picks
    the file: ``plans/<name>.txt`` on the default line (:data:`DEFAULT_SPARK_LINE`),
    ``plans/spark<line>/<name>.txt`` on another, and a line without its own file is
    checked against the nearest older line's, else the default line's
    (:func:`golden_file`).

    ``directory`` is where ``plans/`` lives (default: next to the calling test file).
    ``update`` (default: ``SPARKEXT_UPDATE_PLANS``) writes the line's own golden file
    instead of comparing, unless the plan equals the file it would fall back to (then the
    line's own file is removed: it would only repeat it). A missing golden file is
    written and counted as updated. On a mismatch, ``<name>.actual.txt`` is written
    beside the line's own file and :class:`PlanSnapshotError` says what changed.
    """
    __tracebackhide__ = True  # pytest: show the diff, not this function
    if not re.fullmatch(r"[\w.\-]+", name):
        raise ValueError(f"snapshot name {name!r}: use letters, digits, '_', '-', '.'")
    folder = Path(directory) if directory is not None else _caller_directory()
    line = spark_line if spark_line is not None else _spark_line_of(df)
    own, golden = golden_file(folder, name, line)
    actual_file = own.with_name(f"{name}.actual.txt")
    text = (normalize or normalize_plan)(plan_text(df, kind))
    update = _updating() if update is None else update
    stats = stats if stats is not None else SnapshotStats()
    if update or golden is None:
        _write_golden(folder, name, line, own, text)
        actual_file.unlink(missing_ok=True)
        stats.updated += 1
        return
    stats.checked += 1
    expected = golden.read_text()
    if expected == text:
        actual_file.unlink(missing_ok=True)
        return
    actual_file.parent.mkdir(parents=True, exist_ok=True)
    actual_file.write_text(text)
    stats.failed.append(name)
    raise PlanSnapshotError(
        f"the {kind} plan of {name!r} on Spark {line} differs from {golden}:\n"
        f"{diff_plans(expected, text, str(golden), str(actual_file))}\n"
        f"If the new plan is right, rerun with --sparkext-update-plans "
        f"(or SPARKEXT_UPDATE_PLANS=1): it writes {own}.")


def _write_golden(folder: Path, name: str, line: str, own: Path, text: str) -> None:
    """Writes the line's own file, or removes it when the fallback already says ``text``
    (as Comet's plan regeneration does): a per-line file exists only where plans differ."""
    if own != folder / "plans" / f"{name}.txt":
        own.unlink(missing_ok=True)
        _, fallback = golden_file(folder, name, line)
        if fallback is not None and fallback.read_text() == text:
            return
    own.parent.mkdir(parents=True, exist_ok=True)
    own.write_text(text)
