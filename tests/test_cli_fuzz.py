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
import os
import random
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from roofline import data as rl_data
from roofline.apps import cli, cli_measure
from roofline.apps.cli_output import EXIT_OK, print_json
from roofline.measure.userdata import check_save_name

ROOT = Path(__file__).resolve().parents[1]
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


# ------------------------------------------------------------------ names, points and files users write

NAME_CLASSES = {
    "project-id": "vllm",
    "project-id-capitals": "VLLM",
    "the-ideal": "ideal",
    "another-engines-alias": "trtllm",
    "a-typo-of-a-project-id": "vllm2",
    "empty": "",
    "space": "a b",
    "path": "../../evil",
    "backslash": "x\\",
    "newline-and-toml": 'a\n"]',
}


@pytest.mark.parametrize("name", NAME_CLASSES.values(), ids=NAME_CLASSES.keys())
def test_calibrate_refuses_names_that_would_break_or_capture_engines(tmp_path, monkeypatch, capsys, name):
    """A name that is not an id (a path, a space, a quote, a newline), or that is a project engine's id or
    alias (or a typo of one), is refused before the fit: nothing is saved, and every command that loads
    the engines still works afterwards."""
    monkeypatch.setenv("SPEED_PHYSICS_HOME", str(tmp_path))
    rl_data.clear_cache()
    try:
        argv = ["calibrate", *with_value(BASE["calibrate"], "--name", name)]
        argv.remove("--dry-run")
        assert cli.main([*argv, "--json"]) == 2
        d = json.loads(capsys.readouterr().out)
        assert d["error"]["type"] == "InvalidConfigurationError" and "name" in d["error"]["message"], d
        assert list(tmp_path.iterdir()) == []
        assert cli.main(["list", "engines"]) == 0
        assert cli.main(["step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--engine", "trtllm"]) == 0
        assert "tensorrt-llm" in capsys.readouterr().out
    finally:
        monkeypatch.undo()
        rl_data.clear_cache()


@pytest.mark.parametrize("field", ["tpot", "ttft", "latency", "batch", "context", "prompt", "output"])
@pytest.mark.parametrize("value", ["nan", "-nan", "inf", "-inf"])
def test_calibrate_refuses_a_non_finite_number_in_every_field_of_a_point(capsys, field, value):
    parts = {"tpot": "tpot=9", "batch": "batch=1", "context": "context=100"}
    if field in ("ttft", "latency"):
        parts = {field: f"{field}=9", "batch": "batch=1", "prompt": "prompt=100", "output": "output=8"}
    parts[field] = f"{field}={value}"
    argv = with_value(BASE["calibrate"], "--point", ",".join(parts.values()))
    assert cli.main(["calibrate", *argv, "--json"]) == 2
    d = json.loads(capsys.readouterr().out)
    assert d["error"]["type"] == "UsageError" and "not a finite number" in d["error"]["message"], d


def test_a_csv_trace_with_a_field_over_the_csv_limit_is_refused(tmp_path, capsys):
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n0," + "9" * 200_000 + ",4\n")
    argv = ["serve", "--model", "llama-3.2-1b", "--gpu", "h100-sxm", "--trace", str(trace), "--json"]
    assert cli.main(argv) == 2
    d = json.loads(capsys.readouterr().out)
    assert "field larger than field limit" in d["error"]["message"], d


def _special_files(tmp_path: Path) -> dict[str, tuple[list[str], dict]]:
    """Command lines that point a command at a device or a FIFO: as the trace, and as a table in
    $ROOFLINE_DATA_DIR (the other tables copied beside it)."""
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    serve = ["serve", "--model", "llama-3.2-1b", "--gpu", "h100-sxm", "--requests", "6", "--trace"]
    found = {"trace-device": ([*serve, "/dev/zero"], {}), "trace-fifo": ([*serve, str(fifo)], {})}
    for kind in ("device", "fifo"):
        tables = tmp_path / kind
        tables.mkdir()
        for f in (ROOT / "data").glob("*.toml"):
            shutil.copy(f, tables / f.name)
        (tables / "gpus.toml").unlink()
        os.symlink("/dev/zero", tables / "gpus.toml") if kind == "device" else os.mkfifo(tables / "gpus.toml")
        found[f"table-{kind}"] = (["list", "gpus"], {"ROOFLINE_DATA_DIR": str(tables)})
    return found


def _limit_memory() -> None:  # a read of /dev/zero stops at 3 GB instead of the machine's memory
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))


def test_devices_and_fifos_are_refused_not_read_forever(tmp_path):
    """A device or a FIFO has no size to check: as a trace or as a table it is refused at once (exit 2,
    JSON error), never read until memory runs out nor waited on forever. Run as separate processes, with
    a memory limit and a timeout, side by side."""
    runs = {}
    for label, (argv, env) in _special_files(tmp_path).items():
        runs[label] = subprocess.Popen(
            [sys.executable, "-m", "roofline.apps.cli", *argv, "--json"],
            env={**os.environ, "SPEED_PHYSICS_HOME": str(tmp_path / "home"), **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_limit_memory,
        )
    for label, proc in runs.items():
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(f"{label}: still reading after 60 s")
        assert proc.returncode == 2, f"{label}: exit {proc.returncode}\n{err[-800:]}"
        assert "not a regular file" in json.loads(out)["error"]["message"], label
