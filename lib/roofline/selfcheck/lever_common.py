"""What the lever cards (quantization, speculative decoding, mixture of experts) share: their lessons, which
are topic notebooks rather than numbered ones, and the names of their traps.

Taught in notebooks/quantization.ipynb, notebooks/speculative_decoding.ipynb and
notebooks/mixture_of_experts.ipynb. Numbers only.

Their lessons sit in ``roofline.selfcheck.spec.LESSONS`` under topic keys (number or topic → notebook stem,
title), so the cards' lesson links render like Pack 01's.

>>> LESSONS["speculative_decoding"]
('speculative_decoding', 'Speculative decoding')
"""

from __future__ import annotations

from roofline.selfcheck.spec import LESSONS

LEVER_TOPICS = ("quantization", "speculative_decoding", "mixture_of_experts", "attention_variants")
LEVER_LESSONS = {key: LESSONS[key] for key in LEVER_TOPICS}

# Trap names: what ``Result.trap`` says when a wrong answer matches a known slip.
TRAP_ALPHA_TO_THE_K = "α^k instead of the geometric sum"
TRAP_ALL_ACCEPTED = "every draft accepted"
TRAP_FREE_DRAFT = "forgot the draft's cost"
TRAP_VERIFY_K_STEPS = "verify priced as k + 1 steps"
TRAP_BITS_RATIO = "the ratio of bits (4× for INT4)"
TRAP_BYTES_AT_LARGE_BATCH = "bytes ratio at a compute-bound batch"
TRAP_ACTIVE_ONLY = "only the active experts at any batch"
TRAP_ALL_RESIDENT = "every expert read at batch 1"
TRAP_USERS_TIMES_EXPERTS = "users × experts per token"
TRAP_QUERY_HEADS = "query heads instead of KV heads"
TRAP_MLA_DOUBLED = "doubled MLA's shared latent"
TRAP_WINDOW_IGNORED = "ignored the sliding window"
TRAP_WINDOW_ALL_LAYERS = "window applied to every layer"
