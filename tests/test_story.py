"""One story across the lessons: the same quantity has the same value wherever the course shows it.

Golden values are hand-derived from the H100 SXM data sheet (989e12 FLOP/s dense BF16, 3.35e12 B/s) and
Llama 3 8B's config (32 layers × 8 KV heads × 128 dims × 2 (K and V) × 2 bytes = 131,072 bytes of KV
per token).
"""

import html
import json
import math
import re
from pathlib import Path

import pytest

import roofline as rl
from roofline.lessons import decode_floor, gpu_util, launch_overhead
from roofline.lessons import pack01_speed_physics as sc
from roofline.lessons.prefill_vs_decode.lab import prefill_readout
from roofline.scenario import Scenario


def test_q3_and_q6_name_the_same_kv_per_token_in_kib():
    kv = 32 * 8 * 128 * 2 * 2  # = 131,072 bytes = 128 KiB
    worked = sc.card("Q3", {"weight_bytes": 16e9, "kv_bytes_per_token": kv})  # without the card's ≈ 6.0 ms
    assert worked.answer("step_ms").value * 1e-3 == (16e9 + 32 * 1000 * kv) / 3.35e12  # 6.028 ms
    for qid in ("Q3", "Q6"):
        card = sc.card(qid)
        kv_traps = [t.why for t in card.traps if t.name == "one user's KV"]
        assert kv_traps and all("128 KiB" in why for why in kv_traps), qid
        assert "131 KB" not in card.scenario + card.worked + (card.followup_answer or ""), qid


def test_q4_flip_batch_is_lesson_61s_function():
    # 2·B FLOP per 2 bytes reaches the ridge 989e12 / 3.35e12 = 295.22 at B = 295.22 (each user's embedding
    # row moves it to 295.27); the first whole batch: 296
    ridge = 989e12 / 3.35e12
    assert math.ceil(ridge * 2 / 2) == 296
    assert sc.card("Q4").answer("flip_batch").value == 296
    assert rl.compute_bound_batch("llama-3-8b", "h100-sxm") == 296


# ---- one story across the lessons ---------------------------------------------------------------------


NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
# Notebooks other people own (their closing lines are theirs).
OTHERS = {"floor_to_real_server", "calibration_validation", "measure_your_machine", "slos_and_capacity",
          "serving_validation"}  # fmt: skip


@pytest.mark.parametrize("precision", ["fp8", "int4"])
def test_one_set_of_lever_numbers_from_the_librarys_weight_formats(precision):
    # Lesson 02's ceiling table, lesson 03's launch budget and the quantization lesson's decode step read the
    # same bytes for FP8 and INT4 weights: the weight formats keep the LM head in 16 bits. Llama 3 8B: the
    # blocks' 6.979e9 weights at 1 (FP8) or 0.515625 (INT4) bytes, plus 0.5256e9 16-bit ones (head, norms,
    # one embedding row).
    body, wide = 6_979_321_856, 525_606_912
    read = body * (1.0 if precision == "fp8" else 0.515625) + 2 * wide
    table = decode_floor.ceiling_table("llama-3-8b", ["h100-sxm"], [precision])
    step = rl.decode_step("llama-3-8b", "h100-sxm", 1, 0, weight_precision=precision)
    launch = launch_overhead.launch_budget(Scenario(context_tokens=0, weight_precision=precision), 300, 4e-6)
    assert table.floor("h100-sxm", precision) == pytest.approx(read / 3.35e12, rel=1e-6)
    assert step.step_time_s == pytest.approx(read / 3.35e12, rel=1e-6)
    assert launch.roofline_time_s == pytest.approx(read / 3.35e12, rel=1e-6)


def test_one_mbu_for_the_cards_6_ms_step_in_lessons_09_16_59_and_the_card():
    # The card's 6 ms step on an H100: 15.01e9 bytes read / (6e-3 s × 3.35e12 B/s) = 74.7 % (the card's
    # round 16 GB gives 79.6 %). Lesson 09's timeline, lesson 16's mbu and card Q5's exact answer agree.
    exact = (8_030_261_248 - 128_256 * 4096 + 4096) * 2 / (6e-3 * 3.35e12)
    timeline = gpu_util.decode_timeline(Scenario(context_tokens=0), step_time_s=6e-3, n_steps=4)
    assert gpu_util.timeline_metrics(timeline, 1e-3).mbu == pytest.approx(exact, rel=1e-6)
    read = Scenario(batch=1, context_tokens=0).decode().bytes_read
    assert rl.mbu(read, 6e-3, 3.35e12) == pytest.approx(exact, rel=1e-6)
    assert sc.card("Q5").answer("mbu_pct").exact == pytest.approx(exact * 100, rel=1e-6)
    assert sc.card("Q5").answer("mbu_pct").value == pytest.approx(16e9 / (6e-3 * 3.35e12) * 100)


def test_lesson_15s_prefill_rows_say_what_they_count():
    # 500 tokens on an H100: the card's 2·N·P = 2 × 8.03e9 × 500 / 989e12 = 8.12 ms; the layers' matmuls
    # (2·N'·P) and the full prefill are the library's; each row's label names what it counts, once.
    text = html.unescape(prefill_readout(Scenario(prompt_tokens=500)))
    rows = dict(re.findall(r'<td class="k">([^<]+)</td><td data-key="[^"]+"><b>([^<]+)</b>', text))
    card = 2 * 8_030_261_248 * 500 / 989e12
    assert rows["the card's 2·N·P (all N × 500 tokens)"] == f"{card * 1e3:.2f} ms"
    matmuls = rl.prefill("llama-3-8b", "h100-sxm", 500, include_attention=False).step_time_s
    assert rows["the layers' matmuls (2·N′·P, P = 500)"].startswith(f"{matmuls * 1e3:.2f} ms")
    full = rl.prefill("llama-3-8b", "h100-sxm", 500).step_time_s
    assert rows["+ attention's P² term: the prefill"].startswith(f"{full * 1e3:.2f} ms")
    assert len(rows) == len(set(rows))  # one name, one meaning


def _last_markdown(path):
    cells = json.loads(path.read_text())["cells"]
    return "".join(next(c for c in reversed(cells) if c["cell_type"] == "markdown")["source"])


@pytest.mark.parametrize(
    "notebook", sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb") if p.stem not in OTHERS), ids=str
)
def test_every_lesson_ends_with_next_links_to_notebooks_that_exist(notebook):
    text = _last_markdown(NOTEBOOKS / f"{notebook}.ipynb")
    lines = re.search(r"\*\*(Next|Back and next|Back|Related)[^*]*:\*\*(.*)", text, re.S)
    assert lines, f"{notebook}: no **Next:** line"
    targets = re.findall(r"\]\(([\w.]+\.ipynb)\)", lines.group(2))
    assert targets, f"{notebook}: its Next line has no links"
    assert all((NOTEBOOKS / t).exists() for t in targets), targets
    assert not re.search(r"(?<!\[)\blesson \d\d\b(?![^\[]*\])", lines.group(2)), (
        f"{notebook}: an unlinked lesson"
    )


@pytest.mark.parametrize(
    "notebook", sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb") if p.stem not in OTHERS), ids=str
)
def test_every_stored_figure_carries_alt_text(notebook):
    outputs = [o for c in json.loads((NOTEBOOKS / f"{notebook}.ipynb").read_text())["cells"]
               for o in c.get("outputs", [])]  # fmt: skip
    bare = [o for o in outputs if "image/png" in o.get("data", {})]
    assert not bare, f"{notebook}: {len(bare)} figure(s) stored as a bare PNG, without alt text"
    images = [
        m for o in outputs for m in re.findall(r"<img[^>]*>", "".join(o.get("data", {}).get("text/html", "")))
    ]
    assert all(re.search(r'alt="Figure \(', img) for img in images), notebook
