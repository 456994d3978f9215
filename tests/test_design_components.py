"""docs/design.md's component table names every module of the package and every Scala
source of the shim (issue 36: a new file gets its line, or this fails)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DESIGN = (ROOT / "docs" / "design.md").read_text()
COMPONENTS = DESIGN.split("## Components", 1)[1].split("\n## ", 1)[0]

#: The package's own modules, and the analyses' (sparkext/analysis/: one line each).
MODULES = sorted(p.relative_to(ROOT).as_posix() for p in [
    *(ROOT / "sparkext").glob("*.py"), *(ROOT / "sparkext" / "analysis").glob("*.py")]
                 if p.name not in ("__init__.py", "__main__.py"))
PACKAGES = sorted(p.relative_to(ROOT).as_posix() + "/" for p in (ROOT / "sparkext").iterdir()
                  if p.is_dir() and not p.name.startswith(("_", ".")))
SCALA = sorted({p.stem for p in (ROOT / "jvm-shim" / "src" / "main").rglob("*.scala")})


@pytest.mark.parametrize("name", MODULES + PACKAGES)
def test_every_python_module_and_package_has_its_line(name):
    assert f"`{name}`" in COMPONENTS, f"{name} is missing from docs/design.md, Components"


@pytest.mark.parametrize("stem", SCALA)
def test_every_scala_source_is_named_in_the_jvm_shims_line(stem):
    assert f"`{stem}`" in COMPONENTS, f"{stem}.scala is missing from docs/design.md, Components"
