"""`roofline serve` (lib/roofline/apps/cli_serve.py): the JSON contract of issue 13."""

import json

import pytest

from roofline.apps.cli import main

BASE = ["serve", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--input", "256", "--output", "32"]


def run(capsys, *extra):
    code = main([*BASE, *extra])
    return code, capsys.readouterr()


def test_json_contract(capsys):
    code, out = run(capsys, "--concurrency", "8", "--requests", "40", "--json")
    assert code == 0
    d = json.loads(out.out)
    for key in ("ttft_s", "tpot_s"):
        assert set(d[key]) == {"p50", "p90", "p99"}
        assert 0 < d[key]["p50"] <= d[key]["p90"] <= d[key]["p99"]
    assert d["requests_completed"] == 40
    assert d["throughput_tokens_per_s"] > d["throughput_output_tokens_per_s"] > 0
    assert d["unstable"] is False and d["engine"] == "ideal"


def test_same_seed_same_json_other_seed_differs(capsys):
    a = run(capsys, "--rate", "20", "--requests", "200", "--seed", "3", "--json")[1].out
    b = run(capsys, "--rate", "20", "--requests", "200", "--seed", "3", "--json")[1].out
    c = run(capsys, "--rate", "20", "--requests", "200", "--seed", "4", "--json")[1].out
    assert a == b
    assert json.loads(a)["ttft_s"] != json.loads(c)["ttft_s"]


def test_unsustainable_rate_says_so_and_exits_1(capsys):
    code, out = run(capsys, "--rate", "5000", "--requests", "2000", "--json")
    d = json.loads(out.out)
    assert code == 1 and d["unstable"] is True
    assert "largest sustainable rate is about" in d["message"]


@pytest.mark.parametrize(
    "extra, kind",
    [
        (["--rate", "abc"], "usage"),
        ([], "usage"),  # neither --rate nor --concurrency
        (["--rate", "1", "--concurrency", "2"], "usage"),
        (["--rate", "-1"], "InvalidConfigurationError"),
        (["--rate", "1", "--engine", "warp"], "usage"),
        (["--rate", "1", "--requests", "0"], "InvalidConfigurationError"),
    ],
)
def test_every_json_failure_is_a_json_error(capsys, extra, kind):
    code, out = run(capsys, *extra, "--json")
    assert code == 2
    err = json.loads(out.out)["error"]
    assert err["type"] == kind and err["message"]


def test_unknown_model_json_error_names_the_closest(capsys):
    code = main(["serve", "--model", "llama-3-8x", "--gpu", "h100-sxm", "--rate", "1", "--input", "8",
                 "--output", "8", "--json"])  # fmt: skip
    err = json.loads(capsys.readouterr().out)["error"]
    assert code == 2 and err["type"] == "UnknownNameError" and "llama-3-8b" in err["message"]


def test_human_output(capsys):
    code, out = run(capsys, "--concurrency", "4", "--requests", "20")
    assert code == 0 and "TTFT" in out.out and "p99" in out.out


def test_every_serve_json_field_is_documented(capsys):
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    code, out = run(capsys, "--concurrency", "2", "--requests", "4", "--json")
    missing = sorted(k for k in json.loads(out.out) if f"`{k}`" not in doc)
    assert code == 0 and not missing, f"serve JSON fields not described in docs/cli.md: {missing}"


def test_deployments_from_the_command_line(capsys):
    disagg = ("--prefill-workers", "1", "--decode-workers", "2")
    code, out = run(capsys, "--rate", "20", "--requests", "100", *disagg, "--json")
    d = json.loads(out.out)
    assert code == 0 and d["num_gpus_total"] == 3 and d["requests_completed"] == 100
    code, out = run(
        capsys, "--rate", "20", "--requests", "100", "--replicas", "2", "--pipeline-stages", "2", "--json"
    )
    assert code == 0 and json.loads(out.out)["num_gpus_total"] == 4
