"""The compatibility suite's fixtures: what every Spark line's suite shares.

tools/compat.py runs this folder once per row of its environment table, each in a
virtualenv with that row's pyspark, through ``make test-compat``. The session is the
sparkext pytest plugin's ``spark`` (sparkext configured with the jar for the running line,
strict, built-in rules on). The corpus and TPC-H data are the main suite's
(tests/corpus, tests/tpch): a pipeline that plain Spark of this line cannot run (a type or
function the line does not have) is skipped, and said so, never counted as a pass.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import sparkext
from sparkext import versions
from sparkext._tree import spark_line
from tests.conftest import ROOT, conf
from tests.corpus.pipelines import PIPELINES
from tests.rows import collect
from tests.tpch import QUERY_NAMES

#: Every SPARKEXT_COMPAT_STRIDE-th TPC-H query and corpus pipeline from the
#: SPARKEXT_COMPAT_OFFSET-th (tools/compat.py --stride; default every one): a quicker run,
#: each line a different slice, so that CI's lines between them run every case.
STRIDE = int(os.environ.get("SPARKEXT_COMPAT_STRIDE", "1"))
OFFSET = int(os.environ.get("SPARKEXT_COMPAT_OFFSET", "0"))
CASES = ([f"tpch_{q}" for q in QUERY_NAMES][OFFSET::STRIDE]
         + sorted(PIPELINES)[OFFSET::STRIDE])
PLAIN = {"spark.sparkext.enabled": "false"}


def pytest_configure(config):
    # tools/compat.py --wheel: the installed wheel is under test, not the tree's package.
    if os.environ.get("SPARKEXT_COMPAT_INSTALLED") == "1" and \
            Path(sparkext.__file__).resolve().is_relative_to(ROOT / "sparkext"):
        raise pytest.UsageError(f"sparkext was imported from the tree ({sparkext.__file__}), "
                                "not from the installed wheel")


def pytest_report_header(config):
    import pyspark

    return f"sparkext compat: pyspark {pyspark.__version__} from {pyspark.__file__}, " \
           f"sparkext from {sparkext.__file__}"


@pytest.fixture(scope="session")
def line_tables(spark):
    """The corpus tables this line can make (tests/corpus/tables.py makes the types only
    newer lines have last)."""
    from tests.corpus.tables import register

    try:
        return register(spark)
    except Exception as e:  # noqa: BLE001 (any Spark error: the line lacks a type)
        if spark_line(spark.version) >= NEWEST_LINE:
            raise
        return {"missing": str(e).splitlines()[0]}


#: The newest supported line, where the main suite runs: there every case must run.
NEWEST_LINE = spark_line(versions.LINES[-1].spark)


def cannot_run(spark, name: str, error: Exception):
    """Skips a case this line's Spark cannot run (it lacks a type or function), saying why;
    on the newest line it is a failure."""
    if spark_line(spark.version) >= NEWEST_LINE:
        raise error
    pytest.skip(f"Spark {spark.version} cannot run {name}: "
                f"{type(error).__name__}: {str(error).strip().splitlines()[0][:200]}")


@pytest.fixture(scope="session")
def frame(spark, line_tables, tpch):
    """``frame(name)``: the DataFrame of a corpus pipeline or TPC-H query (the same
    fixture as the main suite's round-trip and differential tests, which tests/compat/
    reuses); skips a case this line cannot even build."""
    def build(name: str):
        try:
            if name.startswith("tpch_"):
                return spark.sql(tpch[name[len("tpch_"):]])
            return PIPELINES[name](spark)
        except Exception as e:  # noqa: BLE001 (analysis errors of a feature the line lacks)
            cannot_run(spark, name, e)
    return build


@pytest.fixture(scope="session")
def plain_rows(spark, frame):
    """``plain_rows(name)``: the rows plain Spark gives (sparkext off), computed once; skips
    the case when this line's Spark cannot run it."""
    seen: dict = {}

    def rows(name: str):
        if name not in seen:
            try:
                with conf(spark, PLAIN):
                    seen[name] = collect(frame(name))
            except pytest.skip.Exception:
                raise
            except Exception as e:  # noqa: BLE001
                seen[name] = e
        got = seen[name]
        if isinstance(got, Exception):
            cannot_run(spark, name, got)
        return got
    return rows
