"""The build of the wheel: setup.cfg holds the metadata; this adds the shim jars.

A wheel carries one shim jar per supported (Spark line, Scala) of sparkext/versions.py,
built by tools/build_jar.py from the sources in jvm-shim/ (the sdist carries them) against
each line's own Spark jars (cached in ~/.cache/sparkext, fetched from PyPI / Maven Central
when missing). When a jar cannot be built the build fails, naming why: a wheel without its
jars would install and then fail at the first session. An editable install
(`pip install -e .`) builds none: `make jar` builds the local line's in place.
"""

import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class build_py_with_jars(build_py):  # noqa: N801 (setuptools' command naming)
    def run(self):
        if getattr(self, "editable_mode", False):
            return super().run()
        sys.path.insert(0, str(ROOT / "tools"))
        import build_jar

        try:
            jars = build_jar.build_all(ROOT / "sparkext" / "jars", if_stale=True)
        except build_jar.BuildError as e:
            sys.exit(f"sparkext: cannot build the wheel, because a shim jar cannot be built: {e}\n"
                     "A wheel without its jars is never made. Building needs a JDK 17 "
                     "(`java` on PATH) and each line's Spark jars: cached in "
                     f"{build_jar.spark_jars.cache_root()}, or downloaded from PyPI and Maven "
                     "Central (SPARKEXT_OFFLINE=1 forbids that).")
        super().run()
        # Copied explicitly and checked: package_data's glob may have run before the jars existed.
        target = Path(self.build_lib) / "sparkext" / "jars"
        target.mkdir(parents=True, exist_ok=True)
        for jar in jars:
            self.copy_file(str(jar), str(target / jar.name))


setup(cmdclass={"build_py": build_py_with_jars})
