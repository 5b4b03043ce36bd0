"""The self-study path: a lesson in JupyterLab, in a real browser, at laptop sizes with the file browser open.

At 1280×800 and 1440×900 the file browser leaves about 1,000 px for the notebook, which is where an
explorer laid out as figure + readout side by side used to clip its readout. For each size: open lesson 16
as a learner does, run all cells,
move each kind of control (a number typed in a box, a slider by keyboard, a dropdown), read the readout
from the page and compare it with the library, check every headline readout value's box lies inside the
window and is not covered, press a question's set-up button below the explorer (the explorer comes back
into view), write a prediction to open its answer, and save screenshots
(test-artifacts/jupyterlab-<W>x<H>-*.png). Separately: the lesson opens unmodified (its stored kernelspec is
the installed one).

Synchronization is by condition (Playwright waits for a page-side predicate), never sleeps.
"""

from __future__ import annotations

import re

from roofline.scenario import Scenario

from .conftest import (
    ARTIFACTS,
    _is_loopback,
)

LESSON = "16_step_time.ipynb"
SIZES = [(1280, 800), (1440, 900)]
EXPLORER = ".jp-Notebook .roofline-explorer"


KERNEL_IDLE_JS = """() => {
  const app = window.jupyterapp;
  const panel = app && app.shell.currentWidget;
  if (!panel || !panel.sessionContext) return false;
  if (!panel.context.isReady || !panel.sessionContext.isReady) return false;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  return !!kernel && kernel.status === 'idle';
}"""

# Every headline readout value (td[data-key] not folded in the details): scroll the notebook vertically
# (never sideways) until it is in the middle of the window, then report its box and whether it is the
# element actually drawn at its centre.
READOUT_BOXES_JS = """(root) => Array.from(document.querySelectorAll(root + ' td[data-key]'))
    .filter(td => !td.closest('details')).map(td => {
  let r = td.getBoundingClientRect();
  let scroller = td.parentElement;
  while (scroller && !(scroller.scrollHeight > scroller.clientHeight
         && /(auto|scroll)/.test(getComputedStyle(scroller).overflowY))) scroller = scroller.parentElement;
  if (scroller) { scroller.scrollTop += r.top - innerHeight / 2; r = td.getBoundingClientRect(); }
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return {key: td.dataset.key, text: td.innerText, left: r.left, right: r.right, top: r.top,
          bottom: r.bottom, width: innerWidth, height: innerHeight,
          drawn: !!hit && (hit === td || td.contains(hit))};
})"""


# Where the explorer's top sits against the top of the notebook's visible area (px; negative: above it).
EXPLORER_TOP_JS = """(root) => {
  const frame = document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer').getBoundingClientRect();
  return document.querySelector(root).getBoundingClientRect().top - frame.top;
}"""


# Scroll the notebook to the first cell whose source contains a text (JupyterLab draws only the cells near
# the view, so a cell far below the explorer is not in the page until then).
SCROLL_TO_CELL_JS = """async (text) => {
  const notebook = window.jupyterapp.shell.currentWidget.content;
  const index = notebook.widgets.findIndex(c => c.model.sharedModel.getSource().includes(text));
  await notebook.scrollToItem(index, 'center');
}"""


def step_ms(text: str) -> float:
    return float(re.search(r"([0-9.]+) ms", text).group(1))


def expected_ms(s: Scenario) -> float:
    return round(s.decode().step_time_s * 1e3, 2)


def readout(page, key: str) -> str:
    return page.locator(f'{EXPLORER} td[data-key="{key}"]').first.inner_text()


def wait_for_readout_change(page, key: str, old: str) -> str:
    page.wait_for_function(
        "([sel, old]) => { const e = document.querySelector(sel); return e && e.innerText !== old; }",
        arg=[f'{EXPLORER} td[data-key="{key}"]', old],
        timeout=30_000,
    )
    return readout(page, key)


def number_box(page, label: str):
    """The typed-value box of the explorer's number control whose label contains ``label``."""
    return page.locator(f"{EXPLORER} .roofline-number", has_text=label).first.locator("input")


def assert_readout_inside_window(page, where: str) -> list[dict]:
    boxes = page.evaluate(READOUT_BOXES_JS, EXPLORER)
    assert boxes, f"{where}: no readout values on the page"
    for b in boxes:
        inside = 0 <= b["left"] and b["right"] <= b["width"] and 0 <= b["top"] and b["bottom"] <= b["height"]
        assert inside and b["drawn"], f"{where}: readout value {b['key']!r} ({b['text']!r}) is clipped: {b}"
    return boxes


# JupyterLab rewrites a notebook's kernelspec metadata once it knows the kernel it started; a stored
# display name that differs from the installed kernel's marks the notebook modified. Wait until either
# happened, then look.
SETTLED_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const spec = panel.model.getMetadata('kernelspec');
  const settled = !!spec && spec.display_name === panel.sessionContext.kernelDisplayName;
  return panel.context.model.dirty || settled;
}"""


def open_lesson(chromium, lab, name: str, width: int, height: int):
    context = chromium.new_context(viewport={"width": width, "height": height})
    context.outside = []
    context.route(
        "**/*",
        lambda route: (
            route.continue_()
            if _is_loopback(route.request.url)
            else (context.outside.append(route.request.url), route.abort())
        ),
    )
    page = context.new_page()
    page.goto(lab.lab_url(name), wait_until="domcontentloaded", timeout=60_000)
    page.wait_for_function(KERNEL_IDLE_JS, timeout=90_000, polling=200)
    return context, page


def test_lesson_opens_unmodified_and_runs_with_the_file_browser_open(lab, chromium):
    """One page load: the lesson opens unmodified, its explorer answers typed values, the slider and a menu
    at the larger laptop size, the headline stays on screen at every size, and a question's set-up and
    prediction work."""
    (width, height), (small_width, small_height) = max(SIZES), min(SIZES)
    context, page = open_lesson(chromium, lab, LESSON, width, height)
    shot = f"jupyterlab-{width}x{height}"
    try:
        page.wait_for_function(SETTLED_JS, timeout=30_000, polling=200)
        assert page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.dirty") is False, (
            "JupyterLab marks the lesson modified on opening: its stored kernelspec is not the installed one "
            "(uv run python tools/refresh_notebooks.py writes the installed one)"
        )
        page.evaluate("() => window.jupyterapp.commands.execute('filebrowser:activate')")
        browser_box = page.locator("#filebrowser").bounding_box()
        assert browser_box and browser_box["width"] > 150, "the file browser is not open"

        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.locator(f'{EXPLORER} td[data-key="step time"]').first.wait_for(state="visible", timeout=90_000)
        page.locator(EXPLORER).first.scroll_into_view_if_needed()
        assert step_ms(readout(page, "step time")) == expected_ms(Scenario(batch=32))
        page.screenshot(path=ARTIFACTS / f"{shot}-1-run.png")

        # 1. Typed values: 64 users with 4,096 tokens each (the lesson's first question).
        for label, value in (("batch", 64), ("context", 4096)):
            text = readout(page, "step time")
            box = number_box(page, label)
            box.fill(str(value))
            box.press("Enter")
            wait_for_readout_change(page, "step time", text)
        s = Scenario(batch=64, context_tokens=4096)
        assert step_ms(readout(page, "step time")) == expected_ms(s)

        # 2. Slider, by keyboard: one step right moves the batch to the next stop above 64.
        text = readout(page, "step time")
        page.locator(f"{EXPLORER} .roofline-number", has_text="batch").first.locator(".noUi-handle").focus()
        page.keyboard.press("ArrowRight")
        text = wait_for_readout_change(page, "step time", text)
        batch = int(number_box(page, "batch").input_value())
        assert batch > 64
        s = s.with_(batch=batch)
        assert step_ms(text) == expected_ms(s)

        # 3. Dropdown: another GPU.
        gpu_menu = page.locator(f"{EXPLORER} .widget-dropdown select").filter(
            has=page.locator("option", has_text="h200")
        )
        gpu_menu.first.select_option("h200")
        text = wait_for_readout_change(page, "step time", text)
        s = s.with_(gpu="h200")
        assert step_ms(text) == expected_ms(s)

        # Every value of the readout's headline is on screen, not cut off or covered, with the file browser
        # open.
        for w, h in (max(SIZES), min(SIZES)):  # the same page, the window made smaller
            page.set_viewport_size({"width": w, "height": h})
            page.locator(EXPLORER).first.scroll_into_view_if_needed()
            boxes = assert_readout_inside_window(page, f"{w}x{h}")
            assert {"step time"} <= {b["key"] for b in boxes}
            page.screenshot(path=ARTIFACTS / f"jupyterlab-{w}x{h}-2-after-controls.png")
        page.set_viewport_size({"width": small_width, "height": small_height})
        shot = f"jupyterlab-{small_width}x{small_height}"

        # 4. A question below the explorer: its set-up button sets the explorer and brings it back into view
        # (the explorer's top at the top of the notebook), rather than leaving it scrolled away above.
        page.evaluate(
            SCROLL_TO_CELL_JS, "Set up question 1"
        )  # a windowed notebook draws only cells near view
        setup = page.locator(".jp-Notebook .roofline-setup").first
        setup.scroll_into_view_if_needed()
        assert page.evaluate(EXPLORER_TOP_JS, EXPLORER) < -50  # the explorer is above, out of view
        text = readout(page, "step time")
        setup.click()
        wait_for_readout_change(page, "step time", text)
        page.wait_for_function(
            f"(root) => Math.abs(({EXPLORER_TOP_JS})(root)) < 40", arg=EXPLORER, timeout=30_000
        )
        assert step_ms(readout(page, "step time")) == expected_ms(Scenario(batch=64, context_tokens=4096))

        # 5. Its answer opens only once a prediction is written.
        question = page.locator(".jp-Notebook .roofline-predict").first
        button = question.locator(".roofline-open-answer")
        question.scroll_into_view_if_needed()
        assert button.is_disabled() and "Your prediction" not in question.inner_text()
        question.locator("textarea").fill("about 15 ms")
        page.wait_for_function("(b) => !b.disabled", arg=button.element_handle(), timeout=30_000)
        button.click()
        question.locator("details.roofline-reveal[open]").wait_for(timeout=30_000)
        assert "Your prediction: about 15 ms" in question.inner_text()
        page.screenshot(path=ARTIFACTS / f"{shot}-3-question.png")
        assert context.outside == []  # nothing left loopback
    finally:
        context.close()
