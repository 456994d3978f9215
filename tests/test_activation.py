"""sparkext outside this test session: under spark-submit, and installed from its wheel
into a fresh virtualenv. Each starts its own JVM."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

import sparkext

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def run(cmd, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable, **kw.pop("env", {})}
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600,
                          env=env, **kw)


def test_python_jar_prints_the_bundled_jar():
    out = run([sys.executable, "-m", "sparkext", "jar"])
    assert out.returncode == 0 and out.stdout.strip() == sparkext.jar_path()


@pytest.mark.spark  # a Spark of its own (a child process)
def test_spark_submit_with_jars_and_the_extension_conf_runs_python_rules():
    out = run([BIN / "spark-submit", "--master", "local[1]", "--conf", "spark.ui.enabled=false",
               "--jars", sparkext.jar_path(),
               "--conf", f"spark.sql.extensions={sparkext.EXTENSION_CLASS}",
               ROOT / "examples" / "spark_submit_app.py"])
    assert out.returncode == 0, out.stderr[-4000:]
    expected_sum = sum(2 * i for i in range(1000) if i % 7 == 0)
    assert f"sparkext-submit: top=Project accepted=1 sum={expected_sum}" in out.stdout


APP = textwrap.dedent("""
    import sparkext
    from pyspark.sql import SparkSession
    from sparkext.plan import Filter

    @sparkext.rule(matches=(Filter,))
    def drop_always_true_filters(plan):
        from sparkext.expressions import TRUE
        return plan.transform_up(
            lambda n: n.child if isinstance(n, Filter) and n.condition == TRUE else n)

    builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    spark = sparkext.configure(builder).getOrCreate()
    spark.conf.set("spark.sparkext.strict", "true")
    spark.conf.set("spark.sql.optimizer.excludedRules",
                   "org.apache.spark.sql.catalyst.optimizer.PruneFilters")
    sparkext.enable(spark, [drop_always_true_filters], builtin=False)
    df = spark.range(10).where("true")
    top = df._jdf.queryExecution().optimizedPlan().getClass().getSimpleName()
    print("from", sparkext.__file__, "jar", sparkext.jar_path())
    print("top", top, "rows", df.count(), "rewrites", sparkext.metrics(spark)["accepted"] > 0)
""")


@pytest.mark.spark  # a Spark of its own (a child process)
@pytest.mark.slow  # the wheel carries every Spark line's jar: building them takes minutes
def test_the_wheel_carries_the_jar_and_runs_a_rule_in_a_fresh_virtualenv(tmp_path):
    built = run([sys.executable, "-m", "build", "--wheel", "--no-isolation",
                 "--outdir", tmp_path / "dist", ROOT])
    assert built.returncode == 0, built.stderr[-4000:]
    wheel = next((tmp_path / "dist").glob("sparkext-*.whl"))
    assert f"sparkext/jars/{Path(sparkext.jar_path()).name}" in zipfile.ZipFile(wheel).namelist()

    venv = tmp_path / "venv"
    assert run([sys.executable, "-m", "venv", venv]).returncode == 0
    python = venv / "bin" / "python"
    installed = run([python, "-m", "pip", "install", "--no-deps", "--no-index", wheel])
    assert installed.returncode == 0, installed.stderr[-4000:]
    # pyspark itself comes from this environment rather than a second 400 MB download; a
    # plain path entry, so this environment's editable sparkext is not visible there.
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    Path(site.stdout.strip(), "pyspark_from_dev.pth").write_text(sysconfig.get_paths()["purelib"])

    app = tmp_path / "app.py"
    app.write_text(APP)
    out = run([python, app], cwd=tmp_path, env={"PYSPARK_PYTHON": str(python),
                                                "PYSPARK_DRIVER_PYTHON": str(python)})
    assert out.returncode == 0, out.stderr[-4000:]
    assert f"from {venv}" in out.stdout and f"jar {venv}" in out.stdout
    assert "top Range rows 10 rewrites True" in out.stdout
