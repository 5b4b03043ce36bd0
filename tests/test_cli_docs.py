"""docs/cli.md cannot go stale: every example whose output it shows is run and compared, and every JSON
field of every subcommand is described.

An example is a ```` ```console ```` block: lines starting ``$ roofline ...`` (or ``$ uv run roofline ...``)
are commands, the lines after each are what it prints (stderr, then stdout). A line ``...`` stands for any
number of lines (a trimmed table). Blocks that depend on this machine (``measure``) are ```` ```text ````
and not run. To refresh every shown output after a change, run ``uv run python tests/test_cli_docs.py``
and read the diff.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from roofline.apps.cli import main

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
BLOCK = re.compile(r"^```console\n(.*?)^```$", re.M | re.S)


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """The command's exit code, stdout and stderr, in-process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def printed(argv: list[str]) -> str:
    """What a command prints on a terminal: stderr, then stdout."""
    _, out, err = run_cli(argv)
    return err + out


def argv_of(command_line: str) -> list[str]:
    words = shlex.split(command_line)
    if words[:2] == ["uv", "run"]:
        words = words[2:]
    assert words[0] == "roofline", f"a console example must run roofline: {command_line!r}"
    return words[1:]


def examples(text: str) -> list[tuple[str, list[str]]]:
    """(command line, shown output lines) of every console block, in order."""
    found = []
    for block in BLOCK.findall(text):
        command, shown = None, []
        for line in block.splitlines():
            if line.startswith("$ "):
                if command is not None:
                    found.append((command, shown))
                command, shown = line[2:], []
            elif command is not None:
                shown.append(line)
        if command is not None:
            found.append((command, shown))
    return found


def matches(shown: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` lines match ``shown`` lines, where a shown ``...`` matches any number of lines."""
    shown = [s.rstrip() for s in shown]
    while shown and not shown[-1]:
        shown.pop()
    actual = [a.rstrip() for a in actual]

    def go(i: int, j: int) -> bool:
        if i == len(shown):
            return j == len(actual)
        if shown[i] == "...":
            return any(go(i + 1, k) for k in range(j, len(actual) + 1))
        return j < len(actual) and shown[i] == actual[j] and go(i + 1, j + 1)

    return go(0, 0)


def regenerate(text: str) -> str:
    """``text`` with every console example's output replaced by what the tool prints now; trimmed lines
    (``...``) are kept where the new output still matches them."""

    def block(m: re.Match) -> str:
        lines, out = m.group(1).splitlines(), []
        commands = [i for i, line in enumerate(lines) if line.startswith("$ ")]
        for n, i in enumerate(commands):
            end = commands[n + 1] if n + 1 < len(commands) else len(lines)
            shown = lines[i + 1 : end]
            gap = [] if n + 1 == len(commands) or shown[-1:] != [""] else [""]
            new = printed(argv_of(lines[i][2:])).rstrip("\n").splitlines()
            out += [lines[i], *(shown[: len(shown) - len(gap)] if matches(shown, new) else new), *gap]
        return "```console\n" + "\n".join(out) + "\n```"

    return BLOCK.sub(block, text)


EXAMPLES = examples(DOC.read_text(encoding="utf-8"))


def test_the_doc_has_examples_of_every_subcommand():
    from roofline.apps.cli import build_parser

    names = set(build_parser()._subparsers._group_actions[0].choices)
    shown = {argv_of(c)[0] for c, _ in EXAMPLES}
    assert names - {"measure"} <= shown, f"no example in docs/cli.md for {sorted(names - shown)}"


@pytest.mark.parametrize("command, shown", EXAMPLES, ids=[c[:70] for c, _ in EXAMPLES])
def test_every_example_prints_what_the_doc_shows(command, shown):
    code, out, err = run_cli(argv_of(command))
    assert code in (0, 1, 2), err
    actual = (err + out).rstrip("\n").splitlines()
    diff = "\n".join(difflib.unified_diff(shown, actual, "docs/cli.md", "now", lineterm=""))
    assert matches(shown, actual), f"docs/cli.md is stale for `{command}` (uv run python {__file__}):\n{diff}"


def test_the_matcher_can_fail():
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"]) and matches(["a", "..."], ["a"])
    assert not matches(["a", "b"], ["a", "c"]) and not matches(["a"], ["a", "b"])
    assert not matches(["a", "...", "d"], ["a", "b", "c"])


# ---------------------------------------------------------------- every JSON field described

# One or more invocations per subcommand whose JSON, together, has every field the command prints.
JSON_COMMANDS = [
    ["step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "3"],
    ["step", "--model", "llama-3-70b", "--gpu", "h100-sxm"],  # does not fit: the memory fields
    ["prefill", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--prompt", "1000"],
    ["fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "1000", "--batch", "2"],
    ["cost", "--tokens-per-s", "200", "--usd-per-hour", "3"],
    ["cost", "--model", "llama-3-8b", "--gpu", "l4"],
    ["list", "gpus"],
    ["list", "models"],
    ["list", "prices"],
    ["list", "engines"],
    ["serve", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--concurrency", "2", "--input", "64",
     "--output", "8", "--requests", "4"],
    ["plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--rate", "1", "--input", "64", "--output", "8",
     "--requests", "20"],
    ["generate", "--model", "llama-3-8b", "--gpu", "a10g", "--batch", "2", "--input", "64", "--output", "8"],
    ["speculate", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--draft-tokens", "2", "--acceptance", "0.5"],
    ["diagnose", "--model", "llama-3-8b", "--gpu", "a10g", "--tokens-per-s", "90"],
    ["diagnose", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--ttft-ms", "300", "--prompt", "1000"],
    ["diagnose", "--from", "data/benchmark_examples/vllm_bench_serve.json", "--gpu", "h100-sxm"],
    ["step", "--model", "llama-3-8b", "--gpu", "h100"],  # an error with suggestions
]  # fmt: skip


def keys(value, into: set) -> set:
    """Every key of ``value``, nested objects and lists of objects included."""
    if isinstance(value, dict):
        for k, v in value.items():
            into.add(k)
            keys(v, into)
    elif isinstance(value, list):
        for v in value[:1]:
            keys(v, into)
    return into


def documented(doc: str, key: str) -> bool:
    """``key`` appears in the doc as `key`, `parent.key` or `….key`."""
    return re.search(rf"`(?:[\w.…\[\]]*[.…])?{re.escape(key)}`", doc) is not None


@pytest.mark.parametrize("argv", JSON_COMMANDS, ids=[" ".join(a[:2]) for a in JSON_COMMANDS])
def test_every_json_field_is_documented(argv):
    doc = DOC.read_text(encoding="utf-8")
    _, out, _ = run_cli([*argv, "--json"])
    d = json.loads(out)
    if argv[0] == "list":  # one item of each table stands for all
        d = {**d, "items": d["items"][:1]}
    missing = sorted(k for k in keys(d, set()) if not documented(doc, k))
    assert not missing, f"`{' '.join(argv)} --json` fields not described in docs/cli.md: {missing}"


def test_documented_can_fail():
    assert documented("`a.b_c`", "b_c") and documented("`….ttft_s`", "ttft_s") and documented("`x`", "x")
    assert not documented("`xb_c`", "b_c") and not documented("b_c", "b_c")


if __name__ == "__main__":  # refresh the shown outputs: uv run python tests/test_cli_docs.py
    old = DOC.read_text(encoding="utf-8")
    new = regenerate(old)
    DOC.write_text(new, encoding="utf-8")
    changed = sum(a != b for a, b in zip(old.splitlines(), new.splitlines(), strict=False))
    print(f"docs/cli.md: {changed} lines changed", file=sys.stderr)
