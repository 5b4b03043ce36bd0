"""A deliberately simple serving simulation, one token of one request at a time: the reference that the
fast simulator (``roofline.sim.simulate``) is checked (tests/test_sim.py) and timed
(benchmarks/serving_sim.py) against. It lives with the tests: an independent oracle, not part of the library.

Same rules as ``simulate`` restricted to one worker, decode-first, the course's assumed scheduler, ample KV
cache: at every step boundary admit the arrived requests first come first served; give each decoding
request one token and then each prompt a chunk, within the token budget; then walk every token of every
scheduled request to add up the step's aggregates, price the step, and advance every token. Plain Python
lists and loops, no numpy in the loop.
"""

from __future__ import annotations

from roofline.errors import InvalidConfigurationError
from roofline.sim.cost import StepCostModel
from roofline.sim.policies import assumed_policy


def simulate_naive(
    model, gpu, arrival_s, input_tokens, output_tokens, *, token_budget: int | None = None, chunk_tokens=None,
    **deployment,
) -> dict:  # fmt: skip
    """Per-token reference simulation of requests with ``arrival_s`` (s), ``input_tokens`` and
    ``output_tokens`` (equal-length sequences), prompts in chunks of ``chunk_tokens`` (None: whole) within
    ``token_budget`` tokens a step (default the assumed scheduler's), on the ``deployment`` of
    ``StepCostModel`` (``num_gpus``, precisions). Returns the lists ``first_token_s`` and ``finish_s`` (s,
    per request, in the given order) and ``steps``.

    >>> r = simulate_naive("llama-3-8b", "h100-sxm", [0.0, 0.0], input_tokens=[4, 4], output_tokens=[3, 3])
    >>> [round(x * 1e3, 2) for x in r["finish_s"]], r["steps"]
    ([13.44, 13.44], 3)
    """
    cost, assumed = StepCostModel(model, gpu, **deployment), assumed_policy()
    max_batch = assumed.max_sequences
    token_budget = assumed.token_budget if token_budget is None else token_budget
    arrival = [float(a) for a in arrival_s]
    prompt = [int(p) for p in input_tokens]
    answer = [int(o) for o in output_tokens]
    n = len(arrival)
    if not (len(prompt) == len(answer) == n):
        raise InvalidConfigurationError("arrival_s, input_tokens and output_tokens differ in length")
    known = [max(p, 1) for p in prompt]
    cached = [0] * n
    made = [0] * n
    first = [None] * n
    finish = [None] * n
    order = sorted(range(n), key=lambda i: (arrival[i], i))
    waiting, running = [], []
    nxt, t, steps, finished = 0, 0.0, 0, 0
    while finished < n:
        while nxt < n and arrival[order[nxt]] <= t:
            waiting.append(order[nxt])
            nxt += 1
        while waiting and len(running) < max_batch:
            running.append(waiting.pop(0))
        if not running:
            t = arrival[order[nxt]]
            continue
        budget = token_budget
        plan, decoders = {}, set()
        for r in running:  # decode tokens first
            if known[r] - cached[r] == 1 and made[r] >= 1 and budget > 0:
                plan[r] = 1
                decoders.add(r)
                budget -= 1
        any_prompt_yet = False
        for r in running:  # then prompt chunks, in admission order
            if r in plan:
                continue
            rest = known[r] - cached[r]
            want = rest if chunk_tokens is None else min(rest, chunk_tokens)
            if chunk_tokens is None:
                got = want if (want <= budget or not any_prompt_yet) else 0
                if got == 0:
                    budget = 0
            else:
                got = max(0, min(want, budget))
            if got:
                plan[r] = got
                budget -= got
                any_prompt_yet = True
        new = seqs = kv_read = pairs = written = prompt_pairs = 0
        for r, k in plan.items():
            seqs += cached[r] + k >= known[r]  # a row of logits: a decoder, or a prompt's last chunk
            kv_read += cached[r]
            is_prompt = known[r] - cached[r] > 1 or (made[r] == 0 and prompt[r] > 0)
            for i in range(k):  # every token of every request, one at a time
                new += 1
                pairs += cached[r] + i
                if r not in decoders:  # a prompt chunk's pairs (MLA prices them in its expanded form)
                    prompt_pairs += cached[r] + i
                if is_prompt:
                    written += 1
        t += cost.time_s(
            float(new), float(seqs), float(kv_read), float(pairs), float(written), float(prompt_pairs)
        )
        steps += 1
        for r, k in plan.items():
            for _ in range(k):
                cached[r] += 1
            if cached[r] == known[r]:
                made[r] += 1
                if first[r] is None:
                    first[r] = t
                if made[r] == answer[r]:
                    finish[r] = t
                    finished += 1
                    running.remove(r)
                else:
                    known[r] += 1
    return {"first_token_s": first, "finish_s": finish, "steps": steps}
