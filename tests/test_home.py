"""Your own hardware (notebooks/your_own_hardware.ipynb): what fits llama.cpp's memory on a Mac or a home GPU,
its speed against the floor, and what a million tokens cost on a machine you own."""

import math

import numpy as np
import pytest

import roofline as rl
from roofline.lessons.calibration_validation.lab import kernel_fit_explorer
from roofline.lessons.your_own_hardware.lab import LocalSpeedsTable, home_explorer
from roofline.lessons.your_own_hardware.numbers import local_speeds

GiB = 2**30


def test_local_memory_is_metals_share_on_a_mac_and_all_but_the_context_on_a_gpu():
    """Hand-derived: an RTX 4090 has 24 GiB, less 1.5 GiB of context and buffers; an M4 Max's 128 GiB of
    unified memory, of which Metal lets the GPU use three quarters by default."""
    assert rl.memory_available_bytes("rtx-4090", memory="local") == pytest.approx(22.5 * GiB)
    assert rl.memory_available_bytes("m4-max", memory="local") == pytest.approx(96 * GiB)
    assert rl.memory_available_bytes("rtx-4090", 2, memory="local") == pytest.approx(45 * GiB)


def test_a_model_fits_by_its_total_weights_and_runs_by_its_active_ones():
    """Qwen3-30B-A3B in Q4_K_M (about 18.7 GB) fits a 24 GB card, in Q8_0 (about 32.5 GB) it does not; where
    it fits it decodes faster than a dense 8B in the same format: it reads about 3B parameters per token."""
    q4, q8 = local_speeds(["qwen3-30b-a3b"], ["rtx-4090"], ["gguf-q4_k_m", "gguf-q8_0"])
    dense = local_speeds(["llama-3-8b"], ["rtx-4090"], ["gguf-q4_k_m"])[0]
    assert q4["fits"] and not q8["fits"]
    assert math.isnan(q8["engine_tokens_per_s"]) and math.isnan(q8["usd_per_million_tokens"])
    assert q4["floor_tokens_per_s"] > dense["floor_tokens_per_s"]
    assert q4["weights_bytes"] > 3 * dense["weights_bytes"]


def test_llama_cpp_is_below_the_floor_and_the_floor_is_bytes_over_bandwidth():
    for r in local_speeds(["llama-3-8b", "gpt-oss-20b"], ["m4-pro", "m2-ultra", "rtx-3090", "rtx-5090"],
                          ["gguf-q4_k_m", "gguf-q8_0"]):  # fmt: skip
        if r["fits"]:
            assert 0 < r["engine_tokens_per_s"] < r["floor_tokens_per_s"], r
    r = local_speeds(["llama-3-8b"], ["m4-max"], ["gguf-q8_0"], context_tokens=0)[0]
    bandwidth = rl.get_gpu("m4-max").memory_bandwidth_bytes_per_s
    read = float(rl.decode_step("llama-3-8b", "m4-max", 1, 0, weight_precision="gguf-q8_0").bytes_moved)
    assert r["floor_tokens_per_s"] == pytest.approx(bandwidth / read, rel=1e-6)


def test_the_price_of_a_million_tokens_is_the_hourly_cost_over_the_hourly_tokens():
    r = local_speeds(["llama-3-8b"], ["rtx-4090"], ["gguf-q4_k_m"])[0]
    assert r["usd_per_million_tokens"] == pytest.approx(
        r["usd_per_hour"] / (r["engine_tokens_per_s"] * 3600) * 1e6
    )


def test_a_longer_conversation_is_slower_and_can_stop_fitting():
    short, long = (
        local_speeds(["llama-3-8b"], ["rtx-4090"], ["gguf-f16"], context_tokens=c)[0] for c in (1000, 8000)
    )
    assert long["engine_tokens_per_s"] < short["engine_tokens_per_s"]
    # 43 GB of Q4_K_M weights fit a 64 GB Mac's 48 GiB; 100,000 tokens of KV (32.8 GB) beside them do not
    fits, too_long = (local_speeds(["llama-3.1-70b"], ["m4-pro"], ["gguf-q4_k_m"], context_tokens=c)[0]
                      for c in (1000, 100_000))  # fmt: skip
    assert fits["fits"] and not too_long["fits"] and np.isnan(too_long["engine_tokens_per_s"])


def test_the_table_and_the_explorers_answer():
    rows = local_speeds(["llama-3-70b"], ["rtx-4090", "m4-max"], ["gguf-q4_k_m"])
    table = LocalSpeedsTable(rows)
    assert repr(table) == "<table of 2 rows>" and table._repr_html_().count("<tr>") == 3
    assert ">no</td>" in table._repr_html_()  # 43 GB on a 24 GB card
    ex = home_explorer(model="llama-3-8b")
    before = ex.readout.value
    ex.controls["model"].value = "llama-3-70b"
    assert ex.readout.value != before and "llama-3-70b" in ex.readout.value
    k = kernel_fit_explorer()
    first = k.children[1].value
    assert len(first) > 1000
    k.children[0].children[0].value = "l40s"
    assert k.children[1].value != first
