"""Every lesson's explorer on a laptop screen, in JupyterLab at 1440×900 with the file browser open, all on
one page: one kernel builds each lesson's explorer with its starting scenario (every ``*_explorer`` of each
lesson's package, ``tests/lesson_registry.py``), which costs one page load instead of one per lesson.

On that page: each explorer's controls, figure and headline readout fit in the visible notebook (details may
be folded below) and nothing sticks out sideways; each lesson offers the four controls of a step (B, T, P,
G, unless ``LEFT_OUT`` says why not) and a cost in its headline; each responds to its first control;
figures carry alt text, sliders announce their value and number boxes their name; readouts stay legible in
the Dark theme; controls wrap in an 800 px notebook; and one explorer's GPU menu, moved to a GPU of each kind,
finds a cost each time.
Screenshots: test-artifacts/explorer-<lesson>.png.

Synchronization is by condition (Playwright waits for a selector or a page-side predicate), never sleeps.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lesson_registry import LEFT_OUT, lesson_explorers

import roofline as rl
from roofline.course.widgets import AXES
from roofline.pricing import default_price

from .conftest import ARTIFACTS, assert_visible
from .test_jupyterlab import KERNEL_IDLE_JS, open_lesson

WIDTH, HEIGHT = 1440, 900
NARROW_VIEWPORT = 1232  # with the file browser open, the notebook's explorers are then about 800 px wide
SCREENSHOTS = ["01_token_cost--0", "24_tensor_parallel--0", "44_chunked_prefill--0"]

# For every explorer: how far below its top its controls, figure and headline readout reach (px), the
# rightmost edge of its controls and readout cells, its axis controls, its headline cost cells, and the
# notebook's visible frame.
MEASURE_JS = """() => {
  const scroller = document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer');
  const frame = scroller.getBoundingClientRect();
  return {frame: {top: frame.top, bottom: frame.bottom, height: frame.height, right: frame.right},
          explorers: Array.from(document.querySelectorAll('.roofline-lesson')).map(ex => {
    const name = Array.from(ex.classList).find(c => c.startsWith('roofline-lesson-')).slice(16);
    const top = ex.getBoundingClientRect().top;
    const below = el => el.getBoundingClientRect().bottom - top;
    const headline = Array.from(ex.querySelectorAll(
        '.roofline-readout-box td[data-key], .roofline-readout-box .roofline-case'))
      .filter(e => !e.closest('details'));
    const parts = [ex.querySelector('.roofline-controls'), ex.querySelector('img.roofline-figure'),
                   ...headline];
    const cells = Array.from(ex.querySelectorAll('.roofline-controls > *, .roofline-readout-box td'))
      .filter(e => !e.closest('details'));
    return {name, reach: Math.max(...parts.map(below)),
            right: Math.max(...cells.map(e => e.getBoundingClientRect().right)),
            axes: ['B', 'T', 'P', 'G'].filter(a => ex.querySelector('.roofline-axis-' + a)),
            cost: headline.filter(e => (e.dataset.key || '').startsWith('cost per 1M'))
              .map(e => e.innerText.trim())};
  })};
}"""

# Accessibility, read from the page: each figure's alt text; each number control's slider value as
# announced (aria-valuetext) beside its box's value, and the box's accessible name.
A11Y_JS = """() => ({
  alts: Array.from(document.querySelectorAll('.roofline-lesson img.roofline-figure'))
    .map(i => i.getAttribute('alt') || ''),
  numbers: Array.from(document.querySelectorAll('.roofline-lesson .roofline-number')).map(n => ({
    label: n.querySelector('.roofline-number-label').textContent.trim(),
    announced: n.querySelector('.noUi-handle').getAttribute('aria-valuetext'),
    handle_name: n.querySelector('.noUi-handle').getAttribute('aria-label'),
    box: n.querySelector('input').value,
    box_name: n.querySelector('input').getAttribute('aria-label'),
  })),
})"""

# The contrast ratio (WCAG) of every headline readout cell's text against the background it is drawn on.
CONTRAST_JS = """() => {
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = c => { c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = el => {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) return c;
    }
    return [255, 255, 255];
  };
  return Array.from(document.querySelectorAll('.roofline-lesson .roofline-readout td'))
    .filter(td => !td.closest('details') && td.innerText.trim())
    .map(td => {
      const a = lum(rgb(getComputedStyle(td).color)), b = lum(background(td));
      return {text: td.innerText.trim().slice(0, 40),
              ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)};
    });
}"""


@pytest.fixture(scope="module")
def page(chromium, lab):
    """All the lessons' explorers, run in JupyterLab at 1440×900 with the file browser open."""
    context, page = open_lesson(chromium, lab, "all_explorers.ipynb", WIDTH, HEIGHT)
    page.evaluate("() => window.jupyterapp.commands.execute('filebrowser:activate')")
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_selector(".roofline-all-built", state="attached", timeout=180_000)
    page.wait_for_function(KERNEL_IDLE_JS, timeout=120_000, polling=200)
    page.wait_for_function(  # every figure has arrived and the accessibility script has run
        "() => Array.from(document.querySelectorAll('img.roofline-figure')).every(i => i.complete && i.alt)",
        timeout=60_000,
    )
    yield page
    assert context.outside == []  # nothing left loopback
    context.close()


def test_every_explorer_fits_a_laptop_screen(page):
    m = page.evaluate(MEASURE_JS)
    frame = m["frame"]
    assert frame["height"] > 700, frame  # the notebook's visible height beside the file browser (~780 px)
    built = {e["name"] for e in m["explorers"]}
    assert built == {
        f"{lesson}--{i}" for lesson, makers in lesson_explorers().items() for i in range(len(makers))
    }
    too_tall = {e["name"]: round(e["reach"]) for e in m["explorers"] if e["reach"] > frame["height"]}
    assert not too_tall, (
        f"controls + figure + headline taller than the {frame['height']:.0f} px on screen: {too_tall}"
    )
    too_wide = {e["name"]: round(e["right"]) for e in m["explorers"] if e["right"] > frame["right"] + 1}
    assert not too_wide, (
        f"controls or readout cells past the notebook's right edge ({frame['right']:.0f} px): {too_wide}"
    )
    for name in SCREENSHOTS:
        page.evaluate(
            "(sel) => document.querySelector(sel).scrollIntoView({block: 'start'})",
            f".roofline-lesson-{name}",
        )
        page.screenshot(path=ARTIFACTS / f"explorer-{name.split('--')[0]}.png")


def test_every_lesson_has_the_four_controls_and_a_cost(page):
    m = page.evaluate(MEASURE_JS)
    by_lesson = {}
    for e in m["explorers"]:
        by_lesson.setdefault(e["name"].split("--")[0], set()).update(e["axes"])
        assert e["cost"] and all(c.startswith("$") for c in e["cost"][:1]), (
            f"{e['name']}: no cost in its headline"
        )
    missing = {}
    for lesson, axes in by_lesson.items():
        wanted = {"B", "T", "P", "G"} - {AXES[field] for field in LEFT_OUT.get(lesson, {})}
        if wanted - axes:
            missing[lesson] = "".join(sorted(wanted - axes))
    assert not missing, f"lessons missing one of the four controls (B, T, P, G): {missing}"


def test_figures_sliders_and_number_boxes_are_accessible(page):
    a = page.evaluate(A11Y_JS)
    assert a["alts"] and all(alt.startswith("Figure (") for alt in a["alts"]), a["alts"][:3]
    assert a["numbers"]
    for n in a["numbers"]:
        assert n["announced"] == n["box"], (
            f"slider {n['label']!r} announces {n['announced']!r}, shows {n['box']}"
        )
        assert n["handle_name"] == n["label"] and n["box_name"] == n["label"], n
    batch_32 = [n for n in a["numbers"] if n["label"].startswith("batch") and n["box"] == "32"]
    assert batch_32 and batch_32[0]["announced"] == "32"  # the value, not the index of its stop (8)


def test_readouts_stay_legible_in_the_dark_theme(page):
    try:
        page.evaluate(
            "() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})"
        )
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
        cells = page.evaluate(CONTRAST_JS)
        page.locator(f".roofline-lesson-{SCREENSHOTS[0]}").scroll_into_view_if_needed()
        page.screenshot(path=ARTIFACTS / "explorer-dark-theme.png")
    finally:
        page.evaluate(
            "() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})"
        )
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'", timeout=30_000)
    assert cells
    faint = [c for c in cells if c["ratio"] < 4.5]  # WCAG AA for normal text
    assert not faint, f"{len(faint)} of {len(cells)} readout cells below 4.5:1 in the Dark theme: {faint[:5]}"


def test_controls_wrap_in_an_800_px_notebook(page):
    page.set_viewport_size({"width": NARROW_VIEWPORT, "height": HEIGHT})  # the notebook is then ~800 px wide
    try:
        page.wait_for_function(
            "() => document.querySelector('.roofline-lesson').getBoundingClientRect().width < 820",
            timeout=30_000,
        )
        m = page.evaluate(MEASURE_JS)
    finally:
        page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    page.wait_for_function(  # the lab lays the notebook out again a moment after the resize
        "() => Array.from(document.querySelectorAll('.roofline-lesson'))"
        ".every(e => e.getBoundingClientRect().width > 900)",
        timeout=30_000,
    )
    widths = page.evaluate(
        "() => Array.from(document.querySelectorAll('.roofline-lesson'))"
        ".map(e => e.getBoundingClientRect().width)"
    )
    assert widths and all(w > 900 for w in widths)  # back at 1440 px
    out = {e["name"]: round(e["right"]) for e in m["explorers"] if e["right"] > m["frame"]["right"] + 1}
    assert not out, f"controls or readout cells stick out of an 800 px notebook instead of wrapping: {out}"


# The class that names each explorer's lesson ("roofline-lesson-16_step_time--0"), in page order.
LESSON_NAMES_JS = """() => Array.from(document.querySelectorAll('.roofline-lesson'))
  .map(e => Array.from(e.classList).find(c => c.startsWith('roofline-lesson-')))"""


def assert_each_explorer_readable(page, where: str, shot: str, shown: tuple[str, ...]) -> None:
    """Each explorer's figure scrolled to the top of the notebook: the figure and every headline readout
    value are inside the window, unclipped, uncovered, at least 11 px; a screenshot of those whose lesson
    name contains one of ``shown``."""
    for name in page.evaluate(LESSON_NAMES_JS):
        page.evaluate(
            "(sel) => document.querySelector(sel + ' img.roofline-figure').scrollIntoView({block: 'start'})",
            f".{name}",
        )
        top = page.evaluate(
            "() => document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer')"
            ".getBoundingClientRect().top"
        )
        lesson = name.removeprefix("roofline-lesson-")
        if any(part in lesson for part in shown):
            page.screenshot(path=ARTIFACTS / f"{shot}-{where.split(',')[0]}-{lesson.split('--')[0]}.png")
        selector = f".{name} img.roofline-figure, .{name} .roofline-readout-box td[data-key]"
        assert_visible(page, selector, f"{name} at {where}", top=top)


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (WIDTH, HEIGHT)], ids=["1280x800", "1440x900"])
def test_every_figure_and_its_headline_are_readable_together(page, width, height):
    """With the file browser open, each explorer's figure scrolled to the top of the notebook: the figure
    and every headline readout value are inside the window, unclipped, uncovered, at least 11 px (the
    figure's smallest text as shown too). At 1280×800 the readout goes below the figure, in columns."""
    page.set_viewport_size({"width": width, "height": height})
    try:
        page.wait_for_function(  # the lab lays the notebook out again a moment after the resize
            "(w) => Math.abs(document.querySelector('.jp-NotebookPanel').getBoundingClientRect().right"
            " - w + 50) < 60",
            arg=width,
            timeout=30_000,
        )
        shown = (*SCREENSHOTS[1:], "59_", "16_")
        assert_each_explorer_readable(page, f"{width}x{height}", "explorer", shown)
    finally:
        page.set_viewport_size({"width": WIDTH, "height": HEIGHT})


# An explorer's picture and readout, to see that a control move redrew them.
SNAPSHOT_JS = """(root) => { const ex = document.querySelector(root);
  return ex.querySelector('img.roofline-figure').getAttribute('src') + '|' +
         ex.querySelector('.roofline-readout-box').innerText; }"""


def test_every_explorer_responds_to_its_first_control(page):
    """Each lesson's explorer, driven like a learner: its first slider one step right by keyboard (or its
    first menu to another option); its figure or readout changes and no error appears."""
    names = page.evaluate(
        "() => Array.from(document.querySelectorAll('.roofline-lesson')).map(e => Array.from(e.classList)"
        ".find(c => c.startsWith('roofline-lesson-')))"
    )
    for name in names:
        root = f".{name}"
        explorer = page.locator(root)
        explorer.scroll_into_view_if_needed()
        before = page.evaluate(SNAPSHOT_JS, root)
        if explorer.locator(".widget-slider .noUi-handle").count():
            explorer.locator(".widget-slider .noUi-handle").first.focus()
            page.keyboard.press("ArrowRight")
        else:
            select = explorer.locator(".widget-dropdown select").first
            current = select.evaluate("e => e.selectedIndex")
            select.select_option(index=1 if current == 0 else 0)
        page.wait_for_function(f"([root, before]) => ({SNAPSHOT_JS})(root) !== before", arg=[root, before],
                               timeout=30_000)  # fmt: skip
        assert "Not possible" not in explorer.locator(".roofline-message").inner_text(), name
    assert not page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count()


def test_the_gpu_menu_finds_a_cost_for_every_kind_of_gpu(page):
    explorer = page.locator(".roofline-gpu-menu")
    explorer.scroll_into_view_if_needed()
    menu = explorer.locator(".roofline-control-gpu select")
    costs = {}
    # an option's label may carry a mark ("m4-max (no bf16)"), its place in the menu does not change
    labels = [label.replace("\xa0", " ").split(" (")[0] for label in menu.locator("option").all_inner_texts()]
    assert labels == list(rl.gpus()), labels
    # One GPU of each kind (vendor and form factor) is moved to in the browser: the path from the menu to
    # the readout is the same for all, and tests/test_ui.py prices every GPU of the tables in the kernel.
    kinds = {}
    for index, gpu in enumerate(labels):
        row = rl.get_gpu(gpu)
        kinds.setdefault((row.vendor, row.form_factor), (index, gpu))
    for index, gpu in kinds.values():
        price_id = default_price(gpu).id
        menu.select_option(index=index)
        page.wait_for_function(  # the readout names the new GPU's price row, and the kernel is done
            "([root, id]) => document.querySelector(root + ' [data-key=\"price source\"]')"
            ".textContent.includes(id)",
            arg=[".roofline-gpu-menu", price_id],
            timeout=30_000,
        )
        costs[gpu] = explorer.locator('td[data-key="cost per 1M tokens"]').first.inner_text()
    no_cost = {g: c for g, c in costs.items() if not c.startswith("$")}
    assert not no_cost, f"GPUs without a cost: {no_cost}"


# The instructor kit's projector scale (its stylesheet, read from the instructor template) applied to the
# JupyterLab page: what a class sees of each explorer at 150 % with the side panel closed.
KIT_TEMPLATE = (
    Path(rl.__file__).parent / "apps/jupyter_data/voila/templates/speed-physics/index.html.j2"
).read_text(encoding="utf-8")
KIT_CSS = re.search(r"<style>(.*?)</style>", KIT_TEMPLATE, re.S).group(1)
# The lab page made to look like the app, which shows outputs only: no side bars, prompts or collapsers.
APP_LOOK_CSS = """body.roofline-app-look .jp-OutputPrompt, body.roofline-app-look .jp-InputPrompt,
  body.roofline-app-look .jp-Collapser {display: none !important}"""
TOGGLE_SIDES_JS = """() => { const run = (c, a) => window.jupyterapp.commands.execute(c, a);
  run('application:toggle-left-area'); run('application:toggle-side-tabbar', {side: 'left'});
  run('application:toggle-side-tabbar', {side: 'right'}); }"""


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (WIDTH, HEIGHT)], ids=["1280x800", "1440x900"])
def test_every_explorer_reads_at_projector_scale(page, width, height):
    """At the instructor kit's 150 %, on the lab page made to look like the instructor app (outputs only, no
    side bars): each explorer's figure and headline readout values are inside the window, unclipped,
    uncovered, at least 11 px (the figure's smallest text as shown too)."""
    page.add_style_tag(content=KIT_CSS + APP_LOOK_CSS)
    page.evaluate(TOGGLE_SIDES_JS)
    page.evaluate(
        "() => { document.body.style.setProperty('--roofline-scale', '1.5');"
        " document.body.classList.add('roofline-projector', 'roofline-app-look'); }"
    )
    page.set_viewport_size({"width": width, "height": height})
    try:
        page.wait_for_function(  # the lab lays the notebook out again after the panel closes
            "(w) => { const r = document.querySelector('.jp-NotebookPanel').getBoundingClientRect();"
            " return Math.abs(r.right - w) < 60 && r.left < 60; }",
            arg=width,
            timeout=30_000,
        )
        assert_each_explorer_readable(
            page, f"{width}x{height}, 150 %", "projector", ("16_", "44_", "quantiz")
        )
    finally:
        page.evaluate("() => document.body.classList.remove('roofline-projector', 'roofline-app-look')")
        page.evaluate(TOGGLE_SIDES_JS)
        page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
