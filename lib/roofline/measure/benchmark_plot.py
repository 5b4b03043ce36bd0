"""The picture of a diagnosed result file: each measured time against the floor and the engine.

One row per measurement, on a scale of "times the floor": the floor at 1, the engine's achievable time,
and the measurement. A point left of the floor is physically impossible; far right of the engine is
queueing, a small batch, the CPU or a slower stack. Taught in notebooks/06_benchmarks_that_lie.ipynb;
``roofline diagnose --from FILE --plot OUT`` saves it. matplotlib is imported when a figure is drawn.
"""

from __future__ import annotations

import os
from pathlib import Path

PLOT_SUFFIXES = (".png", ".svg", ".pdf")
FLOOR_COLOR, ENGINE_COLOR, MEASURED_COLOR, IMPOSSIBLE_COLOR = "#1f77b4", "#2ca02c", "#d62728", "#f4cccc"


def rows(result: dict) -> list[dict]:
    """One row per placed measurement: its label and its times relative to the floor.

    >>> rows({"runs": [{"record": 1, "engine": "vllm", "workload": {"concurrency": 16}, "placements": [
    ...     {"metric": "tpot", "alone": False, "measured_over_floor": 1.7, "floor_s": 5e-3,
    ...      "achievable_s": 7.5e-3}]}]})[0]["label"]
    'record 1: TPOT, 16 at a time'
    """
    out = []
    for run in result["runs"]:
        concurrency = run.get("workload", {}).get("concurrency") or 1
        for p in run["placements"]:
            users = f", {concurrency:,.0f} at a time" if concurrency > 1 and not p.get("alone", True) else ""
            out.append(
                {
                    "label": f"record {run['record']}: {p['metric'].upper()}{users}",
                    "measured": p["measured_over_floor"],
                    "engine": p["achievable_s"] / p["floor_s"],
                    "engine_name": run["engine"],
                }
            )
    return out


def draw(result: dict, ax=None):
    """Draw ``result`` (``roofline diagnose --from --json``'s object, or ``from_file.diagnosed``) on ``ax``
    (a new figure if None); returns the figure."""
    import matplotlib.pyplot as plt

    table = rows(result)
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 0.45 * len(table) + 2.2), layout="constrained")
    y = range(len(table))
    top = max([2.0] + [r["measured"] * 1.3 for r in table] + [r["engine"] * 1.3 for r in table])
    ax.axvspan(top / 1e3, 1.0, color=IMPOSSIBLE_COLOR, label="faster than the floor: impossible")
    ax.axvline(1.0, color=FLOOR_COLOR, lw=2, label="the floor (ideal)")
    ax.scatter(
        [r["engine"] for r in table],
        y,
        marker="|",
        s=400,
        lw=3,
        color=ENGINE_COLOR,
        label=f"a tuned engine ({table[0]['engine_name']})" if table else "a tuned engine",
    )
    ax.scatter([r["measured"] for r in table], y, s=60, color=MEASURED_COLOR, zorder=3, label="measured")
    ax.set_yticks(list(y), [r["label"] for r in table])
    ax.invert_yaxis()
    low = min([0.5] + [r["measured"] * 0.8 for r in table])
    ax.set_xscale("log")
    ax.set_xlim(low, top)
    ticks = [t for t in (0.5, 1, 2, 3, 5, 10, 20, 50, 100) if low <= t <= top]
    ax.set_xticks(ticks, [f"{t:g}×" for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("time ÷ the floor's time (1 = the floor)")
    ax.set_title(f"{Path(result['from']).name}: where each measurement sits")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2, fontsize="small", frameon=False)
    return ax.figure


def save_figure(result: dict, path: str | os.PathLike) -> str:
    """Draw ``result`` and save it to ``path`` (the format from its suffix: .png, .svg, .pdf); returns the
    path written. Nothing is written if drawing fails."""
    import matplotlib.pyplot as plt

    figure = draw(result)
    try:
        figure.savefig(path, dpi=120)
    finally:
        plt.close(figure)
    return str(path)
