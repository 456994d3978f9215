"""Builds the Scala shim jars offline: one per supported (Spark line, Scala) of
sparkext/versions.py, each compiled by its own Scala compiler against its own Spark jars.

Sources are the common folder jvm-shim/src/main/scala plus the line's per-line folders
(spark-3.5, or spark-4.x then spark-4.0, ...); a later folder's file shadows an earlier
one's file of the same relative path. The Spark jars (scala-compiler included) come from
the installed pyspark for the venv's own line, else from the cache of tools/spark_jars.py
(the line's pyspark sdist, or Maven Central for 3.5 / Scala 2.13). The jar is reproducible
(sorted entries, fixed timestamps) and carries io/sparkext/shim.properties: the sparkext
version it was built from, its Spark line and Scala, read back by the handshake at enable().

    python tools/build_jar.py                    # the installed pyspark's line (make jar)
    python tools/build_jar.py --all --if-stale   # every line, skipping fresh jars (make jars)
    python tools/build_jar.py --line 3.5_2.12    # one line
    python tools/build_jar.py --describe 4.3_2.13   # key=value lines for build.sbt
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAIN = ROOT / "jvm-shim" / "src" / "main"
JARS = ROOT / "sparkext" / "jars"
FIXED_TIME = (2020, 1, 1, 0, 0, 0)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spark_jars  # noqa: E402


class BuildError(RuntimeError):
    """A jar cannot be built; the message says why."""


def load_versions():
    """sparkext/versions.py, loaded by path: importing the package would import pyspark,
    which an isolated build environment does not have."""
    path = ROOT / "sparkext" / "versions.py"
    spec = importlib.util.spec_from_file_location("sparkext_versions", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up by name
    spec.loader.exec_module(module)
    return module


versions = load_versions()
PROPERTIES = versions.PROPERTIES


def package_version() -> str:
    text = (ROOT / "sparkext" / "__init__.py").read_text()
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)


def sources(line) -> list[Path]:
    """The line's sources: later folders shadow earlier ones' files by relative path."""
    chosen: dict[str, Path] = {}
    for folder in (MAIN / "scala", *(MAIN / f for f in line.folders)):
        for path in sorted(folder.rglob("*.scala")):
            chosen[path.relative_to(folder).as_posix()] = path
    return [chosen[k] for k in sorted(chosen)]


def installed_line():
    """The installed pyspark's line and its own jars folder."""
    try:
        import pyspark
    except ImportError as e:
        raise BuildError("no pyspark installed: name a line (--line) or use --all") from e
    jars = Path(pyspark.__file__).parent / "jars"
    try:
        return versions.find(pyspark.__version__, versions.scala_of(jars)), jars
    except versions.UnsupportedSpark as e:
        raise BuildError(str(e)) from e


def spark_jars_of(line) -> Path:
    try:
        return spark_jars.jars_dir(line)
    except spark_jars.FetchError as e:
        raise BuildError(f"cannot build the {line.key} jar: {e}") from e


def one(jars: Path, prefix: str) -> str:
    found = sorted(glob.glob(str(jars / f"{prefix}-2.*.jar")))
    if not found:
        raise BuildError(f"no {prefix} jar in {jars}")
    return found[-1]


def compile_line(line, jars: Path, out_dir: Path) -> None:
    compiler_cp = os.pathsep.join(one(jars, p) for p in
                                  ("scala-compiler", "scala-library", "scala-reflect"))
    classpath = os.pathsep.join(sorted(glob.glob(str(jars / "*.jar"))))
    cmd = ["java", "-cp", compiler_cp, "scala.tools.nsc.Main", "-usejavacp", "-deprecation",
           "-feature", "-release", line.release, "-classpath", classpath, "-d", str(out_dir),
           *map(str, sources(line))]
    try:
        failed = subprocess.run(cmd).returncode != 0
    except FileNotFoundError as e:
        raise BuildError("no `java` on PATH: the Scala compiler needs a JDK (17)") from e
    if failed:
        # The compiler has printed its errors; the command line (every Spark jar) would only
        # bury them.
        raise BuildError(f"the Scala compiler failed on the {line.key} sources (errors above)")


def properties(line) -> str:
    return (f"version={package_version()}\nspark={line.spark}\nscala={line.scala}\n"
            f"built_with={line.built_with}\n")


def write_jar(line, classes: Path, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        manifest = zipfile.ZipInfo("META-INF/MANIFEST.MF", FIXED_TIME)
        z.writestr(manifest, "Manifest-Version: 1.0\r\n"
                             "Created-By: sparkext tools/build_jar.py\r\n\r\n")
        z.writestr(zipfile.ZipInfo(PROPERTIES, FIXED_TIME), properties(line))
        for path in sorted(classes.rglob("*.class")):
            info = zipfile.ZipInfo(path.relative_to(classes).as_posix(), FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, path.read_bytes())
    tmp.replace(out)


def inputs(line) -> list[Path]:
    """What a line's jar is made from: its sources, the table and these tools."""
    return [*sources(line), Path(__file__), Path(spark_jars.__file__),
            ROOT / "sparkext" / "versions.py"]


def fresh(line, jar: Path) -> bool:
    """The jar is newer than its inputs and carries this package version."""
    if not jar.is_file():
        return False
    if any(p.stat().st_mtime > jar.stat().st_mtime for p in inputs(line)):
        return False
    try:
        with zipfile.ZipFile(jar) as z:
            return z.read(PROPERTIES).decode() == properties(line)
    except (KeyError, zipfile.BadZipFile):
        return False


def build(line, out: Path, jars: Path | None = None) -> None:
    start = time.monotonic()
    jars = jars or spark_jars_of(line)
    with tempfile.TemporaryDirectory() as d:
        compile_line(line, jars, Path(d))
        write_jar(line, Path(d), out)
    print(f"built {out} ({line.key}, against Spark {line.built_with}, "
          f"{time.monotonic() - start:.0f} s, {out.stat().st_size // 1024} KB)")


def build_all(out_dir: Path = JARS, if_stale: bool = True) -> list[Path]:
    """Every line's jar into `out_dir` (the packaging step calls this); BuildError if one fails."""
    built = []
    for line in versions.LINES:
        jar = out_dir / line.jar
        if if_stale and fresh(line, jar):
            print(f"{jar} is up to date")
        else:
            build(line, jar)
        built.append(jar)
    return built


def describe(line) -> str:
    """What build.sbt needs to build `line`, as key=value lines."""
    jars = spark_jars_of(line)
    library = Path(one(jars, "scala-library")).name
    scala_version = re.match(r"scala-library-(.+)\.jar", library).group(1)
    return "\n".join([
        f"key={line.key}", f"jar={line.jar}", f"release={line.release}",
        f"scala_version={scala_version}", f"spark_jars={jars}",
        f"sources={os.pathsep.join(str(MAIN / f) for f in ('scala', *line.folders))}",
        f"properties={properties(line).strip().replace(chr(10), ';')}",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--line", help="one line, e.g. 3.5_2.12 (default: the installed pyspark's)")
    parser.add_argument("--all", action="store_true", help="every supported line")
    parser.add_argument("--if-stale", action="store_true", help="skip a jar newer than its sources")
    parser.add_argument("--out-dir", default=str(JARS))
    parser.add_argument("--describe", metavar="LINE", help="print what build.sbt needs")
    args = parser.parse_args()
    out_dir = Path(args.out_dir)
    try:
        if args.describe:
            print(describe(versions.by_key(args.describe)))
        elif args.all:
            build_all(out_dir, args.if_stale)
        elif args.line:
            line = versions.by_key(args.line)
            if not (args.if_stale and fresh(line, out_dir / line.jar)):
                build(line, out_dir / line.jar)
        else:
            line, jars = installed_line()
            if not (args.if_stale and fresh(line, out_dir / line.jar)):
                build(line, out_dir / line.jar, jars)
    except (BuildError, versions.UnsupportedSpark) as e:
        sys.exit(f"build_jar: {e}")


if __name__ == "__main__":
    main()
