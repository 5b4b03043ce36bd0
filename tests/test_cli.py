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

import roofline as rl
from roofline.apps.cli import main

ROOT = Path(__file__).resolve().parents[1]

H100_BW = 3.35e12
H100_PEAK = 989e12
H100_MEM = 80 * 2**30  # "80 GB" of HBM is 80 GiB = 85,899,345,920 bytes
# What an engine leaves weights and KV on one H100 under vLLM's defaults (data/assumptions.toml):
# 80 GiB × 0.98975 (CUDA-visible) × 0.9 (gpu_memory_utilization) − 5,153,960,755 (activations, workspace)
# − 139,586,437 (outside PyTorch) = 71,223,442,670 bytes
H100_BUDGET = H100_MEM * 0.98975 * 0.9 - 5_153_960_755 - 139_586_437
L8B_PARAMS = 8.03e9
L8B_WEIGHTS = 2 * 8_030_261_248  # 16,060,522,496 bytes stored
L8B_TABLE = 128256 * 4096  # V × d: the input embedding (and, untied, the LM head) = 525,336,576
# A decode step gathers one embedding row per user instead of reading the table:
L8B_READ_1 = L8B_WEIGHTS - 2 * L8B_TABLE + 2 * 4096  # 15,009,857,536 bytes at batch 1
L8B_MATMUL = 8_030_261_248 - 2 * L8B_TABLE  # 6,979,588,096 block weights one token multiplies
L8B_DECODE_FLOP = 2 * (L8B_MATMUL + L8B_TABLE)  # + the LM head: every decoded token gets logits
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
    floor = L8B_READ_1 / H100_BW  # 4.48 ms: every matmul weight once, one embedding row
    assert d["step_time_s"] == approx(floor)
    assert d["memory_time_s"] == approx(floor)
    assert d["compute_time_s"] == approx(L8B_DECODE_FLOP / H100_PEAK)  # 15 µs
    assert d["bytes_read"] == approx(L8B_READ_1)
    assert d["kv_bytes_read"] == 0
    assert d["tokens_per_s_per_user"] == approx(1 / floor)  # ≈ 223 (the card's 209 counts the whole table)
    assert d["tokens_per_s_total"] == approx(1 / floor)
    assert d["binding"] == "memory"
    assert d["fits"] is True
    assert d["memory_capacity_bytes"] == approx(H100_BUDGET)
    assert d["arithmetic_intensity_flop_per_byte"] == approx(1.0)  # 2 FLOP per 2-byte weight
    assert d["ridge_point_flop_per_byte"] == approx(989 / 3.35)  # 295
    assert (d["batch"], d["context_tokens"], d["num_gpus"]) == (1, 0, 1)


def test_step_batch32_context1000(capsys):
    d = run_json(
        capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "32", "--context", "1000"
    )
    kv = 32 * 1000 * L8B_KV_PER_TOKEN
    assert d["kv_bytes_read"] == kv  # 4,194,304,000 bytes, exact
    flops = 32 * (L8B_DECODE_FLOP + L8B_ATTN_PER_CTX * 1000)  # 497 GFLOP
    assert d["flops"] == approx(flops)
    assert d["compute_time_s"] == approx(flops / H100_PEAK)
    weights = L8B_READ_1 + 31 * 2 * 4096  # one embedding row per user
    step = (weights + kv) / H100_BW  # 5.73 ms
    assert d["step_time_s"] == approx(step)
    assert d["tokens_per_s_per_user"] == approx(1 / step)  # ≈ 174
    assert d["tokens_per_s_total"] == approx(32 / step)  # ≈ 5,582
    assert d["memory_needed_bytes"] == approx(L8B_WEIGHTS + kv)
    assert d["binding"] == "memory"


def test_step_gpus_overhead_and_communication(capsys):
    two = run_json(capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "2")
    assert two["step_time_s"] == approx(L8B_READ_1 / (2 * H100_BW))  # bandwidths add up
    assert two["memory_capacity_bytes"] == approx(2 * H100_BUDGET)

    slow = run_json(capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--launch-overhead-ms", "1")
    assert slow["launch_overhead_s"] == pytest.approx(1e-3)
    assert slow["step_time_s"] == approx(L8B_READ_1 / H100_BW + 1e-3)

    # 70B FP8 on 2 GPUs, batch 1: 2 all-reduces × 80 layers, each a start-up of 6.6 µs + 2(N−1) = 2 NVLink
    # hops of 0.6 µs, plus a ring moving 2(N−1)/N × (8192 × 2 bytes) over one direction of the link.
    comm = run_json(
        capsys,
        "step",
        "--model",
        "llama-3-70b",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "2",
        "--comm",
        "--weights",
        "fp8",
    )
    per_allreduce = 6.6e-6 + 2 * 0.6e-6 + 2 * (2 - 1) / 2 * (8192 * 2) / (900e9 / 2)
    assert comm["communication_time_s"] == approx(2 * 80 * per_allreduce)  # ≈ 1.25 ms
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
    assert "5.73 ms" in out  # (15.01e9 + 4.19e9) bytes ÷ 3.35e12 bytes/s
    assert "memory-bound" in out
    assert "174 per user" in out and "5,582 total" in out
    assert "85.9 GB" in out  # 80 GiB
    assert "achievable (vllm)" in out


def test_step_does_not_fit(capsys):
    code, out, err = run(capsys, "step", "--model", "llama-3-70b", "--gpu", "h100-sxm")
    assert code == 2
    assert out == ""
    assert err.startswith("error:")
    assert "does not fit" in err
    assert "141 GB" in err  # 70.55e9 parameters × 2 bytes
    assert "71.2 GB for weights and KV" in err and "85.9 GB" in err  # vLLM's budget of 80 GiB
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
    assert d["memory_capacity_bytes"] == approx(H100_BUDGET)
    assert d["max_batch"] == 0
    assert d["error"]["type"] == "DoesNotFitError" and "does not fit" in d["error"]["message"]


# ---------------------------------------------------------------- prefill


def test_prefill_without_attention(capsys):
    d = run_json(
        capsys, "prefill", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--prompt", "8000", "--no-attention"
    )
    # the lookup is not a matmul; logits only for the last prompt token: 2 × 6.98e9 × 8000 + 2 × V × d
    flops = 2 * L8B_MATMUL * 8000 + 2 * L8B_TABLE  # 111.7 TFLOP
    assert d["flops"] == approx(flops)
    assert d["attention_flops"] == 0
    assert d["time_s"] == approx(flops / H100_PEAK)  # 113 ms
    assert d["binding"] == "compute"
    assert d["decode_step_time_s"] == approx(L8B_READ_1 / H100_BW)
    assert d["stalled_decode_steps"] == approx((flops / H100_PEAK) / (L8B_READ_1 / H100_BW))  # ≈ 25
    # P where 2 N P ÷ peak = 2 N ÷ bandwidth: P = peak ÷ bandwidth = 295 tokens
    assert d["compute_bound_prompt_tokens"] == approx(989 / 3.35)
    assert d["include_attention"] is False


def test_prefill_with_attention_and_two_gpus(capsys):
    d = run_json(
        capsys, "prefill", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--prompt", "8000", "--gpus", "2"
    )
    attention = L8B_ATTN_PER_CTX * 8000 * 7999 / 2  # causal: token i attends to i earlier ones, 16.8 TFLOP
    assert d["attention_flops"] == approx(attention)
    flops = 2 * L8B_MATMUL * 8000 + 2 * L8B_TABLE + attention
    assert d["flops"] == approx(flops)
    assert d["time_s"] == approx(flops / (2 * H100_PEAK))
    # the stall ratio does not depend on G: both times halve
    assert d["stalled_decode_steps"] == approx(flops / H100_PEAK / (L8B_READ_1 / H100_BW))


def test_prefill_human(capsys):
    code, out, _ = run(
        capsys, "prefill", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--prompt", "8000", "--no-attention"
    )
    assert code == 0
    assert "compute-bound" in out
    assert "25 decode steps" in out  # 112.9 ms ÷ 4.48 ms
    assert "295 prompt tokens" in out
    assert "112 TFLOP" in out


def test_prefill_short_prompt_is_memory_bound(capsys):
    d = run_json(
        capsys, "prefill", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--prompt", "100", "--no-attention"
    )
    assert d["binding"] == "memory"  # 100 < 295 tokens
    # the prompt gathers 100 embedding rows and writes 100 tokens of KV
    assert d["time_s"] == approx((L8B_READ_1 + 99 * 2 * 4096 + 100 * L8B_KV_PER_TOKEN) / H100_BW)


# ---------------------------------------------------------------- fit


def test_fit_largest_batch_and_a_batch_that_fits(capsys):
    d = run_json(
        capsys, "fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "4096", "--batch", "64"
    )
    per_user = 4096 * L8B_KV_PER_TOKEN  # 536,870,912 bytes
    assert d["kv_bytes_per_user"] == per_user
    # (71.22e9 − 16.06e9) ÷ 536,870,912 = 102.7 → 102 users under vLLM's defaults
    assert d["max_batch"] == math.floor((H100_BUDGET - L8B_WEIGHTS) / per_user) == 102
    assert d["fits"] is True
    assert d["margin_users"] == 102 - 64
    assert d["memory_needed_bytes"] == approx(L8B_WEIGHTS + 64 * per_user)  # 50.4 GB
    assert d["margin_bytes"] == approx(H100_BUDGET - L8B_WEIGHTS - 64 * per_user)  # 20.8 GB
    ideal = run_json(
        capsys, "fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "4096", "--memory", "ideal"
    )
    # the card's simplification, all 80 GiB: (85.9e9 − 16.06e9) ÷ 536,870,912 = 130.1 → 130
    assert ideal["max_batch"] == math.floor((H100_MEM - L8B_WEIGHTS) / per_user) == 130


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
    assert d["margin_bytes"] == approx(H100_BUDGET - L8B_WEIGHTS - 200 * 4096 * L8B_KV_PER_TOKEN)  # -52.2 GB
    assert d["margin_users"] == 102 - 200

    code, out, _ = run(
        capsys, "fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "4096", "--batch", "200"
    )
    assert code == 1
    assert "does not fit" in out and "52.2 GB" in out and "98 users too many" in out


def test_fit_without_batch_and_on_two_gpus(capsys):
    d = run_json(
        capsys, "fit", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--gpus", "2", "--context", "8192"
    )
    # (2 × 71.22e9 − 141.1e9) ÷ (8192 × 327,680) = 1.34e9 ÷ 2.68e9 → 0 users: vLLM's defaults leave
    # 70B BF16 on two H100s no room for a single 8k-token user
    assert d["max_batch"] == 0
    assert d["batch"] is None and d["fits"] is None
    assert d["memory_capacity_bytes"] == approx(2 * H100_BUDGET)

    code, out, _ = run(capsys, "fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "4096")
    assert code == 0
    assert "102 users" in out


def test_fit_fp8_kv_doubles_the_batch(capsys):
    d = run_json(
        capsys, "fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "4096", "--kv", "fp8"
    )
    assert d["kv_bytes_per_token"] == L8B_KV_PER_TOKEN / 2
    assert d["max_batch"] == math.floor((H100_BUDGET - L8B_WEIGHTS) / (4096 * L8B_KV_PER_TOKEN / 2)) == 205


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
    step = (L8B_READ_1 + 63 * 2 * 4096 + 64 * 4096 * L8B_KV_PER_TOKEN) / H100_BW  # 14.74 ms, memory-bound
    tps = 64 / step  # ≈ 4,343 tokens/s
    assert d["step_time_s"] == approx(step)
    assert d["tokens_per_s_total"] == approx(tps)
    assert d["usd_per_million_tokens"] == approx(3 / (tps * 3600) * 1e6)  # ≈ $0.192, the card's $0.19
    assert d["achievable"]["step_time_s"] > step and d["achievable"]["usd_per_million_tokens"] > 0.192
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
    assert code == 0 and "$0.192 per million output tokens" in out


def test_cost_with_a_price_row(capsys):
    d = run_json(capsys, "cost", "--tokens-per-s", "200", "--price", "h100-example-3usd")
    assert d["usd_per_gpu_hour"] == 3.0 and d["price_id"] == "h100-example-3usd"
    assert d["usd_per_million_tokens"] == pytest.approx(4.1667, abs=1e-4)

    # the GPU comes from the price row when --gpu is left out
    d = run_json(capsys, "cost", "--model", "llama-3-8b", "--price", "runpod-h100-sxm-community")
    assert d["gpu_id"] == "h100-sxm"
    assert d["usd_per_million_tokens"] == approx(2.69 / (H100_BW / L8B_READ_1 * 3600) * 1e6)


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
    assert code == 2 and "argument --tokens-per-s: must be a number more than 0" in err
    code, _, err = run(capsys, "cost", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--usd-per-hour", "3")
    assert code == 2 and "does not fit" in err


# ---------------------------------------------------------------- list


def test_list_gpus(capsys):
    d = run_json(capsys, "list", "gpus")
    gpus = {g["id"]: g for g in d["items"]}
    h100 = gpus["h100-sxm"]
    assert h100["memory_bytes"] == H100_MEM
    assert h100["memory_bandwidth_bytes_per_s"] == 3.35e12
    assert h100["ridge_point_flop_per_byte"]["bf16"] == approx(989 / 3.35)  # 295
    assert h100["ridge_point_flop_per_byte"]["fp8"] == approx(1979 / 3.35)  # 591
    assert "fp8" not in gpus["a100-40gb"]["ridge_point_flop_per_byte"]
    assert h100["source"].startswith("https://")

    code, out, _ = run(capsys, "list", "gpus")
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("h100-sxm "))
    # the data sheet's "80 GB" is 80 GiB = 85,899,345,920 bytes: both shown, as `step` shows 85.9 GB
    assert " 80 GiB (85.9 GB) " in row
    assert row.split()[5:10] == ["3.35", "989", "295", "900", "700"]
    assert row.split()[10] == f"{rl.pricing.default_price('h100-sxm').usd_per_gpu_hour:.2f}"
    assert "https://www.nvidia.com/en-us/data-center/h100/" in row
    rtx = next(line for line in out.splitlines() if line.startswith("rtx-4090 "))
    assert " own " in rtx  # bought, not rented: purchase and power over its life


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
    # Out-of-range numbers are argument errors: argparse's usage line, then the option and its range.
    code, _, err = run(capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "0")
    assert code == 2 and "argument --batch: must be a whole number from 1 to 10,000,000 users, got '0'" in err
    code, _, err = run(capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "0")
    assert code == 2 and "argument --gpus: must be a whole number from 1 to 100,000 GPUs" in err
    code, _, err = run(capsys, "prefill", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--prompt", "-5")
    assert code == 2 and "argument --prompt" in err and "got '-5'" in err
    code, _, err = run(capsys, "fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "0")
    assert code == 2 and "argument --context: must be a whole number from 1 to 100,000,000 tokens" in err
    assert "Traceback" not in err


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
        (L8B_READ_1 + 31 * 2 * 4096 + 32 * 1000 * L8B_KV_PER_TOKEN) / H100_BW
    )


# ---------------------------------------------------------------- contract: JSON errors, exit codes, limits

BIG = "9" * 400  # a 400-digit integer


def _json_error(capsys, *argv, code=2, kind=None):
    """Run with --json; the failure must be one JSON object on stdout with error.type and error.message."""
    got, out, err = run(capsys, *argv, "--json")
    assert got == code, err
    d = _strict(out)
    assert set(d["error"]) == (
        {"type", "message", "suggestions"} if kind == "UnknownNameError" else {"type", "message"}
    ), d
    assert isinstance(d["error"]["message"], str) and d["error"]["message"]
    if kind:
        assert d["error"]["type"] == kind, d
    assert "Traceback" not in err
    return d, err


@pytest.mark.parametrize(
    "argv, kind",
    [
        (["step", "--model", "llama-3-8b", "--gpu", "h100"], "UnknownNameError"),
        (["fit", "--model", "llama-3-8b", "--gpu", "a100-40gb", "--context", "1", "--weights", "fp8"],
         "UnsupportedPrecisionError"),
        (["list", "gpus", "--precision", "fp9"], "UnknownNameError"),
        (["step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "abc"], "UsageError"),
        (["step", "--gpu", "h100-sxm"], "UsageError"),  # --model missing
        (["cost", "--tokens-per-s", "200", "--model", "llama-3-8b", "--usd-per-hour", "3"], "UsageError"),
        (["cost", "--tokens-per-s", "200"], "UsageError"),  # no price
        (["tpus"], "UsageError"),
        ([], "UsageError"),
    ],
)  # fmt: skip
def test_with_json_every_failure_is_a_json_error(capsys, argv, kind):
    d, _ = _json_error(capsys, *argv, kind=kind)
    assert d["command"] == (argv[0] if argv and argv[0] in ("step", "fit", "list", "cost") else None)


def test_prefill_that_does_not_fit_is_a_json_error_with_the_memory_numbers(capsys):
    d, err = _json_error(
        capsys,
        "prefill",
        "--model",
        "llama-3-70b",
        "--gpu",
        "h100-sxm",
        "--prompt",
        "1000",
        kind="DoesNotFitError",
    )
    assert d["command"] == "prefill" and d["fits"] is False
    assert d["memory_needed_bytes"] == approx(2 * 70.55e9 + 1000 * L70B_KV_PER_TOKEN)  # 141.1 GB + 0.33 GB
    assert d["memory_capacity_bytes"] == approx(H100_BUDGET)
    assert "does not fit" in d["error"]["message"] and err.startswith("error:")
    # the human form keeps its explanation on stderr and prints nothing on stdout
    code, out, err = run(capsys, "prefill", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--prompt", "1000")
    assert code == 2 and out == "" and "short by" in err


def test_cost_that_does_not_fit_is_a_json_error(capsys):
    d, _ = _json_error(
        capsys,
        "cost",
        "--model",
        "llama-3-70b",
        "--gpu",
        "h100-sxm",
        "--usd-per-hour",
        "3",
        kind="DoesNotFitError",
    )
    assert d["command"] == "cost" and d["max_batch"] == 0  # 141 GB of weights > 80 GB
    assert "no throughput to price" in d["error"]["message"]


@pytest.mark.parametrize(
    "option, value, says",
    [
        ("--batch", BIG, "argument --batch: must be a whole number from 1 to 10,000,000 users"),
        ("--gpus", str(10**38), "argument --gpus: must be a whole number from 1 to 100,000 GPUs"),
        ("--context", "-" + BIG, "argument --context: must be a whole number from 0 to 100,000,000 tokens"),
        ("--context", "9" * 5000, "argument --context: invalid int value"),  # beyond Python's int() limit
        ("--batch", "1.5", "argument --batch: invalid int value: '1.5'"),
        ("--launch-overhead-ms", "nan", "argument --launch-overhead-ms: 'nan' is not a finite number"),
        ("--launch-overhead-ms", "1e400", "is not a finite number"),
    ],
)
def test_absurd_numbers_get_a_clear_message(capsys, option, value, says):
    code, out, err = run(capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm", option, value)
    assert code == 2 and out == ""
    assert says in err and "Traceback" not in err
    assert len(err) < 1000  # the 400- or 5000-digit value is shortened, not echoed
    d, _ = _json_error(
        capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm", option, value, kind="UsageError"
    )
    assert says in d["error"]["message"]


def test_a_tiny_step_is_shown_in_ns_never_as_zero(capsys):
    argv = [
        "step",
        "--model",
        "llama-3.2-1b",
        "--gpu",
        "b200",
        "--gpus",
        "100000",
        "--weights",
        "fp4",
        "--kv",
        "fp4",
    ]
    d = run_json(capsys, *argv)
    # 100,000 B200s read the weights (FP4 blocks, the BF16 LM head) at 100,000 × 8e12 bytes/s: about a ns
    assert d["step_time_s"] == approx(d["weight_bytes_read"] / (100_000 * 8e12))
    assert 0 < d["step_time_s"] < 1e-8
    code, out, _ = run(capsys, *argv)
    line = next(x for x in out.splitlines() if "step time" in x)
    assert " ns " in line and "0.00" not in line
    assert f"{d['step_time_s'] * 1e9:.3g} ns" in line


def _cli(*argv, env=None):
    return subprocess.run(
        [sys.executable, "-m", "roofline.apps.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )


def test_numpy_warnings_never_reach_stderr():
    # Valid but extreme: the largest batch, context and GPU count the CLI takes, a tiny rate.
    ok = _cli(
        "step", "--model", "llama-3.2-1b", "--gpu", "b200", "--gpus", "100000", "--weights", "fp4", "--comm"
    )
    assert ok.returncode == 0 and ok.stderr == ""
    big = _cli(
        "step", "--model", "llama-3.1-405b", "--gpu", "h100-sxm", "--batch", "10000000",
        "--context", "131072", "--gpus", "100000", "--comm", "--json",
    )  # fmt: skip
    assert big.returncode == 2 and _strict(big.stdout)["error"]["type"] == "DoesNotFitError"
    assert big.stderr.startswith("error:") and "Warning" not in big.stderr
    # 1e-300 tokens/s at $1M an hour: the dollars per million tokens overflow float64; a clear error,
    # neither an inf nor a warning
    tiny = _cli("cost", "--tokens-per-s", "1e-300", "--usd-per-hour", "1000000", "--json")
    assert tiny.returncode == 2 and "Warning" not in tiny.stderr
    assert _strict(tiny.stdout)["error"]["type"] == "InvalidConfigurationError"


def test_exit_codes_are_the_documented_ones(capsys):
    doc = (ROOT / "docs" / "cli.md").read_text()
    table = dict(re.findall(r"^\s*\| (\d) \| (.+?) \|$", doc, re.M))
    assert set(table) == {"0", "1", "2", "3"}
    from roofline.apps import cli_output as out

    assert (out.EXIT_OK, out.EXIT_NO, out.EXIT_ERROR, out.EXIT_INTERNAL) == (0, 1, 2, 3)
    fit = ["fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "4096"]
    assert run(capsys, *fit, "--batch", "64")[0] == 0  # 64 users fit (119 would)
    assert run(capsys, *fit, "--batch", "200")[0] == 1  # a valid answer: "no"
    assert run(capsys, "step", "--model", "llama-3-70b", "--gpu", "h100-sxm")[0] == 2  # does not fit
    assert run(capsys, "step", "--model", "llama-3-8b", "--gpu", "h100")[0] == 2  # unknown id
    assert run(capsys, "step", "--model", "llama-3-8b")[0] == 2  # usage
    assert run(capsys, "--help")[0] == 0


# ---------------------------------------------------------------- subcommands from other modules


@pytest.fixture
def plugin(monkeypatch):
    """A ``cli_<name>`` module as other helpers write them: add_parser(subparsers) and run(args) -> int."""
    import types

    import numpy as np

    from roofline.apps.cli_options import BATCH, add_common_arguments
    from roofline.apps.cli_output import EXIT_OK, print_json

    module = types.ModuleType("roofline_test_cli_echo")

    def add_parser(subparsers):
        p = subparsers.add_parser("echo", help="test command")
        add_common_arguments(p)
        p.add_argument("--what", choices=["ok", "nofit", "bug", "overflow"], default="ok")
        p.add_argument("--batch", type=BATCH, default=1)

    def run(args):
        if args.what == "nofit":
            raise rl.DoesNotFitError("echo does not fit")
        if args.what == "bug":
            raise RuntimeError("boom")
        if args.what == "overflow":
            return int(np.float64(1e308) * 10)
        print_json({"command": "echo", "batch": args.batch, "gpus": args.gpus})
        return EXIT_OK

    module.add_parser, module.run = add_parser, run
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module.__name__


def test_a_command_module_registers_in_one_line_and_shares_the_error_contract(capsys, plugin):
    def echo(*argv):
        code = main(["echo", "--model", "llama-3-8b", "--gpu", "h100-sxm", *argv], command_modules=[plugin])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    code, out, _ = echo("--gpus", "4", "--json")
    assert code == 0 and _strict(out) == {"command": "echo", "batch": 1, "gpus": 4}
    for argv, kind, exit_code in [
        (["--what", "nofit"], "DoesNotFitError", 2),
        (["--batch", BIG], "UsageError", 2),  # the shared bounded types apply
        (["--gpus", "0"], "UsageError", 2),
        (["--what", "overflow"], "InvalidConfigurationError", 2),  # numpy overflow: an error, not a warning
        (["--what", "bug"], "InternalError", 3),
    ]:
        code, out, err = echo(*argv, "--json")
        assert code == exit_code, (argv, err)
        d = _strict(out)
        assert d["command"] == "echo" and d["error"]["type"] == kind, (argv, d)
        assert "RuntimeWarning" not in err
    assert "Traceback" in err and "boom" in err  # a bug keeps its traceback, on stderr only
    # the built-in commands are still all there
    assert run(capsys, "list", "gpus")[0] == 0


def test_registered_command_modules_follow_the_protocol(capsys):
    # Each registered module adds a subcommand that main() runs and whose errors carry its name: its
    # add_parser registered it, and its run (or the framework) reports through the one error contract.
    from roofline.apps import cli

    names = set(cli.build_parser().commands)  # every subcommand the parser knows
    assert {"step", "prefill", "fit", "cost", "list"} <= names
    assert not cli.build_parser(command_modules=[]).commands  # every command comes from its module
    for module_name in cli.COMMAND_MODULES:
        (name,) = cli.build_parser(command_modules=[module_name]).commands  # one subcommand per module
        assert name in names
        code, out, err = run(capsys, name, "--no-such-option", "--json")
        d = _strict(out)
        assert code == 2 and d["command"] == name and d["error"]["type"] == "UsageError", module_name
        assert err.splitlines()[-1] == f"roofline {name}: error: {d['error']['message']}"


def test_list_engines_names_the_release_each_engine_describes(capsys):
    """Which engine versions a figure is valid for, from the command line."""
    d = run_json(capsys, "list", "engines")
    by_id = {i["id"]: i for i in d["items"]}
    assert {"ideal", "vllm", "vllm-2024", "llama.cpp"} <= set(by_id)
    assert by_id["vllm"]["kernels_timed"] and not by_id["vllm-2024"]["kernels_timed"]
    assert "2024" in by_id["vllm-2024"]["version"] and by_id["llama.cpp"]["parallel"] == "pipeline"
    code, out, _ = run(capsys, "list", "engines")
    assert code == 0 and "tensorrt-llm-2024" in out


def test_a_figure_names_the_calibration_it_came_from(capsys, tmp_path, monkeypatch):
    # A what-if data folder without a calibration of its own: the shipped one is used, and named.
    import shutil

    from roofline.data import clear_cache

    for name in ("gpus.toml", "models.toml", "prices.toml", "assumptions.toml", "engines.toml"):
        shutil.copy(ROOT / "data" / name, tmp_path / name)
    monkeypatch.setenv("ROOFLINE_DATA_DIR", str(tmp_path))
    clear_cache()
    try:
        d = run_json(capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm")
        assert not d["achievable"]["calibration"].startswith(tmp_path.name)
        shutil.copy(ROOT / "data" / "calibration.toml", tmp_path / "calibration.toml")
        d = run_json(capsys, "step", "--model", "llama-3-8b", "--gpu", "h100-sxm")
        assert d["achievable"]["calibration"] == f"{tmp_path.name}/calibration.toml"
    finally:
        monkeypatch.delenv("ROOFLINE_DATA_DIR")
        clear_cache()


def test_a_step_the_cpu_launches_set_says_so(capsys):
    # 4.48 ms of weights against 10 ms of launches: memory binds of the two roofs, the launches set the step.
    m = ["--model", "llama-3-8b", "--gpu", "h100-sxm"]
    _, out, _ = run(capsys, "step", *m, "--launch-overhead-ms", "10")
    binding = next(line for line in out.splitlines() if line.strip().startswith("binding"))
    assert "memory-bound" in binding and "launches (10.00 ms) takes longer" in binding
    _, out, _ = run(capsys, "step", *m)
    binding = next(line for line in out.splitlines() if line.strip().startswith("binding"))
    assert binding.split()[-1] == "memory-bound"


def test_a_release_the_gpu_cannot_compute_in_is_named_as_such(capsys):
    # Llama 3 8B is released in BF16; an M4 Max has no BF16 math, so llama.cpp and MLX run it as FP16.
    _, out, _ = run(capsys, "cost", "--model", "llama-3-8b", "--gpu", "m4-max")
    assert "weights fp16 (released as bf16" in out.splitlines()[0]
    _, out, _ = run(capsys, "cost", "--model", "llama-3-8b", "--gpu", "h100-sxm")
    assert "weights bf16 as released" in out.splitlines()[0]
