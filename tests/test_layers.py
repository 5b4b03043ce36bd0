"""The layers stay in order (issue 18): views (figures, HTML readouts) sit below ui (widgets), so importing
any view loads no ipywidgets; and library modules import the real modules they use, never the
``import roofline as rl`` facade, so their dependencies show in their imports."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import roofline.views

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "roofline"

# Modules allowed to import the facade while they are rewritten (empty: every module imports real modules).
# A module that no longer offends must leave the list (tested below).
FACADE_ALLOWED: set[str] = set()


def _views_modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(roofline.views.__path__, "roofline.views.")]
    assert len(names) >= 15  # the walk really found the views
    return ["roofline.views", *names]


def test_importing_every_view_loads_no_widgets():
    modules = _views_modules()
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(' '.join(m for m in ('ipywidgets', 'roofline.ui') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "", f"importing the views loads {done.stdout.strip()}"


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) for every import in a module, at any depth (function-level imports too);
    ``from roofline import ui`` counts as importing ``roofline.ui``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def test_no_view_imports_widgets_or_the_ui_layer():
    offenders = []
    for path in sorted((LIB / "views").rglob("*.py")):
        for line, module in _imported_modules(ast.parse(path.read_text())):
            if module.split(".")[0] == "ipywidgets" or module.startswith("roofline.ui"):
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not offenders, "views must not import widgets:\n" + "\n".join(offenders)


def _submodule_names() -> set[str]:
    """Names ``from roofline import X`` may bring in as real modules: the package's modules and packages."""
    return {m.name for m in pkgutil.iter_modules([str(LIB)])}


def _facade_imports(path: Path) -> list[str]:
    """Where a module imports the ``roofline`` facade: ``import roofline`` (with or without ``as rl``) or
    ``from roofline import name`` for a name that is not a submodule (``decode_step``, ``get_gpu``, …)."""
    found = []
    modules = _submodule_names()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if a.name == "roofline"]
        elif isinstance(node, ast.ImportFrom) and node.module == "roofline" and node.level == 0:
            names = [a.name for a in node.names if a.name not in modules]
            if names:
                found.append(f"line {node.lineno}: from roofline import {', '.join(names)}")
    return found


def _library_modules() -> list[Path]:
    return [
        p
        for p in sorted(LIB.rglob("*.py"))
        if p != LIB / "__init__.py" and p.relative_to(LIB).parts[0] != "apps"
    ]


def test_library_modules_import_real_modules_not_the_facade():
    offenders = {}
    for path in _library_modules():
        found = _facade_imports(path)
        if found and path.relative_to(LIB).as_posix() not in FACADE_ALLOWED:
            offenders[path.relative_to(ROOT).as_posix()] = found
    listing = "\n".join(f"{path}: {'; '.join(found)}" for path, found in offenders.items())
    assert not offenders, f"import the real modules (roofline.physics.step, roofline.data, …):\n{listing}"


def test_the_allow_list_only_holds_modules_that_still_import_the_facade():
    stale = sorted(
        name for name in FACADE_ALLOWED if not (LIB / name).exists() or not _facade_imports(LIB / name)
    )
    assert not stale, f"these modules import real modules now: remove them from FACADE_ALLOWED: {stale}"


def test_the_facade_check_finds_a_facade_import(tmp_path):
    module = tmp_path / "example.py"
    module.write_text(
        "import roofline as rl\nfrom roofline import sim, decode_step\nfrom roofline import data\n"
    )
    assert _facade_imports(module) == ["line 1: import roofline", "line 2: from roofline import decode_step"]
