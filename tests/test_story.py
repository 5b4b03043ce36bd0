"""One story across the lessons (issue 10): the same quantity has the same value wherever the course shows it.

Golden values are hand-derived from the H100 SXM data sheet (989e12 FLOP/s dense BF16, 3.35e12 B/s) and
Llama 3 8B's config (32 layers × 8 KV heads × 128 dims × 2 (K and V) × 2 bytes = 131,072 bytes of KV
per token).
"""

import math

import roofline as rl
from roofline import selfcheck as sc


def test_q3_and_q6_name_the_same_kv_per_token_in_kib():
    kv = 32 * 8 * 128 * 2 * 2  # = 131,072 bytes = 128 KiB
    assert sc.card("Q3").answer("step_ms").value * 1e-3 == (16e9 + 32 * 1000 * kv) / 3.35e12  # 6.028 ms
    for qid in ("Q3", "Q6"):
        card = sc.card(qid)
        kv_traps = [t.why for t in card.traps if t.name == sc.TRAP_ONE_USER_KV]
        assert kv_traps and all("128 KiB" in why for why in kv_traps), qid
        assert "131 KB" not in card.scenario + card.worked + (card.followup_answer or ""), qid


def test_q4_flip_batch_is_lesson_61s_function():
    # 2·B FLOP per 2 bytes reaches the ridge 989e12 / 3.35e12 = 295.22 at B = 295.22 (each user's embedding
    # row moves it to 295.27); the first whole batch: 296
    ridge = 989e12 / 3.35e12
    assert math.ceil(ridge * 2 / 2) == 296
    assert sc.card("Q4").answer("flip_batch").value == 296
    assert rl.compute_bound_batch("llama-3-8b", "h100-sxm") == 296
