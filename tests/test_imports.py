"""The package's modules stand on their own: each imports in a fresh interpreter, and none
reaches into another module's private names (a ``_name`` belongs to its module; what
another module needs is public).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "sparkext"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = sorted(_module_name(p) for p in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_alone_in_a_fresh_interpreter(module):
    done = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"import {module} failed:\n{done.stderr}"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _reaches(tree: ast.Module, own: str) -> list[str]:
    """``from sparkext.x import _y`` and ``x._y`` (x a sparkext module imported here) in
    a module other than x. A private *module* (sparkext._tree) is the package's own: it
    may be imported, but its private names stay its own."""
    found = []
    aliases: dict[str, str] = {}  # local name -> sparkext module it is
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] == "sparkext" and node.module != own:
            for a in node.names:
                target = f"{node.module}.{a.name}"
                if (PACKAGE.parent / (target.replace(".", "/") + ".py")).exists() \
                        or (PACKAGE.parent / target.replace(".", "/")).is_dir():
                    aliases[a.asname or a.name] = target  # a module, imported by name
                elif _private(a.name):
                    found.append(f"from {node.module} import {a.name} (line {node.lineno})")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "sparkext" and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in aliases and aliases[node.value.id] != own \
                and _private(node.attr):
            found.append(f"{node.value.id}.{node.attr} (line {node.lineno})")
    return found


@pytest.mark.parametrize("module", MODULES)
def test_no_module_uses_another_module_s_private_names(module):
    path = PACKAGE.parent / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = PACKAGE.parent / module.replace(".", "/") / "__init__.py"
    assert _reaches(ast.parse(path.read_text()), module) == []


def test_the_private_name_check_sees_a_reach():
    tree = ast.parse("from sparkext import bridge\nfrom sparkext.codec import _json\n"
                     "bridge._deep_stack._lock\n")
    assert len(_reaches(tree, "sparkext.channel")) == 2
