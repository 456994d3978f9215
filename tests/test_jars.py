"""One shim jar per supported Spark line: which jar a pyspark gets, what a jar says about
itself, how the build chooses sources and when it rebuilds, and that a wheel build without
jars fails instead of making a jar-less wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import sparkext
from sparkext import session, versions
from sparkext.session import SparkextError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import build_jar  # noqa: E402


@pytest.mark.parametrize("spark,scala,jar", [
    ("3.5.9", "2.12", "sparkext-shim-spark3.5_2.12.jar"),
    ("3.5.0", "2.13", "sparkext-shim-spark3.5_2.13.jar"),
    ("3.5", None, "sparkext-shim-spark3.5_2.12.jar"),  # Spark 3.5's default Scala
    ("4.0.5", "2.13", "sparkext-shim-spark4.0_2.13.jar"),
    ("4.1.4", None, "sparkext-shim-spark4.1_2.13.jar"),
    ("4.2.0", "2.13", "sparkext-shim-spark4.2_2.13.jar"),
    ("4.3.0", "2.13", "sparkext-shim-spark4.3_2.13.jar"),
    ("4.1.0.dev1", None, "sparkext-shim-spark4.1_2.13.jar"),
])
def test_each_supported_spark_and_scala_gets_its_lines_jar(spark, scala, jar):
    assert versions.find(spark, scala).jar == jar


@pytest.mark.parametrize("spark,scala", [("3.4.3", None), ("4.4.0", None), ("2.4.8", "2.11"),
                                         ("4.3.0", "2.12"), ("3.5.9", "3")])
def test_an_unsupported_spark_is_one_error_naming_the_supported_versions(spark, scala):
    with pytest.raises(versions.UnsupportedSpark) as e:
        versions.find(spark, scala)
    assert str(e.value).endswith("it supports Spark 3.5 (Scala 2.12, 2.13), 4.0 (Scala 2.13), "
                                 "4.1 (Scala 2.13), 4.2 (Scala 2.13), 4.3 (Scala 2.13)")


@pytest.fixture
def all_jars(tmp_path, monkeypatch):
    """A jars folder holding a (placeholder) jar for every line."""
    for line in versions.LINES:
        (tmp_path / line.jar).write_bytes(b"")
    monkeypatch.setattr(session, "JARS_DIR", tmp_path)
    return tmp_path


def test_jar_path_picks_the_local_pysparks_line(all_jars, monkeypatch):
    monkeypatch.setattr(session, "local_spark", lambda: ("3.5.9", "2.12"))
    assert sparkext.jar_path() == str(all_jars / "sparkext-shim-spark3.5_2.12.jar")
    monkeypatch.setattr(session, "local_spark", lambda: ("4.0.5", "2.13"))
    assert sparkext.jar_path() == str(all_jars / "sparkext-shim-spark4.0_2.13.jar")
    monkeypatch.setattr(session, "local_spark", lambda: ("4.4.0", "2.13"))
    with pytest.raises(SparkextError,
                       match=r"no jar for Spark 4\.4\.0 with Scala 2\.13; it supports Spark 3\.5"):
        sparkext.jar_path()


def test_jar_path_for_another_clusters_spark(all_jars):
    assert sparkext.jar_path("3.5", "2.13") == str(all_jars / "sparkext-shim-spark3.5_2.13.jar")
    assert sparkext.jar_path("4.2.1") == str(all_jars / "sparkext-shim-spark4.2_2.13.jar")


def test_configure_adds_the_local_lines_jar(all_jars, monkeypatch):
    from pyspark.sql import SparkSession

    monkeypatch.setattr(session, "local_spark", lambda: ("4.1.4", "2.13"))
    builder = sparkext.configure(SparkSession.Builder())
    assert builder._options["spark.jars"].endswith("sparkext-shim-spark4.1_2.13.jar")


def test_a_missing_jar_names_what_this_copy_carries(tmp_path, monkeypatch):
    (tmp_path / "sparkext-shim-spark4.3_2.13.jar").write_bytes(b"")
    monkeypatch.setattr(session, "JARS_DIR", tmp_path)
    with pytest.raises(SparkextError, match=r"Spark 3\.5 / Scala 2\.12 is missing .*carries: "
                                            r"sparkext-shim-spark4\.3_2\.13\.jar"):
        sparkext.jar_path("3.5.9", "2.12")


def test_the_local_pyspark_is_found_with_its_scala():
    import pyspark

    spark, scala = session.local_spark()
    assert spark == pyspark.__version__
    assert scala == versions.find(spark).scala


def test_the_local_jar_says_what_it_was_built_from():
    line = versions.find(*session.local_spark())
    assert versions.jar_info(Path(sparkext.jar_path())) == {
        "version": sparkext.__version__, "spark": line.spark, "scala": line.scala,
        "built_with": line.built_with}


def run(*args, env=None, timeout=600):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def test_python_m_sparkext_jar_for_a_cluster_and_for_an_unsupported_spark():
    out = run("-m", "sparkext", "jar", "--spark", "4.3", "--scala", "2.13")
    assert out.returncode == 0 and out.stdout.strip() == sparkext.jar_path("4.3", "2.13")
    out = run("-m", "sparkext", "jar", "--spark", "3.4")
    assert out.returncode == 1
    assert ("sparkext has no jar for Spark 3.4; it supports Spark 3.5 (Scala 2.12, 2.13)"
            in out.stderr)


def test_python_m_sparkext_version_names_the_package_the_jars_and_the_spark():
    import pyspark

    out = run("-m", "sparkext", "--version")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.startswith(f"sparkext {sparkext.__version__}\n")
    for line in versions.LINES:
        assert f"jar for Spark {line.spark} / Scala {line.scala}: " in text
    local = versions.find(*session.local_spark())
    assert (f"jar for Spark {local.spark} / Scala {local.scala}: built from sparkext "
            f"{sparkext.__version__}") in text
    assert (f"Spark here: pyspark {pyspark.__version__} (Scala {local.scala}), "
            f"uses {local.jar}") in text


def test_a_line_compiles_the_common_sources_and_its_folders_later_ones_shadowing():
    names = {p.relative_to(ROOT / "jvm-shim" / "src" / "main").as_posix()
             for p in build_jar.sources(versions.by_key("4.0_2.13"))}
    assert "spark-4.0/io/sparkext/shims/TimeShim.scala" in names
    assert "spark-4.x/io/sparkext/shims/TimeShim.scala" not in names
    assert "spark-4.x/io/sparkext/shims/SparkShim.scala" in names
    assert "scala/io/sparkext/PlanCodec.scala" in names
    assert not any(n.startswith("spark-3.5/") for n in names)
    names35 = {p.name for p in build_jar.sources(versions.by_key("3.5_2.12"))}
    assert {"SparkShim.scala", "LiteralShim.scala", "NetShim.scala"} <= names35
    assert "TimeShim.scala" not in names35


def test_a_jar_is_rebuilt_when_a_source_is_newer_or_it_comes_from_another_version(tmp_path):
    line = versions.by_key("4.3_2.13")
    jar = tmp_path / line.jar
    assert not build_jar.fresh(line, jar)
    build_jar.write_jar(line, tmp_path / "no-classes", jar)
    newest = max(p.stat().st_mtime for p in build_jar.inputs(line))
    os.utime(jar, (newest + 10, newest + 10))
    assert build_jar.fresh(line, jar)
    os.utime(jar, (newest - 10, newest - 10))
    assert not build_jar.fresh(line, jar)
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr(versions.PROPERTIES, build_jar.properties(line).replace("version=", "version=0"))
    os.utime(jar, (newest + 10, newest + 10))
    assert not build_jar.fresh(line, jar)


def copy_of_the_tree(into: Path) -> Path:
    """What a checkout (or the sdist) holds, without any built jar."""
    tree = into / "tree"
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for name in listed:
        if (ROOT / name).is_file() and not name.endswith(".jar"):
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
    return tree


def test_a_wheel_build_that_cannot_build_the_jars_fails_and_makes_no_wheel(tmp_path):
    """No cached Spark jars and no downloads allowed: the build must stop, say why, and
    leave no wheel (before, it printed "Successfully built" and made a jar-less one)."""
    tree = copy_of_the_tree(tmp_path)
    out = run("-m", "build", "--wheel", "--no-isolation", "--outdir", tmp_path / "dist", tree,
              env={"SPARKEXT_CACHE": str(tmp_path / "empty-cache"), "SPARKEXT_OFFLINE": "1"})
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "cannot build the wheel, because a shim jar cannot be built" in text
    assert "SPARKEXT_OFFLINE forbids downloading them" in text
    assert not list((tmp_path / "dist").glob("*.whl"))


@pytest.mark.slow
def test_python_m_build_makes_an_sdist_with_the_sources_and_a_wheel_with_every_jar(tmp_path):
    """The standard build, isolated: sdist, then the wheel from the sdist (which compiles
    every line's jar; minutes)."""
    out = run("-m", "build", "--outdir", tmp_path, ROOT, timeout=3600)
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    sdist = next(tmp_path.glob("sparkext-*.tar.gz"))
    names = {n.split("/", 1)[1] for n in tarfile.open(sdist).getnames() if "/" in n}
    for line in versions.LINES:
        assert {p.relative_to(ROOT).as_posix() for p in build_jar.sources(line)} <= names
    assert {"tools/build_jar.py", "tools/spark_jars.py", "sparkext/versions.py", "setup.py",
            "build.sbt"} <= names
    assert not any(n.endswith(".jar") for n in names)
    wheel = next(tmp_path.glob("sparkext-*.whl"))
    carried = {n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".jar")}
    assert carried == {f"sparkext/jars/{line.jar}" for line in versions.LINES}
