"""`roofline serve` (lib/roofline/apps/cli_serve.py): a real engine by default with the ideal beside it,
each GPU at its own price, traces, bounded options, and the JSON contract."""

import io
import json
import sys

import pytest

import roofline as rl
from roofline.apps.cli import main
from roofline.pricing import default_price

BASE = ["serve", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--input", "256", "--output", "32"]

# Fields `serve --json` has always printed: a promise to users' scripts, never removed.
PROMISED = (
    "command",
    "model_id",
    "gpu_id",
    "engine",
    "load",
    "rate_per_s",
    "concurrency",
    "num_gpus_total",
    "requests",
    "requests_completed",
    "ttft_s",
    "tpot_s",
    "e2e_s",
    "ttft_mean_s",
    "tpot_mean_s",
    "protocol",
    "statistic",
    "duration_s",
    "throughput_tokens_per_s",
    "throughput_output_tokens_per_s",
    "requests_per_s",
    "slo_ttft_s",
    "slo_tpot_s",
    "goodput_requests_per_s",
    "goodput_output_tokens_per_s",
    "busy_fraction",
    "preemptions",
    "steps",
    "kv_capacity_tokens",
    "usd_per_gpu_hour",
    "usd_per_million_output_tokens_at_slo",
    "sustainable_rate_per_s",
    "unstable",
    "truncated",
    "message",
    "input_tokens",
    "output_tokens",
    "seed",
    "chunk_tokens",
    "max_batch",
    "token_budget",
    "priority",
    "replicas",
    "pipeline_stages",
    "prefill_workers",
    "decode_workers",
    "prefix_hit_rate",
    "weight_precision",
    "kv_precision",
)


def run(capsys, *extra, base=BASE):
    code = main([*base, *extra])
    return code, capsys.readouterr()


def run_json(capsys, *extra, base=BASE):
    code, out = run(capsys, *extra, "--json", base=base)
    return code, json.loads(out.out)


def test_json_contract_keeps_every_promised_field(capsys):
    code, d = run_json(capsys, "--concurrency", "8", "--requests", "40")
    assert code == 0
    assert not [k for k in PROMISED if k not in d]
    for key in ("ttft_s", "tpot_s"):
        assert set(d[key]) == {"p50", "p90", "p99"}
        assert 0 < d[key]["p50"] <= d[key]["p90"] <= d[key]["p99"]
    assert d["requests_completed"] == 40
    assert d["throughput_tokens_per_s"] > d["throughput_output_tokens_per_s"] > 0


def test_the_json_says_how_the_requests_were_sent_and_what_the_figures_summarise(capsys):
    code, d = run_json(capsys, "--concurrency", "4", "--requests", "12")
    assert code == 0
    assert d["protocol"]["kind"] == "closed loop, burst start" and d["protocol"]["clients"] == 4
    lengths = "--dataset-name random --random-input-len 256 --random-output-len 32"
    sent_by = f"vllm bench serve {lengths} --max-concurrency 4 --num-prompts 12 --request-rate inf"
    assert d["protocol"]["as_sent_by"] == sent_by and d["range_ratio"] == 0
    assert "none dropped as warm-up" in d["statistic"]
    # 4 clients in step with equal prompts: the first of each round waits least, the mean lies in the range
    assert d["ttft_s"]["p50"] * 0.5 < d["ttft_mean_s"] <= d["ttft_s"]["p99"]
    code, d = run_json(capsys, "--rate", "5", "--requests", "20", "--range-ratio", "0.5")
    assert d["protocol"]["kind"] == "open loop, Poisson arrivals"
    ranged = f"{lengths} --random-range-ratio 0.5"
    assert d["protocol"]["as_sent_by"] == f"vllm bench serve {ranged} --request-rate 5 --num-prompts 20"


def test_ranged_lengths_spread_the_clients_that_equal_lengths_keep_in_step(capsys):
    # equal prompts and answers: the clients that started together finish together and queue again, every
    # round; lengths drawn in [0.5 L, 1.5 L] (the same mean) spread their ends, so fewer prompts queue
    _, fixed = run_json(capsys, "--concurrency", "16", "--requests", "160")
    _, ranged = run_json(capsys, "--concurrency", "16", "--requests", "160", "--range-ratio", "0.5")
    assert ranged["ttft_s"]["p50"] < fixed["ttft_s"]["p50"]


def test_a_range_ratio_of_one_or_more_is_refused(capsys):
    code, out = run(capsys, "--concurrency", "4", "--range-ratio", "1")
    assert code == 2 and "--range-ratio" in out.err


def test_one_lone_request_has_one_ttft_its_mean():
    one = rl.sim.SimConfig("llama-3-8b", "h100-sxm", concurrency=1, requests=1, input_tokens=256,
                           output_tokens=32)  # fmt: skip
    r = rl.sim.simulate(one)
    assert r.ttft_mean_s == r.ttft_s_percentiles["p50"] == r.ttft_s[0]
    assert r.tpot_mean_s == pytest.approx(r.tpot_s[0])  # (e2e - TTFT) / 31 of the one request


def test_a_real_engine_by_default_with_the_ideal_beside_it(capsys):
    code, d = run_json(capsys, "--concurrency", "8", "--requests", "40")
    assert code == 0 and d["engine"] == "vllm" == d["default_engine"]
    # the ideal ran the same load with every step at the floor: never slower than the engine
    for key in ("ttft_s", "tpot_s", "e2e_s"):
        assert d["ideal"][key]["p50"] < d[key]["p50"]
    assert d["ideal"]["throughput_output_tokens_per_s"] > d["throughput_output_tokens_per_s"]
    # the scheduler that ran is vLLM's own (its documented defaults on an H100), not the course's 256
    policy = rl.sim.engine_policy("vllm", "h100-sxm")
    assert (d["max_batch"], d["token_budget"], d["chunk_tokens"]) == (
        policy.max_sequences,
        policy.token_budget,
        policy.chunk_tokens,
    )
    # asking for the ideal gives the ideal twice
    code, i = run_json(capsys, "--concurrency", "8", "--requests", "40", "--engine", "ideal")
    assert i["engine"] == "ideal" and i["ideal"]["ttft_s"] == i["ttft_s"]


def test_same_seed_same_json_other_seed_differs(capsys):
    a = run(capsys, "--rate", "20", "--requests", "200", "--seed", "3", "--json")[1].out
    b = run(capsys, "--rate", "20", "--requests", "200", "--seed", "3", "--json")[1].out
    c = run(capsys, "--rate", "20", "--requests", "200", "--seed", "4", "--json")[1].out
    assert a == b
    assert json.loads(a)["ttft_s"] != json.loads(c)["ttft_s"]


def test_unsustainable_rate_says_so_and_exits_1(capsys):
    code, d = run_json(capsys, "--rate", "5000", "--requests", "2000")
    assert code == 1 and d["unstable"] is True
    assert "largest sustainable rate is about" in d["message"]


def test_each_gpu_at_its_own_price(capsys):
    # An L4 costs what its row says (an AWS on-demand price), not the $3 H100 example.
    l4 = default_price("l4")
    code, d = run_json(
        capsys,
        "--concurrency",
        "2",
        "--requests",
        "8",
        base=["serve", "--model", "llama-3.2-1b", "--gpu", "l4", "--input", "64", "--output", "8"],
    )
    assert code == 0 and d["usd_per_gpu_hour"] == l4.usd_per_gpu_hour != 3.0
    assert d["price_id"] == l4.id and d["price_kind"] == "rent"
    # $ per million output tokens at the SLO = price × GPUs ÷ (goodput output tokens/s × 3,600) × 10⁶
    want = l4.usd_per_gpu_hour * d["num_gpus_total"] / (d["goodput_output_tokens_per_s"] * 3600) * 1e6
    assert d["usd_per_million_output_tokens_at_slo"] == pytest.approx(want, rel=1e-9)
    # --usd-per-hour overrides; two replicas bill two GPUs
    code, d = run_json(
        capsys, "--concurrency", "2", "--requests", "8", "--usd-per-hour", "1.5", "--replicas", "2"
    )
    assert d["usd_per_gpu_hour"] == 1.5 and d["price_id"] is None and d["num_gpus_total"] == 2


def test_a_trace_file(capsys, tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n0.0,128,8\n0.1,64,16\n0.2,256,4\n")
    code, d = run_json(
        capsys, "--trace", str(trace), base=["serve", "--model", "llama-3-8b", "--gpu", "h100-sxm"]
    )
    assert code == 0 and d["load"] == "trace" and d["trace"] == str(trace)
    assert d["requests"] == d["requests_completed"] == 3
    assert d["input_tokens"] is None and d["rate_per_s"] is None
    # lengths come from the trace: giving them too is an argument error
    code, d = run_json(capsys, "--trace", str(trace))
    assert code == 2 and d["error"]["type"] == "UsageError" and "come from the trace" in d["error"]["message"]
    # a row beyond the model's 8,192-token window, and a malformed row, are refused naming what is wrong
    long = tmp_path / "long.csv"
    long.write_text("arrival_s,input_tokens,output_tokens\n0.0,8000,500\n")
    code, d = run_json(capsys, "--trace", str(long), base=BASE[:5])
    assert code == 2 and d["error"]["type"] == "ContextTooLongError" and "8,500" in d["error"]["message"]
    bad = tmp_path / "bad.csv"
    bad.write_text("arrival_s,input_tokens,output_tokens\n0.0,64,8\nsoon,64,8\n")
    code, d = run_json(capsys, "--trace", str(bad), base=BASE[:5])
    assert code == 2 and d["error"]["type"] == "InvalidConfigurationError"
    assert "row 1" in d["error"]["message"] and "arrival_s" in d["error"]["message"]


@pytest.mark.parametrize(
    "extra, kind",
    [
        (["--rate", "abc"], "UsageError"),
        ([], "UsageError"),  # neither --rate nor --concurrency nor --trace
        (["--rate", "1", "--concurrency", "2"], "UsageError"),
        (["--rate", "-1"], "UsageError"),
        (["--rate", "inf"], "UsageError"),
        (["--rate", "1", "--slo-ttft-ms", "-5"], "UsageError"),
        (["--rate", "1", "--replicas", "10000000"], "UsageError"),
        (["--rate", "1", "--requests", "0"], "UsageError"),
        (["--rate", "1", "--prefix-hit-rate", "1"], "UsageError"),
        (["--rate", "1", "--engine", "warp"], "UnknownNameError"),
        (["--rate", "1", "--pipeline-stages", "33"], "InvalidConfigurationError"),  # 32 layers
        (["--rate", "1", "--gpus", "3"], "InvalidConfigurationError"),  # 32 heads
        (["--rate", "1", "--output", "8000"], "ContextTooLongError"),  # 256 + 8,000 > 8,192
    ],
)
def test_every_failure_is_the_common_json_error(capsys, extra, kind):
    code, out = run(capsys, *extra, "--json")
    assert code == 2
    d = json.loads(out.out)
    assert d["command"] == "serve" and d["error"]["type"] == kind and d["error"]["message"]
    # the same message on stderr: argparse's form for an argument error, one `error:` line otherwise
    line = (
        f"roofline serve: error: {d['error']['message']}"
        if kind == "UsageError"
        else f"error: {d['error']['message']}"
    )
    assert line in out.err.splitlines()


def test_unknown_model_json_error_names_the_closest(capsys):
    code = main(
        [
            "serve",
            "--model",
            "llama-3-8x",
            "--gpu",
            "h100-sxm",
            "--rate",
            "1",
            "--input",
            "8",
            "--output",
            "8",
            "--json",
        ]
    )
    err = json.loads(capsys.readouterr().out)["error"]
    assert code == 2 and err["type"] == "UnknownNameError" and "llama-3-8b" in err["suggestions"]


def test_human_output_shows_the_json_numbers(capsys):
    code, d = run_json(capsys, "--concurrency", "4", "--requests", "20")
    code, out = run(capsys, "--concurrency", "4", "--requests", "20")
    assert code == 0
    ttft = next(line for line in out.out.splitlines() if "TTFT" in line)
    engine_p50 = f"{d['ttft_s']['p50'] * 1e3:,.1f}"
    ideal_p50 = f"{d['ideal']['ttft_s']['p50'] * 1e3:,.1f}"
    assert ttft.index(engine_p50) < ttft.index(ideal_p50)  # the engine's column, then the ideal's
    assert "vllm" in out.out and "ideal" in out.out and default_price("h100-sxm").id in out.out


def test_deployments_from_the_command_line(capsys):
    disagg = ("--prefill-workers", "1", "--decode-workers", "2")
    code, d = run_json(capsys, "--rate", "20", "--requests", "100", *disagg)
    assert code == 0 and d["num_gpus_total"] == 3 and d["requests_completed"] == 100
    code, d = run_json(
        capsys, "--rate", "20", "--requests", "100", "--replicas", "2", "--pipeline-stages", "2"
    )
    assert code == 0 and d["num_gpus_total"] == 4


def test_a_run_that_stopped_before_any_arrival_measured_its_whole_span(capsys):
    # 1e-9 req/s: the first request would come after ~30 years; the run stops at max_sim_time_s (3,600 s).
    code, d = run_json(capsys, "--rate", "1e-9", "--input", "512", "--output", "128", base=BASE[:5])
    assert code == 0 and d["requests_completed"] == 0 and not d["unstable"]
    assert d["duration_s"] == 3600.0


class _Terminal(io.StringIO):
    """stderr as a terminal: a progress line is written only there."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("command", ["serve", "plan"])
def test_a_long_run_shows_progress_on_a_terminal_and_nothing_under_json(monkeypatch, capsys, command):
    """serve and plan report a long simulation on stderr when it is a terminal (rewritten in place, wiped
    at the end); with --json, or when stderr is not a terminal, stderr stays empty."""
    from roofline.apps import cli_output
    from roofline.sim import loop

    monkeypatch.setattr(loop, "PROGRESS_EVENTS", 64)  # a small run reports as a long one would
    monkeypatch.setattr(cli_output, "PROGRESS_INTERVAL_S", 0.0)
    argv = [command, "--model", "llama-3.2-1b", "--gpu", "h100-sxm", "--rate", "50", "--input", "64",
            "--output", "16", "--requests", "300"]  # fmt: skip
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(argv) == 0
    shown = terminal.getvalue()
    assert f"\r{command}: simulating vllm" in shown and "steps so far" in shown, shown[:300]
    assert f"{command}: simulating the floor" in shown and shown.endswith("\r\x1b[K")
    printed = capsys.readouterr().out
    assert "simulating" not in printed
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main([*argv, "--json"]) == 0 and terminal.getvalue() == ""
    json.loads(capsys.readouterr().out)
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a pipe: no progress either
    assert main(argv) == 0 and sys.stderr.getvalue() == ""
