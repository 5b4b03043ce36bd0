"""The `roofline` command line: every subcommand, human and --json, against hand-derived physics.

Hand numbers used below (all from data/*.toml and the formulas in the library's docstrings):

* Llama 3 8B: 8.03e9 parameters → 16.06e9 bytes of BF16 weights. KV per token
  = 2 (K, V) × 32 layers × 8 KV heads × 128 head dim × 2 bytes = 131,072 bytes.
  Attention FLOPs per token of context = 4 × 32 layers × 32 heads × 128 = 524,288.
* Llama 3 70B: KV per token = 2 × 80 × 8 × 128 × 2 = 327,680 bytes; hidden size 8192.
* H100 SXM: 3.35e12 bytes/s, 989e12 dense BF16 FLOP/s, 80e9 bytes, NVLink 900e9 bytes/s.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from roofline.apps.cli import main

ROOT = Path(__file__).resolve().parents[1]

H100_BW = 3.35e12
H100_PEAK = 989e12
H100_MEM = 80e9
L8B_PARAMS = 8.03e9
L8B_WEIGHTS = 2 * L8B_PARAMS
L8B_KV_PER_TOKEN = 2 * 32 * 8 * 128 * 2  # 131,072 bytes
L8B_ATTN_PER_CTX = 4 * 32 * 32 * 128  # FLOP per new token per token of context
L70B_KV_PER_TOKEN = 2 * 80 * 8 * 128 * 2  # 327,680 bytes


def _strict(text):
    """Parse JSON, refusing NaN/Infinity (not JSON, though Python writes them by default)."""

    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys, *argv, expect=0):
    code, out, err = run(capsys, *argv, "--json")
    assert code == expect, err
    return _strict(out)


def approx(x, rel=0.01):
    return pytest.approx(x, rel=rel)


# ---------------------------------------------------------------- step


def test_step_batch1_is_the_decode_floor(capsys):
    d = run_json(
        capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "1", "--context", "0"
    )
    floor = L8B_WEIGHTS / H100_BW  # 4.79 ms: every weight byte read once
    assert d["step_time_s"] == approx(floor)
    assert d["memory_time_s"] == approx(floor)
    assert d["compute_time_s"] == approx(2 * L8B_PARAMS / H100_PEAK)  # 16 µs
    assert d["bytes_read"] == approx(L8B_WEIGHTS)
    assert d["kv_bytes_read"] == 0
    assert d["tokens_per_s_per_user"] == approx(1 / floor)  # ≈ 209
    assert d["tokens_per_s_total"] == approx(1 / floor)
    assert d["binding"] == "memory"
    assert d["fits"] is True
    assert d["memory_capacity_bytes"] == H100_MEM
    assert d["arithmetic_intensity_flop_per_byte"] == approx(1.0)  # 2 FLOP per 2-byte weight
    assert d["ridge_point_flop_per_byte"] == approx(989 / 3.35)  # 295
    assert (d["batch"], d["context_tokens"], d["num_gpus"]) == (1, 0, 1)


def test_step_batch32_context1000(capsys):
    d = run_json(
        capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "32", "--context", "1000"
    )
    kv = 32 * 1000 * L8B_KV_PER_TOKEN
    assert d["kv_bytes_read"] == kv  # 4,194,304,000 bytes, exact
    flops = 32 * (2 * L8B_PARAMS + L8B_ATTN_PER_CTX * 1000)  # 531 GFLOP
    assert d["flops"] == approx(flops)
    assert d["compute_time_s"] == approx(flops / H100_PEAK)
    step = (L8B_WEIGHTS + kv) / H100_BW  # 6.05 ms
    assert d["step_time_s"] == approx(step)
    assert d["tokens_per_s_per_user"] == approx(1 / step)  # ≈ 165
    assert d["tokens_per_s_total"] == approx(32 / step)  # ≈ 5,290
    assert d["memory_needed_bytes"] == approx(L8B_WEIGHTS + kv)
    assert d["binding"] == "memory"


def test_step_gpus_overhead_and_communication(capsys):
    two = run_json(capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "2")
    assert two["step_time_s"] == approx(L8B_WEIGHTS / (2 * H100_BW))  # bandwidths add up
    assert two["memory_capacity_bytes"] == 2 * H100_MEM

    slow = run_json(capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--launch-overhead-ms", "1")
    assert slow["launch_overhead_s"] == pytest.approx(1e-3)
    assert slow["step_time_s"] == approx(L8B_WEIGHTS / H100_BW + 1e-3)

    # 70B on 2 GPUs, batch 1: 2 all-reduces × 80 layers, each 10 µs latency + a ring moving
    # 2(N−1)/N × (8192 × 2 bytes) over one direction of the link (450e9 bytes/s).
    comm = run_json(capsys, "step", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--gpus", "2", "--comm")
    per_allreduce = 10e-6 + 2 * (2 - 1) / 2 * (8192 * 2) / (900e9 / 2)
    assert comm["communication_time_s"] == approx(2 * 80 * per_allreduce)  # ≈ 1.61 ms
    assert comm["include_communication"] is True
    assert comm["step_time_s"] == approx(comm["memory_time_s"] + comm["communication_time_s"])


def test_step_human(capsys):
    code, out, err = run(
        capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "32", "--context", "1000"
    )
    assert code == 0 and err == ""
    assert "llama-3-8b on 1 × h100-sxm" in out and "batch 32" in out
    for label in (
        "bytes read",
        "FLOPs",
        "memory time",
        "compute time",
        "step time",
        "binding",
        "tokens/s",
        "memory",
    ):
        assert re.search(rf"^\s+{re.escape(label)}\s", out, re.M), label
    assert "6.05 ms" in out  # (16.06e9 + 4.19e9) bytes ÷ 3.35e12 bytes/s
    assert "memory-bound" in out
    assert "165 per user" in out and "5,293 total" in out
    assert "80 GB" in out


def test_step_does_not_fit(capsys):
    code, out, err = run(capsys, "step", "--model", "llama-3-70b", "--gpu", "h100-sxm")
    assert code == 2
    assert out == ""
    assert err.startswith("error:")
    assert "does not fit" in err
    assert "141 GB" in err  # 70.55e9 parameters × 2 bytes
    assert "80 GB" in err
    assert "Traceback" not in err


def test_step_does_not_fit_json(capsys):
    d = run_json(
        capsys,
        "step",
        "--model",
        "llama-3-70b",
        "--gpu",
        "h100-sxm",
        "--batch",
        "4",
        "--context",
        "1000",
        expect=2,
    )
    assert d["fits"] is False
    assert d["step_time_s"] is None and d["tokens_per_s_total"] is None and d["binding"] is None
    need = 2 * 70.55e9 + 4 * 1000 * L70B_KV_PER_TOKEN  # 141.1 GB + 1.3 GB
    assert d["memory_needed_bytes"] == approx(need)
    assert d["memory_capacity_bytes"] == H100_MEM
    assert d["max_batch"] == 0
    assert "does not fit" in d["error"]


# ---------------------------------------------------------------- prefill


def test_prefill_without_attention(capsys):
    d = run_json(
        capsys, "prefill", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--prompt", "8000", "--no-attention"
    )
    flops = 2 * L8B_PARAMS * 8000  # 128 TFLOP
    assert d["flops"] == approx(flops)
    assert d["attention_flops"] == 0
    assert d["time_s"] == approx(flops / H100_PEAK)  # 130 ms
    assert d["binding"] == "compute"
    assert d["decode_step_time_s"] == approx(L8B_WEIGHTS / H100_BW)
    assert d["stalled_decode_steps"] == approx((flops / H100_PEAK) / (L8B_WEIGHTS / H100_BW))  # ≈ 27
    # P where 2 N P ÷ peak = 2 N ÷ bandwidth: P = peak ÷ bandwidth = 295 tokens
    assert d["compute_bound_prompt_tokens"] == approx(989 / 3.35)
    assert d["include_attention"] is False


def test_prefill_with_attention_and_two_gpus(capsys):
    d = run_json(
        capsys, "prefill", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--prompt", "8000", "--gpus", "2"
    )
    attention = L8B_ATTN_PER_CTX * 8000 * 7999 / 2  # causal: token i attends to i earlier ones, 16.8 TFLOP
    assert d["attention_flops"] == approx(attention)
    assert d["flops"] == approx(2 * L8B_PARAMS * 8000 + attention)
    assert d["time_s"] == approx((2 * L8B_PARAMS * 8000 + attention) / (2 * H100_PEAK))
    # the stall ratio does not depend on G: both times halve
    assert d["stalled_decode_steps"] == approx(
        (2 * L8B_PARAMS * 8000 + attention) / H100_PEAK / (L8B_WEIGHTS / H100_BW)
    )


def test_prefill_human(capsys):
    code, out, _ = run(
        capsys, "prefill", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--prompt", "8000", "--no-attention"
    )
    assert code == 0
    assert "compute-bound" in out
    assert "27 decode steps" in out  # 130 ms ÷ 4.79 ms
    assert "295 prompt tokens" in out
    assert "128 TFLOP" in out


def test_prefill_short_prompt_is_memory_bound(capsys):
    d = run_json(
        capsys, "prefill", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--prompt", "100", "--no-attention"
    )
    assert d["binding"] == "memory"  # 100 < 295 tokens
    assert d["time_s"] == approx((L8B_WEIGHTS + 100 * L8B_KV_PER_TOKEN) / H100_BW)


# ---------------------------------------------------------------- fit


def test_fit_largest_batch_and_a_batch_that_fits(capsys):
    d = run_json(
        capsys, "fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "4096", "--batch", "64"
    )
    per_user = 4096 * L8B_KV_PER_TOKEN  # 536,870,912 bytes
    assert d["kv_bytes_per_user"] == per_user
    assert d["max_batch"] == math.floor((H100_MEM - 16.0605e9) / per_user) == 119
    assert d["fits"] is True
    assert d["margin_users"] == 119 - 64
    assert d["memory_needed_bytes"] == approx(L8B_WEIGHTS + 64 * per_user)  # 50.4 GB
    assert d["margin_bytes"] == approx(H100_MEM - L8B_WEIGHTS - 64 * per_user)  # 29.6 GB


def test_fit_batch_too_large_exits_1(capsys):
    d = run_json(
        capsys,
        "fit",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100-sxm",
        "--context",
        "4096",
        "--batch",
        "200",
        expect=1,
    )
    assert d["fits"] is False
    assert d["margin_bytes"] == approx(H100_MEM - L8B_WEIGHTS - 200 * 4096 * L8B_KV_PER_TOKEN)  # -43.4 GB
    assert d["margin_users"] == 119 - 200

    code, out, _ = run(
        capsys, "fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "4096", "--batch", "200"
    )
    assert code == 1
    assert "does not fit" in out and "43.4 GB" in out and "81 users too many" in out


def test_fit_without_batch_and_on_two_gpus(capsys):
    d = run_json(
        capsys, "fit", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--gpus", "2", "--context", "8192"
    )
    # (160e9 − 141.1e9) ÷ (8192 × 327,680) = 18.9e9 ÷ 2.68e9 → 7 users
    assert d["max_batch"] == 7
    assert d["batch"] is None and d["fits"] is None
    assert d["memory_capacity_bytes"] == 2 * H100_MEM

    code, out, _ = run(capsys, "fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "4096")
    assert code == 0
    assert "119 users" in out


def test_fit_fp8_kv_doubles_the_batch(capsys):
    d = run_json(
        capsys, "fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "4096", "--kv", "fp8"
    )
    assert d["kv_bytes_per_token"] == L8B_KV_PER_TOKEN / 2
    assert d["max_batch"] == math.floor((H100_MEM - 16.0605e9) / (4096 * L8B_KV_PER_TOKEN / 2)) == 238


# ---------------------------------------------------------------- cost


def test_cost_from_a_throughput(capsys):
    d = run_json(capsys, "cost", "--tokens-per-s", "200", "--usd-per-hour", "3")
    assert d["usd_per_million_tokens"] == pytest.approx(3 / (200 * 3600) * 1e6, rel=1e-9)  # 4.1667
    assert d["usd_per_million_tokens"] == pytest.approx(4.1667, abs=1e-4)
    assert d["tokens_per_hour"] == 720_000
    assert d["seconds_per_million_tokens"] == 5000
    assert d["mode"] == "throughput"

    two = run_json(capsys, "cost", "--tokens-per-s", "200", "--usd-per-hour", "3", "--gpus", "2")
    assert two["usd_per_million_tokens"] == pytest.approx(2 * 4.16667, rel=1e-4)  # two GPUs billed

    code, out, _ = run(capsys, "cost", "--tokens-per-s", "200", "--usd-per-hour", "3")
    assert code == 0 and "$4.17 per million output tokens" in out


def test_cost_from_the_model(capsys):
    d = run_json(
        capsys,
        "cost",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100-sxm",
        "--batch",
        "64",
        "--context",
        "4096",
        "--usd-per-hour",
        "3",
    )
    step = (L8B_WEIGHTS + 64 * 4096 * L8B_KV_PER_TOKEN) / H100_BW  # 15.05 ms, memory-bound
    tps = 64 / step  # ≈ 4,250 tokens/s
    assert d["step_time_s"] == approx(step)
    assert d["tokens_per_s_total"] == approx(tps)
    assert d["usd_per_million_tokens"] == approx(3 / (tps * 3600) * 1e6)  # ≈ $0.196
    assert d["mode"] == "model"

    code, out, _ = run(
        capsys,
        "cost",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100-sxm",
        "--batch",
        "64",
        "--context",
        "4096",
        "--usd-per-hour",
        "3",
    )
    assert code == 0 and "$0.196 per million output tokens" in out


def test_cost_with_a_price_row(capsys):
    d = run_json(capsys, "cost", "--tokens-per-s", "200", "--price", "h100-example-3usd")
    assert d["usd_per_gpu_hour"] == 3.0 and d["price_id"] == "h100-example-3usd"
    assert d["usd_per_million_tokens"] == pytest.approx(4.1667, abs=1e-4)

    # the GPU comes from the price row when --gpu is left out
    d = run_json(capsys, "cost", "--model", "llama-3-8b", "--price", "runpod-h100-sxm-community")
    assert d["gpu_id"] == "h100-sxm"
    assert d["usd_per_million_tokens"] == approx(2.69 / (H100_BW / L8B_WEIGHTS * 3600) * 1e6)


def test_cost_argument_errors(capsys):
    code, _, err = run(
        capsys, "cost", "--tokens-per-s", "200", "--model", "llama-3-8b", "--usd-per-hour", "3"
    )
    assert code == 2 and "--tokens-per-s" in err
    code, _, err = run(capsys, "cost", "--usd-per-hour", "3")
    assert code == 2
    code, _, err = run(capsys, "cost", "--tokens-per-s", "200")  # no price
    assert code == 2
    code, _, err = run(capsys, "cost", "--tokens-per-s", "0", "--usd-per-hour", "3")
    assert code == 2 and err.startswith("error:") and "tokens_per_s" in err
    code, _, err = run(capsys, "cost", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--usd-per-hour", "3")
    assert code == 2 and "does not fit" in err


# ---------------------------------------------------------------- list


def test_list_gpus(capsys):
    d = run_json(capsys, "list", "gpus")
    gpus = {g["id"]: g for g in d["items"]}
    h100 = gpus["h100-sxm"]
    assert h100["memory_bytes"] == 80e9
    assert h100["memory_bandwidth_bytes_per_s"] == 3.35e12
    assert h100["ridge_point_flop_per_byte"]["bf16"] == approx(989 / 3.35)  # 295
    assert h100["ridge_point_flop_per_byte"]["fp8"] == approx(1979 / 3.35)  # 591
    assert "fp8" not in gpus["a100-40gb"]["ridge_point_flop_per_byte"]
    assert h100["source"].startswith("https://")

    code, out, _ = run(capsys, "list", "gpus")
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("h100-sxm "))
    assert row.split()[1:6] == ["80", "3.35", "989", "295", "900"]
    assert "https://www.nvidia.com/en-us/data-center/h100/" in row


def test_list_models(capsys):
    d = run_json(capsys, "list", "models")
    models = {m["id"]: m for m in d["items"]}
    assert models["llama-3-8b"]["parameter_count"] == approx(8.03e9, rel=1e-3)
    assert models["llama-3-8b"]["kv_bytes_per_token"] == L8B_KV_PER_TOKEN
    # Mixtral: 8 experts, 2 per token, so most of its 46.7e9 parameters sit idle for each token
    assert models["mixtral-8x7b"]["parameter_count"] == approx(46.7e9, rel=1e-2)
    assert models["mixtral-8x7b"]["active_parameter_count"] == approx(12.9e9, rel=1e-2)

    code, out, _ = run(capsys, "list", "models")
    row = next(line for line in out.splitlines() if line.startswith("llama-3-8b "))
    assert "8.03" in row and "128" in row and "config.json" in row


def test_list_prices(capsys):
    d = run_json(capsys, "list", "prices")
    prices = {p["id"]: p for p in d["items"]}
    assert prices["h100-example-3usd"]["usd_per_gpu_hour"] == 3.0
    assert all(p["source"] and p["date"] for p in d["items"])

    code, out, _ = run(capsys, "list", "prices")
    assert code == 0 and "h100-example-3usd" in out and "3.00" in out


# ---------------------------------------------------------------- errors


def test_unknown_gpu_suggests_the_closest_ids(capsys):
    code, out, err = run(capsys, "step", "--model", "llama-3-8b", "--gpu", "h100")
    assert code == 2 and out == ""
    assert err.startswith("error:") and "h100-sxm" in err and "Traceback" not in err


def test_unknown_model_and_precision(capsys):
    code, _, err = run(capsys, "fit", "--model", "llama3-8b", "--gpu", "h100-sxm", "--context", "10")
    assert code == 2 and "llama-3-8b" in err
    code, _, err = run(capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--kv", "float8")
    assert code == 2 and "fp8" in err


def test_unsupported_precision(capsys):
    code, _, err = run(capsys, "step", "--model", "llama-3-8b", "--gpu", "a100-40gb", "--weights", "fp8")
    assert code == 2
    assert err.startswith("error:") and "fp8" in err and "Traceback" not in err


def test_bad_numbers(capsys):
    code, _, err = run(capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "0")
    assert code == 2 and err.startswith("error:") and "batch" in err
    code, _, err = run(capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "0")
    assert code == 2 and "num_gpus" in err
    code, _, err = run(capsys, "prefill", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--prompt", "-5")
    assert code == 2 and "prompt_tokens" in err


def test_argparse_errors_exit_2(capsys):
    code, _, err = run(capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "abc")
    assert code == 2 and "invalid int value" in err
    code, _, _ = run(capsys, "step", "--gpu", "h100-sxm")  # --model missing
    assert code == 2
    code, _, _ = run(capsys, "list", "tpus")
    assert code == 2
    code, _, _ = run(capsys)
    assert code == 2
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "step" in out


# ---------------------------------------------------------------- docs and packaging


def test_every_json_field_is_documented(capsys):
    doc = (ROOT / "docs" / "cli.md").read_text()
    commands = [
        ["step", "--model", "llama-3-8b", "--gpu", "h100-sxm"],
        ["prefill", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--prompt", "1000"],
        ["fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "1000", "--batch", "2"],
        ["cost", "--tokens-per-s", "200", "--usd-per-hour", "3"],
        ["cost", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--usd-per-hour", "3"],
    ]
    keys = set()
    for argv in commands:
        keys |= set(run_json(capsys, *argv))
    keys |= set(run_json(capsys, "step", "--model", "llama-3-70b", "--gpu", "h100-sxm", expect=2))
    for what in ("gpus", "models", "prices"):
        d = run_json(capsys, "list", what)
        keys |= set(d) | set(d["items"][0])
    missing = sorted(k for k in keys if f"`{k}`" not in doc)
    assert not missing, f"JSON fields not described in docs/cli.md: {missing}"


def test_runs_as_a_module_without_uv():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "roofline.apps.cli",
            "step",
            "--model",
            "llama-3-8b",
            "--gpu",
            "h100-sxm",
            "--batch",
            "32",
            "--context",
            "1000",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert _strict(proc.stdout)["step_time_s"] == approx(
        (L8B_WEIGHTS + 32 * 1000 * L8B_KV_PER_TOKEN) / H100_BW
    )
