"""Slider latency in a real browser: key press on a slider → the new figure loaded on screen.

    uv run python -m benchmarks.browser_latency [--moves 40]   (from the repository root)
    uv run python -m benchmarks.browser_latency --smoke       (2 moves of the course's explorer only: CI)

Serves (Voilà, loopback only) a notebook with two explorers of the same figure, drives Debian's Chromium
with Playwright, and for each explorer presses ArrowRight/ArrowLeft on its batch slider ``--moves`` times.
Each sample is the time from the keydown event to the ``load`` event of the new picture, both stamped
in the page (performance.now()), so the figure is decoded and ready to paint:
- the course's Explorer (in-place LiveFigure, cached background, JPEG into an Image widget);
- the naive pattern: ``ipywidgets.interact`` whose callback builds a new pyplot figure (inline PNG).
Goal for the course's explorer: median ≤ 50 ms, p95 ≤ 100 ms.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import nbformat
import numpy as np

from tests.browser.conftest import ARTIFACTS, CHROMIUM, LAUNCH_ARGS, VoilaServer, open_page

CELLS = [
    """import matplotlib.pyplot as plt
from ipywidgets import Image, Layout, SelectionSlider, VBox, interact
from roofline.course.widgets import BATCH_OPTIONS, Explorer
from roofline.lessons.step_time import StepTimeVsBatch
from roofline.scenario import Scenario
from benchmarks.explorer_redraw import naive_step_figure_pyplot""",
    """course = Explorer(StepTimeVsBatch, controls=["batch"], scenario=Scenario(batch=32), readout=None)
course.add_class("bench-course")
course""",
    """floor_pictures = [StepTimeVsBatch(Scenario(batch=b)).jpeg() for b in (32, 48)]
floor_image = Image(value=floor_pictures[0], format="jpeg", layout=Layout(width="900px"))
floor_slider = SelectionSlider(options=BATCH_OPTIONS, value=32, description="batch")
def swap(change):
    floor_pictures.reverse()
    floor_image.value = floor_pictures[0]
floor_slider.observe(swap, names="value")
floor = VBox([floor_slider, floor_image])
floor.add_class("bench-floor")
floor""",
    """naive = interact(naive_step_figure_pyplot,
                 batch=SelectionSlider(options=BATCH_OPTIONS, value=32, description="batch"))
naive.widget.add_class("bench-naive")""",
]

# What is measured: the course's explorer, a picture swap with no computation (the transport's floor), and
# the naive pattern; each by the class of its container.
EXPLORERS = (
    ("course Explorer", ".bench-course"),
    ("transport floor (no compute)", ".bench-floor"),
    ("naive interact + new figure", ".bench-naive"),
)

MEASURE_JS = """
async ([root, key]) => {
  const container = document.querySelector(root);
  const handle = container.querySelector('.noUi-handle');
  handle.focus();
  const before = new Set(Array.from(container.querySelectorAll('img')).map(i => i.src));
  let pressed = 0;
  const done = new Promise(resolve => {
    container.addEventListener('load', e => {
      if (e.target.tagName === 'IMG' && !before.has(e.target.src)) resolve(performance.now());
    }, {capture: true});
  });
  handle.addEventListener('keydown', () => { pressed = performance.now(); }, {capture: true, once: true});
  handle.dispatchEvent(new KeyboardEvent('keydown', {key: key, bubbles: true, cancelable: true}));
  const loaded = await Promise.race([done, new Promise(r => setTimeout(() => r(null), 15000))]);
  return loaded === null ? null : loaded - pressed;
}
"""


def measure(page, root: str, moves: int) -> list[float]:
    samples = []
    for i in range(moves):
        key = "ArrowRight" if (i // 6) % 2 == 0 else "ArrowLeft"  # wander between batch 32 and 256
        latency = page.evaluate(MEASURE_JS, [root, key])
        if latency is not None:
            samples.append(latency)
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=40)
    parser.add_argument("--smoke", action="store_true",
                        help="two moves of the course's explorer only: that it runs (CI)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.smoke:
        args.moves = 2
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cells = CELLS[:2] if args.smoke else CELLS  # the smoke: the imports and the course's explorer
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, Path(tmp) / "latency.ipynb")
        (Path(tmp) / "benchmarks").symlink_to(Path(__file__).resolve().parent)
        server = VoilaServer(Path(tmp))
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
                explorers = EXPLORERS[:1] if args.smoke else EXPLORERS
                page = open_page(browser, server.page_url("latency.ipynb"), f"{explorers[-1][1]} img")
                results = {name: measure(page, root, args.moves) for name, root in explorers}
                page.screenshot(path=ARTIFACTS / "browser-latency.png")
                browser.close()
        finally:
            server.stop()
    for name, samples in results.items():
        a = np.array(samples)
        print(
            f"{name:<32} median {np.median(a):6.1f} ms   p95 {np.percentile(a, 95):6.1f} ms   "
            f"n={len(a)} of {args.moves} moves"
        )
    course = np.array(results["course Explorer"])
    ok = np.median(course) <= 50 and np.percentile(course, 95) <= 100
    print(f"goal (median <= 50 ms, p95 <= 100 ms) for the course explorer: {'met' if ok else 'NOT met'}")
    return 0 if all(len(samples) == args.moves for samples in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
