"""The SLO lesson's figure and explorer: the simulated batch over time (``roofline.sim``'s numbers, drawn).

>>> t = BatchTimeline(load=0.9, requests=60)
>>> len(t.png()) > 1000
True
"""

from __future__ import annotations

import functools

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.lines import Line2D

from roofline import engines, sim
from roofline.course.figures import COLORS, LiveFigure, describe, nice_limits
from roofline.course.readouts import cost_text, table_html
from roofline.course.widgets import Explorer, engine_menu, mark_axis, stops_slider
from roofline.scenario import Scenario
from roofline.units import MS


def _run(s, options: dict) -> sim.SimResult:
    """The simulation a timeline figure or readout shows, for a scenario and the explorer's options."""
    return _cached_run(s, tuple(sorted(options.items())))


@functools.lru_cache(maxsize=16)  # the figure and the readout of one slider move share a run
def _cached_run(s, items: tuple) -> sim.SimResult:
    o = dict(items)
    config = sim.SimConfig(
        s.model,
        s.gpu,
        rate_per_s=1.0,
        requests=int(o.get("requests", 150)),
        input_tokens=int(o.get("input_tokens", 2000)),
        output_tokens=int(o.get("output_tokens", 200)),
        chunk_tokens=int(o.get("chunk_tokens", 0)) or None,
        priority="decode-first",
        engine=o.get("engine", "ideal"),
        **s.deployment,
    )
    # the load is a fraction of the closed-form sustainable rate, which any run reports
    probe = sim.simulate(config.with_(requests=1, record_timeline=False))
    return sim.simulate(config.with_(rate_per_s=float(o.get("load", 0.9)) * probe.sustainable_rate_per_s))


class BatchTimeline(LiveFigure):
    """Left: every request as a bar over time, grey while it waits, orange while its prompt is prefilled,
    blue while it decodes. Right: how full the KV cache is, and how many sequences are in prefill and in
    decode at each step. Options: ``load`` (a fraction of the sustainable rate), ``requests``,
    ``input_tokens``, ``output_tokens`` (tokens), ``chunk_tokens`` (0: unchunked)."""

    ncols = 2

    def __repr__(self) -> str:
        s, r = self.scenario, self.result
        load = f"{r.rate_per_s:.3g} req/s, {r.requests} requests"
        return f"<BatchTimeline: {s.model} on {s.num_gpus}x {s.gpu}, {load}>"

    def _build(self):
        left, right = self.axes
        m = self._moving
        phases = (
            ("wait", "#999999", "queued"),
            ("prefill", COLORS["prefill"], "prefill"),
            ("decode", COLORS["decode"], "decode"),
        )
        self.lines = {name: m(LineCollection([], colors=color, linewidths=2.2)) for name, color, _ in phases}
        for lc in self.lines.values():
            left.add_collection(lc)
        left.set(
            xlabel="time (s)", ylabel="request (arrival order)", title="Who is waiting, prefilling, decoding"
        )
        handles = [Line2D([], [], color=color, lw=3, label=label) for _, color, label in phases]
        left.legend(handles=handles, loc="lower left", fontsize=10)  # below the diagonal of bars
        self.kv_line = self._line(right, color=COLORS["kv"], lw=1.5, label="KV cache used (%)")
        self.pf_line = self._line(right, color=COLORS["prefill"], lw=1, label="sequences in prefill")
        self.dec_line = self._line(right, color=COLORS["decode"], lw=1, label="sequences decoding")
        right.set(xlabel="time (s)", ylabel="% of KV cache, or sequences", title="The batch and the KV cache")
        right.legend(loc="upper left", fontsize=10)

    def _draw(self, s):
        r = _run(s, self.options)
        self.result = r
        left, right = self.axes
        i = np.arange(r.requests)
        phases = {
            "wait": (r.arrival_s, r.admitted_s),
            "prefill": (r.admitted_s, r.first_token_s),
            "decode": (r.first_token_s, r.finish_s),
        }
        for name, (a, b) in phases.items():
            ok = np.isfinite(a) & np.isfinite(b)
            seg = np.stack([np.column_stack([a[ok], i[ok]]), np.column_stack([b[ok], i[ok]])], axis=1)
            self.lines[name].set_segments(seg)
        t_end = float(np.nanmax(r.finish_s)) if r.requests_completed else float(np.nanmax(r.arrival_s))
        xlim = nice_limits([t_end], log=False)
        left.set_xlim(xlim)
        left.set_ylim(r.requests, -1)
        t = np.append(r.timeline_t_s, r.timeline_t_s[-1] + r.timeline_step_s[-1]) if r.steps else np.zeros(1)

        def steps(y):
            return np.append(y, y[-1]) if len(y) else np.zeros(1)

        self.kv_line.set_data(t, steps(100 * r.timeline_kv_used_tokens / r.kv_capacity_tokens))
        self.pf_line.set_data(t, steps(r.timeline_prefilling))
        self.dec_line.set_data(t, steps(r.timeline_decoding))
        right.set_xlim(xlim)
        top = max(100.0, float(np.max(r.timeline_decoding + r.timeline_prefilling, initial=1)))
        right.set_ylim(nice_limits([top], log=False))
        o = self.options
        chunk = int(o.get("chunk_tokens", 0))
        chunked = f"chunks of {chunk:,}" if chunk else "unchunked"
        tokens = f"{o.get('input_tokens', 2000):,} in / {o.get('output_tokens', 200):,} out"
        self.fig.suptitle(f"{describe(s)}: {r.rate_per_s:.3g} req/s, {tokens}, {chunked}", fontsize=12)


def timeline_readout(s, options: dict) -> str:
    """HTML table beside the timeline explorer: percentiles, throughput, preemptions, stability.

    >>> from roofline.scenario import Scenario
    >>> text = timeline_readout(Scenario(), {"load": 0.5, "requests": 40})
    >>> "TTFT p50 / p99" in text and "cost per 1M tokens" in text
    True
    """
    r = _run(s, options)
    ttft, tpot = r.ttft_s_percentiles, r.tpot_s_percentiles
    rows = [
        ("arrival rate", f"{r.rate_per_s:.3g} req/s (sustainable: about {r.sustainable_rate_per_s:.3g})"),
        ("requests completed", f"{r.requests_completed} of {r.requests}"),
        ("TTFT p50 / p99", f"{ttft['p50'] / MS:,.0f} / {ttft['p99'] / MS:,.0f} ms"),
        ("TPOT p50 / p99", f"{tpot['p50'] / MS:.1f} / {tpot['p99'] / MS:.1f} ms"),
        ("output tokens/s", f"{r.throughput_output_tokens_per_s:,.0f}"),
        # what the GPUs cost per output token at this load (idle time is paid for too)
        ("cost per 1M tokens", cost_text(s, float(r.throughput_output_tokens_per_s))),
        ("GPU busy", f"{100 * r.busy_fraction:.0f}%"),
        ("preemptions", f"{r.preemptions}"),
    ]
    if r.unstable:
        rows.append(("warning", "the queue grows without bound"))
    return table_html(rows)


def timeline_explorer(scenario=None) -> Explorer:
    """The batch-timeline explorer: load (a fraction of the sustainable rate; the batch follows from it),
    chunk size, prompt and answer lengths, the engine whose step times the server runs on (the ideal
    roofline first), precision, GPUs, model and GPU, over 150 requests (a slider move redraws fast).

    >>> ex = timeline_explorer()
    >>> ex.set(load=0.5); ex.live.options["load"], ex.live.options["engine"]
    (0.5, 'ideal')
    """
    knobs = {
        "load": stops_slider(
            [0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0, 1.1, 1.3], 0.9, "load (× sustainable)"
        ),
        "chunk_tokens": stops_slider([0, 256, 512, 1024, 2048, 4096], 512, "chunk (0 = off)"),
        "input_tokens": mark_axis(
            stops_slider([256, 512, 1000, 2000, 4000, 8000], 2000, "prompt T (tokens)"), "T"
        ),
        "output_tokens": stops_slider([50, 100, 200, 400, 800], 200, "answer (tokens)"),
    }
    engine = engine_menu((scenario or Scenario()).gpu)  # the ideal server first: the lesson's own setting
    engine.options = [(engines.get_engine("ideal").name, "ideal"), *engine.options]
    engine.value = "ideal"
    return Explorer(
        BatchTimeline,
        controls=["weight_precision", "num_gpus", "gpu", "model"],
        scenario=scenario,
        readout=timeline_readout,
        knobs={**knobs, "engine": engine},
    )
