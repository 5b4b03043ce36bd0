"""A fuzz test of the command line: every option of every subcommand gets bad values (negative,
zero, fractional, huge, infinite, NaN, text, empty), with and without --json, in-process.

Whatever the value, the tool must answer or refuse cleanly: exit code 0, 1 or 2 (never 3, a bug), no
traceback, no numpy warning; with --json, stdout is one JSON object and an error has the contract's fields
(``command``, ``error.type``, ``error.message``). Each subcommand starts from a small valid command line,
so an accepted value runs the real command quickly. The values are fixed and the order is shuffled with a
fixed seed, so a failure is reproducible: the assertion names the command line.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import random

import pytest

from roofline.apps import cli, cli_measure
from roofline.apps.cli_output import EXIT_OK, print_json
from roofline.measure.userdata import check_save_name

BAD_VALUES = ("-1", "0", "0.5", "1e30", "9" * 40, "inf", "nan", "-inf", "abc", "")

# A small valid command line per subcommand (the fuzzed option replaces its value here or is added).
BASE = {
    "step": ["--model", "llama-3-8b", "--gpu", "h100-sxm"],
    "prefill": ["--model", "llama-3-8b", "--gpu", "h100-sxm", "--prompt", "64"],
    "fit": ["--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "64"],
    "cost": ["--model", "llama-3-8b", "--gpu", "h100-sxm"],
    "list": ["gpus"],
    "serve": [
        "--model",
        "llama-3.2-1b",
        "--gpu",
        "h100-sxm",
        "--concurrency",
        "2",
        "--input",
        "32",
        "--output",
        "4",
        "--requests",
        "6",
    ],
    "plan": [
        "--model",
        "llama-3.2-1b",
        "--gpu",
        "h100-sxm",
        "--rate",
        "2",
        "--input",
        "32",
        "--output",
        "4",
        "--requests",
        "12",
        "--max-replicas",
        "3",
    ],
    "generate": [
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100-sxm",
        "--batch",
        "2",
        "--input",
        "16",
        "--output",
        "4",
    ],
    "speculate": ["--model", "llama-3-8b", "--gpu", "h100-sxm", "--draft-tokens", "2", "--acceptance", "0.5"],
    "diagnose": ["--model", "llama-3-8b", "--gpu", "h100-sxm", "--tokens-per-s", "100"],
    "calibrate": [
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100-sxm",
        "--name",
        "fuzz",
        "--point",
        "tpot=7",
        "--dry-run",
    ],
    "measure": [],
}


def options(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Every value-taking option of every subcommand: {subcommand: [option strings]}."""
    return {
        name: [a.option_strings[-1] for a in p._actions if a.option_strings and a.nargs != 0]
        for name, p in parser.commands.items()
    }


def with_value(base: list[str], option: str, value: str) -> list[str]:
    """``base`` with ``option`` set to ``value`` (replaced where base has it, else added)."""
    argv = list(base)
    if option in argv:
        argv[argv.index(option) + 1] = value
        return argv
    return [*argv, f"{option}={value}"]  # "=" so "-1" and "" reach the option as its value


def cases() -> list[tuple[str, list[str], bool]]:
    """(subcommand, argv, json) for every option × bad value, json on and off, shuffled with a fixed seed."""
    found = []
    for name, opts in options(cli.build_parser()).items():
        assert name in BASE, f"new subcommand {name!r}: give it a small valid command line in BASE"
        for option in opts:
            for value in BAD_VALUES:
                for as_json in (False, True):
                    found.append((name, [name, *with_value(BASE[name], option, value)], as_json))
    random.Random(21).shuffle(found)
    return found


def _measure_without_measuring(args) -> int:
    """``measure`` with its argument checks but no benchmark (seconds) and nothing saved."""
    if args.save is not None:
        check_save_name(args.save)
    print_json({"command": "measure"}) if args.json else print("measured")
    return EXIT_OK


def test_every_subcommand_refuses_bad_values_cleanly(monkeypatch):
    monkeypatch.setattr(cli, "build_parser", functools.cache(cli.build_parser))  # parse, do not rebuild
    monkeypatch.setattr(cli_measure, "run", _measure_without_measuring)
    all_cases = cases()
    assert len({c[0] for c in all_cases}) == len(BASE)
    refused = 0
    for name, argv, as_json in all_cases:
        full = [*argv, "--json"] if as_json else argv
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(full)
        shown = f"roofline {' '.join(full)} -> {code}\n{err.getvalue()[-600:]}"
        assert code in (0, 1, 2), shown
        assert "Traceback" not in err.getvalue() and "Warning" not in err.getvalue(), shown
        if code == 2:
            refused += 1
            assert err.getvalue().strip(), shown  # a message on stderr, always
        if as_json:
            try:
                d = json.loads(out.getvalue())  # one JSON object, even for an error
            except json.JSONDecodeError:
                pytest.fail(f"stdout is not one JSON object: {shown}\n{out.getvalue()[:300]}")
            if code == 2:
                assert d["command"] == name and set(d["error"]) >= {"type", "message"}, shown
                assert d["error"]["message"] and d["error"]["type"], shown
    assert refused > len(all_cases) / 2  # the values are bad: most are refused


def test_options_are_found_and_replaced():
    found = options(cli.build_parser())
    assert {"--batch", "--context", "--gpus", "--weights", "--engine"} <= set(found["step"])
    assert {"--rate", "--replicas", "--trace", "--slo-ttft-ms"} <= set(found["serve"])
    assert with_value(["--a", "1"], "--a", "x") == ["--a", "x"]
    assert with_value(["--a", "1"], "--b", "-1") == ["--a", "1", "--b=-1"]


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", *BASE["serve"], "--replicas", "10000000"],
        [
            "serve",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100-sxm",
            "--rate",
            "inf",
            "--input",
            "512",
            "--output",
            "128",
        ],
        ["serve", *BASE["serve"], "--slo-ttft-ms", "-5"],
        ["generate", *BASE["generate"], "--gpus", "10000001"],
    ],
    ids=["replicas", "rate-inf", "slo-negative", "generate-gpus"],
)
def test_runaway_loads_and_sizes_are_usage_errors(capsys, argv):
    """Values that would run away (millions of replicas, an infinite rate, a negative SLO, ten million
    GPUs) are a clear usage error, not a success, a traceback or a 9.8 GB process."""
    code = cli.main([*argv, "--json"])
    captured = capsys.readouterr()
    d = json.loads(captured.out)
    assert code == 2 and d["command"] == argv[0] and d["error"]["type"] == "UsageError", d
    assert captured.err.strip().splitlines()[-1].startswith(f"roofline {argv[0]}: error: argument")


def test_the_error_contract_holds_for_every_subcommand(capsys):
    """One contract for every subcommand (docs/cli.md, "Errors with --json"): an argument error is type
    UsageError with the command's name, argparse's line on stderr; a library error is one `error:` line on
    stderr, its class as the type, and nothing else on stdout without --json."""
    for name in options(cli.build_parser()):
        code = cli.main([name, "--no-such-option", "--json"])
        captured = capsys.readouterr()
        d = json.loads(captured.out)
        assert code == 2 and set(d) == {"command", "error"} and d["command"] == name, (name, d)
        assert set(d["error"]) == {"type", "message"} and d["error"]["type"] == "UsageError", (name, d)
        assert captured.err.splitlines()[-1] == f"roofline {name}: error: {d['error']['message']}", name
        if "--model" not in BASE[name]:
            continue
        argv = [name, *with_value(BASE[name], "--model", "llama-3-8x")]
        code = cli.main([*argv, "--json"])
        captured = capsys.readouterr()
        d = json.loads(captured.out)
        assert code == 2 and d["command"] == name and d["error"]["type"] == "UnknownNameError", (name, d)
        assert "llama-3-8b" in d["error"]["suggestions"], (name, d)
        assert captured.err == f"error: {d['error']['message']}\n", name  # exactly one line
        assert cli.main(argv) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err == f"error: {d['error']['message']}\n", name
