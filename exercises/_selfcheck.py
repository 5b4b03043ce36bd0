"""The self-check shared by every exercise and its starter. Not an exercise itself.

Each worked script (``exercises/NN_name.py``) lists two things:

* ``PHYSICS``: the names of the functions a learner writes in the starter;
* ``CHECKS``: rows of ``(function name, arguments, expected value, where the value comes from)``. The
  expected values are the study card's figures, worked out by hand, never computed by the code under
  test. Floats must agree within 1 %; integers, booleans and ``None`` must match exactly.

``run_checks`` calls each function on its row and prints one line per row: ``ok``, ``still to do`` (the
body still raises ``NotImplementedError``; the TODO text is the hint) or ``wrong`` (any other answer,
or any other exception). It never lets a traceback through.

A starter (``exercises/starters/NN_name.py``) holds only the physics functions. ``run_starter`` loads the
worked script of the same name, swaps the learner's functions in, runs the checks, and only when all of
them pass hands over to the worked script's command line, which then runs on the learner's code.
"""

from __future__ import annotations

import importlib.util
import math
import numbers
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

REL_TOL = 0.01  # the card rounds its figures to two or three significant digits


def load_script(path: Path | str) -> ModuleType:
    """Import a script by file path (exercise file names start with digits, so ``import`` cannot)."""
    path = Path(path).resolve()
    name = "_exercise_" + path.stem + ("_starter" if path.parent.name == "starters" else "")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _show(value) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if isinstance(value, float):
        if 1e4 <= abs(value) < 1e7:
            return f"{value:,.0f}"
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return repr(value)


def _agrees(got, expected) -> bool:
    if expected is None:
        return got is None
    if isinstance(expected, bool):
        return isinstance(got, bool) and got == expected
    if isinstance(got, bool) or not isinstance(got, numbers.Real):
        return False
    if isinstance(expected, int) or math.isinf(expected):
        return got == expected
    return math.isclose(got, expected, rel_tol=REL_TOL)


def run_checks(namespace: Mapping, checks: Sequence, *, title: str = "") -> bool:
    """Run ``checks`` against the functions in ``namespace`` and print one line each. True if all pass."""
    print(title or "Self-check against the study card's worked example:")
    todo: list[str] = []
    wrong: list[str] = []
    passed = 0
    for name, args, expected, source in checks:
        if name in todo:
            continue  # one "still to do" line per function is enough
        call = f"{name}({', '.join(_show(a) for a in args)})"
        function = namespace.get(name)
        if not callable(function):
            print(f"  still to do: {name} (define this function)")
            todo.append(name)
            continue
        try:
            got = function(*args)
        except NotImplementedError as exc:
            hint = str(exc).strip().removeprefix("TODO:").strip() or "fill in the body"
            print(f"  still to do: {name} ({hint})")
            todo.append(name)
            continue
        except Exception as exc:  # a learner's bug must read as "wrong", not as a traceback
            print(f"  wrong: {call} raised {type(exc).__name__}: {exc}")
            wrong.append(name)
            continue
        if _agrees(got, expected):
            print(f"  ok: {call} = {_show(got)}  ({source})")
            passed += 1
        else:
            print(f"  wrong: {call}: got {_show(got)}, expected about {_show(expected)}  ({source})")
            wrong.append(name)
    if not todo and not wrong:
        print(f"All {passed} checks ok.")
        return True
    parts = [f"{passed} of {len(checks)} checks ok"]
    if todo:
        parts.append("still to do: " + ", ".join(todo))
    if wrong:
        parts.append("wrong: " + ", ".join(dict.fromkeys(wrong)))
    print("; ".join(parts) + ".")
    return False


def run_starter(starter_file: Path | str, namespace: Mapping, argv: Sequence[str] | None = None) -> int:
    """Check a starter's functions; if they all pass, run the worked script's command line on them.

    Returns the exit status: 1 while any check fails, else whatever the command line returns.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    starter = Path(starter_file).resolve()
    worked = load_script(starter.parents[1] / starter.name)
    if "-h" in argv or "--help" in argv:
        return worked.main(argv)
    for name in worked.PHYSICS:
        if callable(namespace.get(name)):
            setattr(worked, name, namespace[name])
        else:
            delattr(worked, name)  # reported as "still to do: define this function"
    if not run_checks(vars(worked), worked.CHECKS):
        print(
            f"\n{starter.name} is not finished yet: fill in the function bodies marked TODO, "
            "then run it again. The calculator runs once every check says ok.",
            file=sys.stderr,
        )
        return 1
    if "--check" in argv:
        return 0
    print("\nEvery check passes. The calculator below runs on your functions:\n")
    return worked.main(argv)
