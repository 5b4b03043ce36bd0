"""Write docs/api.md, the library's API reference, from its docstrings.

    uv run python tools/api_docs.py          # rewrite docs/api.md
    uv run python tools/api_docs.py --check  # exit 1 if docs/api.md is stale (the tests check the same)

One section per public module, in layer order (the core, the machinery, the course, the lessons, the apps):
the module's summary, then each public function and class defined there with its signature and the first
paragraph of its docstring. Nothing is typed by hand, so the page cannot drift from the code.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path

import roofline

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "docs" / "api.md"
LAYERS = [
    ("The public API: `import roofline as rl`", ["roofline"]),
    ("The core: tables, units, checks, the scenario",
     ["roofline.data", "roofline.assumptions", "roofline.errors", "roofline.units", "roofline.checks",
      "roofline.results", "roofline.scenario"]),
    ("The core: physics (formulas, numpy only)", ["roofline.physics"]),
    ("The core: a good engine, read from the frozen tables", ["roofline.engines"]),
    ("The machinery: calibration, serving simulator, measure lab",
     ["roofline.calibration", "roofline.sim", "roofline.measure"]),
    ("The course: figures, explorers, readouts, self-check cards", ["roofline.course"]),
    ("The lessons, one package per notebook", ["roofline.lessons"]),
    ("Apps (CLI, instructor)", ["roofline.apps"]),
]  # fmt: skip


def _modules(prefix: str) -> list[str]:
    """``prefix`` and, for a package, every public module below it, sorted."""
    module = importlib.import_module(prefix)
    names = [prefix]
    if hasattr(module, "__path__") and prefix != "roofline":
        for info in pkgutil.walk_packages(module.__path__, prefix + "."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                names.append(info.name)
    return sorted(names)


def _first_paragraph(doc: str | None) -> str:
    text = inspect.cleandoc(doc or "").split("\n\n")[0]
    return " ".join(line.strip() for line in text.splitlines())


def _signature(obj) -> str:
    if dataclasses.is_dataclass(obj):  # a result or table row: its fields, not a long constructor
        return "  # fields: " + ", ".join(f.name for f in dataclasses.fields(obj))
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(…)"
    # no memory addresses and no checkout path: the page must be the same on every machine
    return re.sub(r" at 0x[0-9a-f]+", "", sig).replace(str(ROOT), "<repo>")


def _members(module) -> list[tuple[str, object]]:
    if module.__name__ == "roofline":
        return [(name, getattr(module, name)) for name in module.__all__]
    out = []
    for name, obj in vars(module).items():
        if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        if getattr(obj, "__module__", None) == module.__name__:
            out.append((name, obj))
    return sorted(out, key=lambda item: item[0].lower())


def render() -> str:
    lines = [
        "# API reference",
        "",
        "Generated from the docstrings by `tools/api_docs.py`; do not edit by hand (a test checks it is "
        "current).",
        "Units are SI inside the library (bytes, FLOP, seconds, bytes/s, FLOP/s). Each docstring names the",
        "lesson that teaches it; the full docstrings, with examples, are one `help(...)` away.",
        "",
    ]
    for title, prefixes in LAYERS:
        lines += [f"## {title}", ""]
        for prefix in prefixes:
            for name in _modules(prefix):
                module = importlib.import_module(name)
                lines += [f"### `{name}`", "", _first_paragraph(module.__doc__), ""]
                for member, obj in _members(module):
                    kind = "class" if inspect.isclass(obj) else "def" if callable(obj) else "value"
                    if kind == "value":
                        lines.append(f"- `{member}`")
                        continue
                    where = "" if name != "roofline" else f" (from `{obj.__module__}`)"
                    lines.append(
                        f"- `{kind} {member}{_signature(obj)}`{where}: {_first_paragraph(obj.__doc__)}"
                    )
                lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUTPUT.exists() or OUTPUT.read_text() != text:
            print("docs/api.md is stale: run `uv run python tools/api_docs.py`", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    print(
        f"wrote {OUTPUT.relative_to(ROOT)} ({len(text.splitlines())} lines) for roofline {roofline.__name__}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
