"""The Spark jars one supported line compiles against, cached outside the tree.

Each line of ``sparkext/versions.py`` compiles against its own Spark release:

- ``pypi``: the pyspark sdist of that release (PyPI publishes pyspark as an sdist only);
  its Spark jars are under ``pyspark-X/deps/jars``. Downloaded with pip, unpacked (jars and
  bin, a SPARK_HOME-like folder) into ``<cache>/spark-X/``.
- ``maven``: Spark 3.5 for Scala 2.13, which no pyspark carries. The 19 jars that compile
  the shim (``MAVEN_35_213``) come from Maven Central into
  ``<cache>/spark-X-scala2.13-min-<hash of the set>/``, each checked against Central's SHA-1.

The cache is ``$SPARKEXT_CACHE`` or ``~/.cache/sparkext``, keyed by version; an entry is
written under a temporary name and renamed, so a half-done fetch is never used.
``SPARKEXT_OFFLINE=1`` forbids downloads: a missing entry is then an error.

    python tools/spark_jars.py 3.5_2.13      # fetch one line's jars, print their folder
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"

#: Spark 3.5.9 for Scala 2.13: the minimal set that compiles the shim (group, artifact,
#: version). kryo-shaded is needed only because scalac loads KryoSerializable; Hadoop's
#: client API and parquet-hadoop because the shim reads parquet footers (ParquetFooters.scala).
MAVEN_35_213 = (
    *(("org.apache.spark", f"spark-{m}_2.13", "3.5.9")
      for m in ("catalyst", "sql", "sql-api", "core", "unsafe", "common-utils")),
    ("com.fasterxml.jackson.core", "jackson-core", "2.15.2"),
    ("com.fasterxml.jackson.core", "jackson-databind", "2.15.2"),
    ("com.fasterxml.jackson.core", "jackson-annotations", "2.15.2"),
    ("org.slf4j", "slf4j-api", "2.0.7"),
    ("com.esotericsoftware", "kryo-shaded", "4.0.2"),
    ("org.apache.hadoop", "hadoop-client-api", "3.3.4"),
    *(("org.apache.parquet", f"parquet-{m}", "1.13.1")
      for m in ("hadoop", "column", "common", "format-structures")),
    ("org.scala-lang", "scala-library", "2.13.8"),
    ("org.scala-lang", "scala-reflect", "2.13.8"),
    ("org.scala-lang", "scala-compiler", "2.13.8"),
)


class FetchError(RuntimeError):
    """The jars of a line are not cached and cannot be fetched; the message says why."""


def cache_root() -> Path:
    return Path(os.environ.get("SPARKEXT_CACHE") or Path.home() / ".cache" / "sparkext")


def offline() -> bool:
    return os.environ.get("SPARKEXT_OFFLINE", "") not in ("", "0")


def jars_dir(line) -> Path:
    """The folder of ``line``'s Spark jars, fetching them first when they are not cached."""
    if line.jars_from == "pypi":
        home = cache_root() / f"spark-{line.built_with}"
        fetch = _fetch_pyspark
    else:
        # keyed on the set as well as the version: a set that grows gets a new folder
        key = hashlib.sha1(repr(MAVEN_35_213).encode()).hexdigest()[:8]
        home = cache_root() / f"spark-{line.built_with}-scala{line.scala}-min-{key}"
        fetch = _fetch_maven
    if not (home / "jars").is_dir():
        if offline():
            raise FetchError(f"the Spark {line.built_with} jars for Scala {line.scala} are not "
                             f"cached in {home} and SPARKEXT_OFFLINE forbids downloading them")
        home.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=home.parent, prefix=f".{home.name}.") as tmp:
            fetch(line, Path(tmp))
            os.replace(tmp, home)
            Path(tmp).mkdir()  # TemporaryDirectory removes it on exit
    return home / "jars"


def _fetch_pyspark(line, into: Path) -> None:
    version = line.built_with
    sdists = cache_root() / "wheels"
    sdist = sdists / f"pyspark-{version}.tar.gz"
    if not sdist.is_file():
        print(f"spark_jars: downloading pyspark {version} from PyPI (~450 MB)", file=sys.stderr)
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
               ":all:", f"pyspark=={version}", "-d", str(sdists)]
        if subprocess.run(cmd).returncode != 0 or not sdist.is_file():
            raise FetchError(f"could not download pyspark {version} from PyPI with pip "
                             f"(needed for the Spark {line.key} jar)")
    prefix = f"pyspark-{version}/deps/"
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            if member.name.startswith(prefix + "jars/") or member.name.startswith(prefix + "bin/"):
                if member.isfile():
                    member.name = member.name[len(prefix):]
                    tar.extract(member, into)
    if not (into / "jars").is_dir():
        raise FetchError(f"{sdist} has no {prefix}jars folder")


def _fetch_maven(line, into: Path) -> None:
    jars = into / "jars"
    jars.mkdir()
    for group, artifact, version in MAVEN_35_213:
        name = f"{artifact}-{version}.jar"
        url = f"{MAVEN_CENTRAL}/{group.replace('.', '/')}/{artifact}/{version}/{name}"
        print(f"spark_jars: downloading {url}", file=sys.stderr)
        try:
            data = urllib.request.urlopen(url, timeout=120).read()
            sha1 = urllib.request.urlopen(url + ".sha1", timeout=60).read().decode().split()[0]
        except OSError as e:
            raise FetchError(f"could not download {url} from Maven Central: {e}") from e
        if hashlib.sha1(data).hexdigest() != sha1:
            raise FetchError(f"{url}: the SHA-1 does not match Maven Central's")
        (jars / name).write_bytes(data)


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from build_jar import load_versions

    versions = load_versions()
    for key in sys.argv[1:] or [line.key for line in versions.LINES]:
        try:
            print(jars_dir(versions.by_key(key)))
        except FetchError as e:
            sys.exit(f"spark_jars: {e}")


if __name__ == "__main__":
    main()
