"""The Spark lines sparkext supports: one shim jar per (Spark line, Scala version).

This table is the single source of truth for both halves of the project:

- at run time, :func:`sparkext.session.jar_path` and ``python -m sparkext jar`` pick the
  row of the running pyspark (its version and the Scala of its ``scala-library`` jar);
- at build time, ``tools/build_jar.py`` (and, through it, ``build.sbt``) compiles each row
  from the common sources plus the row's per-line folders, with the row's ``-release``,
  against the jars of the row's own Spark release.

It imports nothing from sparkext or pyspark, so the build loads it by file path in an
isolated build environment where neither is installed.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Line:
    """One supported (Spark line, Scala version) and how its jar is built."""

    spark: str            #: the Spark line, "4.3"
    scala: str            #: the Scala binary version, "2.13"
    built_with: str       #: the Spark release the jar compiles against, "4.3.0"
    release: str          #: the Java release the class files target (scalac -release)
    folders: tuple[str, ...]  #: per-line source folders under jvm-shim/src/main, in order
    jars_from: str        #: where that release's jars come from: "pypi" or "maven"

    @property
    def key(self) -> str:
        return f"{self.spark}_{self.scala}"

    @property
    def jar(self) -> str:
        """The jar's file name in sparkext/jars/."""
        return f"sparkext-shim-spark{self.key}.jar"


#: Every supported line. Later folders shadow earlier ones' files of the same relative path
#: (spark-4.0/ overrides one file of spark-4.x/); jvm-shim/src/main/scala/ is always first.
#: pyspark ships Scala 2.12 only for 3.5: its Scala 2.13 jars come from Maven Central.
LINES: tuple[Line, ...] = (
    Line("3.5", "2.12", "3.5.9", "8", ("spark-3.5",), "pypi"),
    Line("3.5", "2.13", "3.5.9", "8", ("spark-3.5",), "maven"),
    Line("4.0", "2.13", "4.0.5", "17", ("spark-4.x", "spark-4.0"), "pypi"),
    Line("4.1", "2.13", "4.1.4", "17", ("spark-4.x",), "pypi"),
    Line("4.2", "2.13", "4.2.1", "17", ("spark-4.x",), "pypi"),
    Line("4.3", "2.13", "4.3.0", "17", ("spark-4.x",), "pypi"),
)


class UnsupportedSpark(ValueError):
    """No jar for this Spark / Scala; the message names the supported versions."""


def supported() -> str:
    """The supported versions, for messages: ``3.5 (Scala 2.12, 2.13), 4.0 (Scala 2.13), ...``."""
    by_line: dict[str, list[str]] = {}
    for line in LINES:
        by_line.setdefault(line.spark, []).append(line.scala)
    return ", ".join(f"{s} (Scala {', '.join(sc)})" for s, sc in by_line.items())


def spark_line(version: str) -> str:
    """``"4.3.0"`` / ``"3.5.9"`` / ``"4.1.0.dev1"`` -> ``"4.3"`` / ``"3.5"`` / ``"4.1"``."""
    m = re.match(r"(\d+)\.(\d+)", version.strip())
    if not m:
        raise UnsupportedSpark(f"cannot read a Spark version from {version!r}")
    return f"{m.group(1)}.{m.group(2)}"


def find(spark: str, scala: str | None = None) -> Line:
    """The row for a Spark version or line and a Scala binary version (default: the line's
    first, Spark's own default: 2.12 for 3.5). Raises :class:`UnsupportedSpark` otherwise."""
    line = spark_line(spark)
    rows = [r for r in LINES if r.spark == line and scala in (None, r.scala)]
    if not rows:
        what = f"Spark {spark}" + (f" with Scala {scala}" if scala else "")
        raise UnsupportedSpark(
            f"sparkext has no jar for {what}; it supports Spark {supported()}")
    return rows[0]


def scala_of(jars: Path) -> str | None:
    """The Scala binary version of a folder of Spark jars (``2.12`` for
    ``scala-library-2.12.18.jar``), or None when it holds no scala-library."""
    found = sorted(jars.glob("scala-library-2.*.jar"))
    m = re.match(r"scala-library-(2\.\d+)\.", found[-1].name) if found else None
    return m.group(1) if m else None


def by_key(key: str) -> Line:
    """The row for ``"3.5_2.12"`` (a jar's suffix)."""
    spark, _, scala = key.partition("_")
    return find(spark, scala or None)


#: What tools/build_jar.py writes into each jar: the sparkext version it was built from,
#: its Spark line, Scala and the Spark release it compiled against.
PROPERTIES = "io/sparkext/shim.properties"


def jar_info(jar: Path) -> dict[str, str]:
    """A jar's :data:`PROPERTIES` as a dict, empty when the jar is missing or has none."""
    try:
        with zipfile.ZipFile(jar) as z:
            text = z.read(PROPERTIES).decode()
    except (OSError, KeyError, zipfile.BadZipFile):
        return {}
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
