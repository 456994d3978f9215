"""Runs sbt without an installed sbt: fetches sbt's launcher from Maven Central into
.cache/ and starts it with the given arguments (``python tools/sbt.py package``)."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "sbt"
LAUNCHER_VERSION = "1.12.14"
URL = ("https://repo1.maven.org/maven2/org/scala-sbt/sbt-launch/"
       f"{LAUNCHER_VERSION}/sbt-launch-{LAUNCHER_VERSION}.jar")


def launcher() -> Path:
    jar = CACHE / f"sbt-launch-{LAUNCHER_VERSION}.jar"
    if not jar.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = jar.with_suffix(".part")
        with urllib.request.urlopen(URL, timeout=120) as r, open(tmp, "wb") as f:
            f.write(r.read())
        tmp.replace(jar)
    return jar


def main() -> int:
    cmd = ["java", "-Xmx2g", f"-Dsbt.boot.directory={CACHE / 'boot'}",
           f"-Dsbt.global.base={CACHE / 'global'}", f"-Dsbt.ivy.home={CACHE / 'ivy2'}",
           "-Dsbt.server.forcestart=false", "-Dsbt.supershell=false", "-Dsbt.log.noformat=true",
           "-Dsbt.batch=true",
           # -Dkey=value (-DsparkLine=3.5): system properties for build.sbt, as sbt's script.
           *(a for a in sys.argv[1:] if a.startswith("-D")),
           "-jar", str(launcher()), *(a for a in sys.argv[1:] if not a.startswith("-D"))]
    env = {**os.environ, "COURSIER_CACHE": str(CACHE / "coursier")}
    return subprocess.call(cmd, cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
