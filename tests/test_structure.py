"""The library's shape: a small numpy core, one package per lesson, the machinery beside the course and
above the core; no import cycles, no private names across modules, functions that fit in a reader's head.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import roofline as rl

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "roofline"
NOTEBOOKS = ROOT / "notebooks"

# The layers, from the bottom: what each may import from the project besides itself and the layers below.
CORE = ("roofline", "roofline.units", "roofline.errors", "roofline.checks", "roofline.results",
        "roofline.files", "roofline.tables", "roofline.data", "roofline.model_config", "roofline.assumptions",
        "roofline.pricing", "roofline.scenario",
        "roofline.physics", "roofline.engines")  # fmt: skip
MACHINERY = ("roofline.calibration", "roofline.sim", "roofline.measure")
COURSE = ("roofline.course",)
LESSONS = ("roofline.lessons",)
APPS = ("roofline.apps",)
MAY_IMPORT = {
    "core": CORE,
    "machinery": CORE + MACHINERY,
    "course": CORE + COURSE,
    "lessons": CORE + MACHINERY + COURSE + LESSONS,  # a lesson may use the machinery it teaches
    "apps": CORE + MACHINERY + APPS + ("roofline.course.course_map",),
}
CORE_LINES_MAX = 6_400
FUNCTION_LINES_MAX, PARAMETERS_MAX = 80, 10


def module_name(path: Path) -> str:
    parts = list(path.relative_to(LIB.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(LIB.rglob("*.py"))}


def layer(module: str) -> str:
    if module.startswith(LESSONS):
        return "lessons"
    if module.startswith(COURSE):
        return "course"
    if module.startswith(APPS):
        return "apps"
    if module.startswith(MACHINERY):
        return "machinery"
    return "core"


def imports(module: str) -> dict[str, list[str]]:
    """{project module imported: [the names taken from it]}, at any depth (function-level imports too)."""
    path, found = MODULES[module], {}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.setdefault(alias.name, [])
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + [base]
                ).strip(".")
            for alias in node.names:
                if f"{base}.{alias.name}" in MODULES:
                    found.setdefault(f"{base}.{alias.name}", [])
                else:
                    found.setdefault(base, []).append(alias.name)
    return {m: names for m, names in found.items() if m in MODULES and m != module}


GRAPH = {m: imports(m) for m in MODULES}


def test_no_import_cycles():
    index, low, stack, on, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                on.discard(w)
                component.append(w)
            on.discard(v)
            if component:
                cycles.append(sorted([v, *component]))

    for module in GRAPH:
        if module not in index:
            visit(module)
    assert not cycles, f"modules that import each other: {cycles}"


def test_no_private_name_is_imported_across_modules():
    found = [f"{m} imports {n} from {src}" for m, deps in GRAPH.items() for src, names in deps.items()
             for n in names if n.startswith("_")]  # fmt: skip
    assert not found, "\n".join(found)


def test_each_layer_imports_only_what_is_below_it():
    wrong = [f"{m} ({layer(m)}) imports {dep}" for m, deps in GRAPH.items() for dep in deps
             if not dep.startswith(MAY_IMPORT[layer(m)]) and dep not in ("roofline",)]  # fmt: skip
    facade = [f"{m} imports the roofline facade" for m, deps in GRAPH.items() if "roofline" in deps
              and layer(m) in ("core", "machinery") and m != "roofline"]  # fmt: skip
    assert not wrong + facade, "\n".join(wrong + facade)


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_the_core_is_small_and_loads_no_plotting_widgets_or_fitting():
    out = _run(
        "import sys, pathlib, roofline\n"
        "mods = [m for m in sys.modules if m == 'roofline' or m.startswith('roofline.')]\n"
        "print(sum(len(pathlib.Path(sys.modules[m].__file__).read_text().splitlines()) for m in mods))\n"
        "print(' '.join(m for m in ('matplotlib', 'ipywidgets', 'scipy', 'roofline.calibration',\n"
        "               'roofline.sim', 'roofline.course', 'roofline.lessons') if m in sys.modules))\n"
    )
    lines, heavy = out.splitlines()[0], out.splitlines()[1:]
    assert int(lines) <= CORE_LINES_MAX, f"import roofline loads {lines} lines of the project"
    assert heavy == [""] or not heavy, f"import roofline loads {heavy}"
    assert "engines" in dir(rl) and rl.engines.decode_step_times  # a good engine is part of the core


def test_the_machinery_loads_no_plotting_or_widgets():
    modules = [m for m in MODULES if layer(m) == "machinery" and not m.endswith("accelerator")]
    modules += ["roofline.apps.cli", "roofline.course.course_map"]
    out = _run(f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
               "print(' '.join(m for m in ('matplotlib', 'ipywidgets') if m in sys.modules))")  # fmt: skip
    assert out.strip() == "", f"the machinery loads {out.strip()}"


def test_a_lessons_numbers_never_import_plotting_or_widgets():
    offenders = []
    for module, path in MODULES.items():
        if layer(module) == "lessons" and path.stem in ("numbers", "cards"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                bad = [n for n in names if n.split(".")[0] in ("matplotlib", "ipywidgets", "IPython")
                       or n.endswith((".lab", ".widgets", ".figures"))
                       or n == "roofline.lessons"]  # fmt: skip
                offenders += [f"{module} imports {n}" for n in bad]
    assert not offenders, "\n".join(offenders)


def lesson_of(notebook: Path) -> str:
    return notebook.stem.split("_", 1)[1] if notebook.stem[:2].isdigit() else notebook.stem


def test_every_notebook_has_its_lesson_package():
    missing = [nb.name for nb in NOTEBOOKS.glob("*.ipynb") if not (LIB / "lessons" / lesson_of(nb)).is_dir()]
    assert not missing, missing


def _project_modules_named(source: str) -> set[str]:
    named = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            named |= {a.name for a in node.names if a.name.startswith("roofline")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("roofline"):
            subs = {f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in MODULES}
            named |= subs or {node.module}
    return named


@pytest.mark.parametrize("notebook", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_a_notebook_imports_the_core_and_its_lesson_in_its_first_cell(notebook):
    cells = [c["source"] for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
    cells = ["".join(c) if isinstance(c, list) else c for c in cells]
    named = _project_modules_named(cells[0])
    assert f"roofline.lessons.{lesson_of(notebook)}" in named, named
    if notebook.stem[:2].isdigit():  # a card lesson: the core, its lesson, the display units
        assert len(named) <= 3, named
    for source in cells[1:]:
        assert not _project_modules_named(source), (notebook.name, source[:80])
        assert not re.search(r"\broofline\.(\w+\.)*_\w|\blesson\._\w", source), (notebook.name, source[:80])


def _functions():
    for module, path in MODULES.items():
        text = path.read_text().splitlines()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                body = node.body
                start = body[0].lineno
                if isinstance(body[0], ast.Expr) and isinstance(
                    getattr(body[0], "value", None), ast.Constant
                ):
                    start = body[1].lineno if len(body) > 1 else body[0].end_lineno + 1
                code = [line for line in text[start - 1 : node.end_lineno] if line.strip()
                        and not line.strip().startswith("#")]  # fmt: skip
                a = node.args
                params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *([a.vararg] if a.vararg else [])]
                params = [p for p in params if p.arg not in ("self", "cls")]
                yield f"{module}.{node.name}", len(code), len(params)


def test_functions_fit_in_a_readers_head():
    long = [f"{name}: {n} lines" for name, n, _ in _functions() if n > FUNCTION_LINES_MAX]
    wide = [f"{name}: {p} parameters" for name, _, p in _functions() if p > PARAMETERS_MAX]
    assert not long + wide, "\n".join(long + wide)


def _readme_api_names() -> set[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- api:start -->", 1)[1].split("<!-- api:end -->", 1)[0]
    return set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", block))


def test_public_api_is_written_down_and_matches_the_readme():
    assert len(rl.__all__) == len(set(rl.__all__))
    assert all(hasattr(rl, name) for name in rl.__all__)
    assert "Scenario" in rl.__all__
    assert _readme_api_names() == set(rl.__all__)


def test_every_lesson_a_docstring_names_exists():
    notebooks = {p.stem for p in NOTEBOOKS.glob("*.ipynb")}
    numbers = {name.split("_", 1)[0] for name in notebooks if name[:2].isdigit()}
    missing = []
    for path in LIB.rglob("*.py"):
        text = path.read_text()
        for match in re.finditer(r"notebooks/([\w]+)\.ipynb", text):
            if match.group(1) not in notebooks:
                missing.append(f"{path.relative_to(ROOT)}: notebooks/{match.group(1)}.ipynb")
        for match in re.finditer(r"Taught in lessons? ((?:\d\d(?:, | and |/|–|-)?)+)", text):
            missing += [f"{path.relative_to(ROOT)}: lesson {n}" for n in re.findall(r"\d\d", match.group(1))
                        if n not in numbers]  # fmt: skip
    assert not missing, "docstrings name lessons that do not exist:\n" + "\n".join(missing)


def test_every_module_has_a_docstring_and_no_history():
    undocumented = [m for m, p in MODULES.items() if not ast.get_docstring(ast.parse(p.read_text()))]
    history = [f"{m}: {h}" for m, p in MODULES.items()
               for h in re.findall(r"\b(?:issue|round) \d+\b", p.read_text(), re.I)]  # fmt: skip
    assert not undocumented + history, "\n".join(undocumented + history)


def test_api_reference_is_current():
    spec = importlib.util.spec_from_file_location("api_docs", ROOT / "tools" / "api_docs.py")
    api_docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(api_docs)
    stale = (ROOT / "docs" / "api.md").read_text() != api_docs.render()
    assert not stale, "docs/api.md is stale: run `uv run python tools/api_docs.py`"


def test_every_assumption_names_code_that_uses_it():
    """Each ``used_by`` of data/assumptions.toml starts with modules or functions of the library that exist
    (``physics.memory``, ``pricing.owned_usd_per_hour``): a rename that forgets the table is caught here."""
    table = tomllib.loads((ROOT / "data" / "assumptions.toml").read_text())
    stale = []
    for row in table["assumption"]:
        for entry in row["used_by"].split(","):
            name = re.match(r"\s*([a-z_][\w.]*)", entry)
            if not name or "." not in name.group(1):
                continue  # a command or a notebook, not a module path
            parts = ("roofline." + name.group(1)).split(".")
            stale += [f"{row['id']}: {name.group(1)}"] if not _resolves(parts) else []
    assert not stale, stale


def _resolves(parts: list[str]) -> bool:
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False
