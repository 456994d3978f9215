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


# -- the floors -------------------------------------------------------------------------
#
# Lowest first. A module imports (at its top or inside a function) only from its own floor
# and those below: the analyses stand on the mirror and the predicate vocabulary, the rules
# on the analyses and the optimizer, the rest (codec, bridge, session, guards, testing...)
# on all of them. ``sparkext`` itself (the package's __init__) is the API, above them all.
FLOORS: list[tuple[str, tuple[str, ...]]] = [
    ("the mirror and its vocabulary", (
        "sparkext._tree", "sparkext.kinds", "sparkext.types", "sparkext.versions",
        "sparkext.catalyst_names", "sparkext.context", "sparkext.timezones", "sparkext.wire",
        "sparkext.expressions", "sparkext.plan", "sparkext.facts", "sparkext.joins",
        "sparkext.predicates")),
    ("the analyses", ("sparkext.analysis",)),
    ("the optimizer", ("sparkext.optimizer",)),
    ("the rules", ("sparkext.rules",)),
]


def _floor(module: str) -> int | None:
    """The floor of a sparkext module (a package's name covers its modules); the top floor
    for any other module of the package; None for the package itself."""
    if module == "sparkext":
        return None
    for i, (_, names) in enumerate(FLOORS):
        if any(module == n or module.startswith(n + ".") for n in names):
            return i
    return len(FLOORS)


def _imported(tree: ast.Module) -> list[tuple[str, int]]:
    """Every sparkext module ``tree`` imports, anywhere in it, with its line (``from
    sparkext.x import y`` names sparkext.x.y when that is a module)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] == "sparkext":
            for a in node.names:
                target = f"{node.module}.{a.name}"
                module = target if (PACKAGE.parent / (target.replace(".", "/") + ".py")).exists() \
                    or (PACKAGE.parent / target.replace(".", "/")).is_dir() else node.module
                found.append((module, node.lineno))
        elif isinstance(node, ast.Import):
            found.extend((a.name, node.lineno) for a in node.names
                         if a.name.split(".")[0] == "sparkext")
    return found


def _runs_back_up(module: str, tree: ast.Module) -> list[str]:
    own = _floor(module)
    if own is None:
        return []
    return [f"{module} imports {m} (line {line}): {FLOORS[own][0] if own < len(FLOORS) else 'top'}"
            f" -> {FLOORS[f][0] if f < len(FLOORS) else 'the top floor'}"
            for m, line in _imported(tree) if (f := _floor(m)) is not None and f > own]


@pytest.mark.parametrize("module", MODULES)
def test_no_import_runs_back_up_a_floor(module):
    path = PACKAGE.parent / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = PACKAGE.parent / module.replace(".", "/") / "__init__.py"
    assert _runs_back_up(module, ast.parse(path.read_text())) == []


def test_the_floor_check_sees_an_analysis_importing_a_rule():
    tree = ast.parse("def f():\n    from sparkext.rules.prune_columns import prune_columns\n")
    assert len(_runs_back_up("sparkext.analysis.ordering", tree)) == 1
    assert _runs_back_up("sparkext.rules.eliminate_sorts",
                         ast.parse("from sparkext.analysis.ordering import properties\n")) == []
    assert len(_runs_back_up("sparkext.plan",
                             ast.parse("from sparkext.analysis import uniqueness\n"))) == 1
