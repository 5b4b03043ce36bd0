"""How tightly the measured servers kept their prompts together: notebooks/serving_validation.ipynb.

A closed loop must prefill C prompts per round whatever the scheduler does; what the scheduler decides is
where that prefill lands. Spread over the steps (a token budget admits a few prompts a step), it slows
everyone's decode a little and each prompt waits little. Bunched (every waiting prompt in one pass), the
answers decode together undisturbed and each prompt waits for the whole cohort. The stored validation run
simulates both ends (``roofline.sim.validation.whole_cohort``); a measured TTFT between them says the
server bunched its prompts more than its budget alone would, and one above both says the step times, not
the queue, are too fast.
"""

from __future__ import annotations

import numpy as np

from roofline.sim.validation import error_table


def ttft_bracket(results: list[dict], by=("engine", "model")) -> list[dict]:
    """Per group of ``results`` (``roofline.sim.validation.stored_results()``): the median of measured TTFT
    ÷ simulated TTFT with the deployment's token budget (``spread``) and with the whole cohort admitted at
    once (``bunched``), and ``where`` the measured TTFT lies: "between" the two ends, "above both" (the
    simulated steps are too fast) or "below both".

    >>> r = {"engine": "e", "model": "m", "ttft_s": 2.0, "sim_ttft_s": 1.0, "bunched_ttft_s": 4.0}
    >>> g = ttft_bracket([r])[0]
    >>> g["spread"], g["bunched"], g["where"]
    (2.0, 0.5, 'between')
    """
    groups: dict = {}
    for r in results:
        ratios = (r["ttft_s"] / r["sim_ttft_s"], r["ttft_s"] / r["bunched_ttft_s"])
        groups.setdefault(tuple(r[k] for k in by), []).append(ratios)
    out = []
    for key, ratios in sorted(groups.items()):
        spread, bunched = (float(x) for x in np.median(np.array(ratios), axis=0))
        lo, hi = min(spread, bunched), max(spread, bunched)
        where = "above both" if lo > 1 else "below both" if hi < 1 else "between"
        out.append({**dict(zip(by, key, strict=True)), "rows": len(ratios), "spread": spread,
                    "bunched": bunched, "where": where})  # fmt: skip
    return out


def ttft_in_the_request(results: list[dict], by=("engine", "gpu")) -> list[dict]:
    """Per group of ``results`` (``roofline.sim.validation.stored_results()``), medians over its rows: the
    measured TTFT's share of the request latency (``ttft_share``), the TTFT error (``ttft_error``), that
    error as a share of the request (``ttft_miss_of_request``: TTFT error × TTFT share, what the miss moves)
    and the request latency's |error| (``request_abs_error``). All fractions; the rest of each group's
    figures are ``error_table``'s.

    >>> r = {"engine": "e", "gpu": "g", "ttft_share": 0.05, "ttft_error": -0.6, "tpot_error": 0.0,
    ...      "request_error": -0.04}
    >>> g = ttft_in_the_request([r])[0]
    >>> round(g["ttft_miss_of_request"], 3), g["request_abs_error"]
    (-0.03, 0.04)
    """
    groups: dict = {}
    for r in results:
        groups.setdefault(tuple(r[k] for k in by), []).append(r["ttft_error"] * r["ttft_share"])
    return [{**{k: g[k] for k in by}, "rows": g["rows"], "ttft_share": g["ttft_share"],
             "ttft_error": g["ttft_median_error"],
             "ttft_miss_of_request": float(np.median(groups[tuple(g[k] for k in by)])),
             "request_abs_error": g["request_median_abs_error"]}
            for g in error_table(results, by)]  # fmt: skip
