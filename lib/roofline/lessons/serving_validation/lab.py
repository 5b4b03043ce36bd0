"""The simulator against measured servers (the rows of ``roofline.sim.validation``), drawn: predicted
against measured, and the residuals."""

from __future__ import annotations

import numpy as np

from roofline import sim
from roofline.course.figures import COLORS, new_figure, nice_limits, show
from roofline.units import MS

ENGINE_COLORS = {"vllm": COLORS["decode"], "tensorrt-llm": COLORS["prefill"], "sglang": COLORS["compute"]}


def _by_engine(results: list[dict]):
    """Each engine's rows and colour, engines in name order."""
    for e in sorted({r["engine"] for r in results}):
        yield e, [r for r in results if r["engine"] == e], ENGINE_COLORS.get(e, COLORS["capacity"])


def validation_figure(results: list[dict]):
    """Simulated (with the engine's step times, ``sim_*``) against measured TTFT (left) and TPOT (right),
    log-log, one colour per engine, with the y = x line: points below it are faster in simulation than on
    the real server. ``results`` are rows of ``roofline.sim.validation``. Returns a picture.

    >>> from roofline.sim import validation
    >>> validation_figure(validation.stored_results()[:20])
    <simulated against measured>
    """
    fig, axes = new_figure(2, figsize=(8, 3.5))  # ~900 points: a compact PNG
    for ax, key, name in ((axes[0], "ttft_s", "TTFT"), (axes[1], "tpot_s", "TPOT")):
        for e, rs, color in _by_engine(results):
            x, y = [r[key] / MS for r in rs], [r["sim_" + key] / MS for r in rs]
            ax.plot(x, y, "o", ms=2.5, color=color, label=e)
        lo, hi = nice_limits(np.array([r[k] / MS for r in results for k in (key, "sim_" + key)]), log=True)
        ax.plot([lo, hi], [lo, hi], color="black", lw=1, ls="--", label="simulated = measured")
        ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel=f"measured mean {name} (ms)",
               ylabel=f"simulated {name}, engine (ms)", title=name)  # fmt: skip
        ax.legend(loc="upper left", fontsize=9)
    return show(fig, "simulated against measured")


def residual_figure(results: list[dict]):
    """The relative error of each row, (simulated − measured) ÷ measured, against its concurrency: TTFT
    (left) and TPOT (right), one colour per engine, the goals (``roofline.sim.validation.GOALS``) shaded.
    A residual plot: a trend with concurrency says which regime the model gets wrong. Returns a picture.

    >>> from roofline.sim import validation
    >>> residual_figure(validation.stored_results()[:20])
    <errors against concurrency>
    """
    fig, axes = new_figure(2, figsize=(8, 3.5))
    for ax, key, name in ((axes[0], "ttft_error", "TTFT"), (axes[1], "tpot_error", "TPOT")):
        goal = sim.validation.GOALS[key.split("_")[0]]
        ax.axhspan(
            -100 * goal, 100 * goal, color=COLORS["overflow"], alpha=0.2, lw=0, label=f"goal ± {goal:.0%}"
        )
        ax.axhline(0, color="black", lw=1)
        rng = np.random.default_rng(0)  # a little horizontal jitter: concurrencies repeat

        for e, rs, color in _by_engine(results):
            x = np.array([r["concurrency"] for r in rs]) * np.exp(rng.uniform(-0.08, 0.08, len(rs)))
            ax.plot(x, np.clip([100 * r[key] for r in rs], -100, 150), "o", ms=2.5, color=color, label=e)
        ax.set(xscale="log", ylim=(-100, 150), xlabel="concurrency (clients)",
               ylabel=f"{name} error (%), clipped at 150",
               title=f"{name}: simulated vs measured")  # fmt: skip
        ax.legend(loc="upper left", fontsize=9)
    return show(fig, "errors against concurrency")


def request_figure(results: list[dict]):
    """The whole request: simulated against measured request latency (left, log-log, the y = x line dashed;
    ``roofline.sim.validation.request_latency_s``), and each row's TTFT error (engine colours) and request
    latency error (black) against the TTFT's share of the measured request (right, log x). Returns a picture.

    >>> from roofline.sim import validation
    >>> request_figure(validation.stored_results()[:20])
    <the whole request>
    """
    fig, (left, right) = new_figure(2, figsize=(8, 3.5))
    latency = {}
    for e, rs, color in _by_engine(results):
        measured = np.array([r["ttft_s"] / r["ttft_share"] for r in rs])
        latency[e] = measured
        left.plot(measured, measured * (1 + np.array([r["request_error"] for r in rs])), "o", ms=2.5,
                  color=color, label=e)  # fmt: skip
        share = [100 * r["ttft_share"] for r in rs]
        right.plot(share, np.clip([100 * r["ttft_error"] for r in rs], -100, 200), "o", ms=2.5, color=color,
                   label=f"{e}: TTFT")  # fmt: skip
    share = [100 * r["ttft_share"] for r in results]
    right.plot(share, np.clip([100 * r["request_error"] for r in results], -100, 200), "o", ms=1.5,
               color="black", label="request latency, all engines")  # fmt: skip
    lo, hi = nice_limits(np.concatenate(list(latency.values())), log=True)
    left.plot([lo, hi], [lo, hi], color="black", lw=1, ls="--", label="simulated = measured")
    left.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel="measured request latency (s)",
             ylabel="simulated, engine (s)", title="Request latency")  # fmt: skip
    right.axhline(0, color="black", lw=1)
    right.set(xscale="log", ylim=(-100, 200), xlabel="TTFT's share of the request (%)",
              ylabel="error (%), clipped at 200", title="TTFT misses, the request holds")  # fmt: skip
    left.legend(loc="lower right", fontsize=8)
    right.legend(loc="upper right", fontsize=8)
    return show(fig, "the whole request")
