"""Builds the Scala shim jar offline, with the Scala compiler the pyspark wheel ships.

pyspark bundles Spark's jars, scala-compiler, scala-library and scala-reflect included,
so no download is needed: compile jvm-shim/src against every jar in pyspark/jars, then
zip the classes (sorted, fixed timestamps: the jar is reproducible).

    python tools/build_jar.py --out sparkext/jars/sparkext-shim.jar
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "jvm-shim" / "src" / "main" / "scala"
FIXED_TIME = (2020, 1, 1, 0, 0, 0)


def pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def one(jars: Path, prefix: str) -> str:
    found = sorted(glob.glob(str(jars / f"{prefix}-2.*.jar")))
    if not found:
        sys.exit(f"build_jar: no {prefix} jar in {jars}; is pyspark installed?")
    return found[-1]


def compile_sources(out_dir: Path) -> None:
    jars = pyspark_jars()
    compiler_cp = os.pathsep.join(one(jars, p) for p in
                                  ("scala-compiler", "scala-library", "scala-reflect"))
    classpath = os.pathsep.join(sorted(glob.glob(str(jars / "*.jar"))))
    sources = sorted(str(p) for p in SOURCES.rglob("*.scala"))
    cmd = ["java", "-cp", compiler_cp, "scala.tools.nsc.Main", "-usejavacp", "-deprecation",
           "-feature", "-release", "17", "-classpath", classpath, "-d", str(out_dir), *sources]
    if subprocess.run(cmd).returncode != 0:
        # The compiler has printed its errors; the command line (every jar of pyspark) would
        # only bury them.
        sys.exit(f"build_jar: the Scala compiler failed on {SOURCES} (errors above)")


def write_jar(classes: Path, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        manifest = zipfile.ZipInfo("META-INF/MANIFEST.MF", FIXED_TIME)
        z.writestr(manifest, "Manifest-Version: 1.0\r\n"
                             "Created-By: sparkext tools/build_jar.py\r\n\r\n")
        for path in sorted(classes.rglob("*.class")):
            info = zipfile.ZipInfo(path.relative_to(classes).as_posix(), FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, path.read_bytes())
    tmp.replace(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=str(ROOT / "sparkext" / "jars" / "sparkext-shim.jar"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        compile_sources(Path(d))
        write_jar(Path(d), Path(args.out))
    print(f"built {args.out}")


if __name__ == "__main__":
    main()
