"""The instructor's kit in the app's pages (template ``speed-physics``): the presenter view steps through the
lesson's idea, its explorer and each question (one per screen) with keyboard navigation; the projector scale
enlarges the widgets' labels, the text and the figures, and at 1280×800 and 1440×900, at 100 % and 150 %,
the explorer's figure, its headline readout and its controls are all readable on one screen, under the
kit's bar; and the start page lists the lessons by title. The app logs no notebook-trust warning."""

from __future__ import annotations

from pathlib import Path

from .conftest import ARTIFACTS, assert_visible, open_page

LESSON = "16_step_time.ipynb"

VISIBLE_JS = """() => {
  const shown = Array.from(document.querySelectorAll('#rendered_cells div[cell-index]'))
    .filter(c => c.offsetParent !== null);
  return {cells: shown.length,
          explorers: shown.filter(c => c.querySelector('.roofline-explorer')).length,
          answers: shown.filter(c => c.querySelector('details.roofline-reveal')).length,
          text: shown.map(c => c.innerText).join('\\n'),
          slide: document.body.getAttribute('data-roofline-slide'),
          slides: Number(document.body.getAttribute('data-roofline-slides'))};
}"""


def test_presenter_view_steps_through_the_idea_the_explorer_and_each_question(browser, server):
    # The first screen (the idea) hides the explorer: wait for the presenter view itself.
    page = open_page(browser, server.page_url(LESSON, "view=presenter"), "body.roofline-presenting")
    page.wait_for_selector(".roofline-explorer", state="attached", timeout=60_000)
    kind = "() => document.body.getAttribute('data-roofline-slide-kind')"
    idea = page.evaluate(VISIBLE_JS)
    assert idea["slides"] >= 4 and idea["slide"] == "1" and page.evaluate(kind) == "idea"
    assert "The idea" in idea["text"] and idea["explorers"] == 0 and idea["answers"] == 0
    assert "The formula" not in idea["text"]  # the idea's section only
    page.screenshot(path=ARTIFACTS / "presenter-slide-1-idea.png")

    page.locator("body").press("PageDown")  # a clicker's "next"
    explorer = page.evaluate(VISIBLE_JS)
    assert explorer["slide"] == "2" and page.evaluate(kind) == "explorer"
    assert explorer["explorers"] == 1 and explorer["answers"] == 0

    page.locator("body").press("PageDown")
    first = page.evaluate(VISIBLE_JS)
    assert first["slide"] == "3" and page.evaluate(kind) == "question"
    assert first["explorers"] == 1 and first["answers"] == 1  # one explorer, one question with its answer
    page.screenshot(path=ARTIFACTS / "presenter-slide-3-question.png")

    page.locator("body").press("PageDown")
    second = page.evaluate(VISIBLE_JS)
    assert second["slide"] == "4" and second["explorers"] == 1 and second["answers"] == 1
    assert second["text"] != first["text"]

    # Arrow keys on a focused slider move the slider, not the slide.
    page.locator(".roofline-explorer .widget-slider .noUi-handle").first.focus()
    page.keyboard.press("ArrowRight")
    assert page.evaluate(VISIBLE_JS)["slide"] == "4"
    page.locator("body").press("PageUp")
    assert page.evaluate(VISIBLE_JS)["slide"] == "3"

    page.keyboard.press("Escape")  # back to the whole page
    whole = page.evaluate(VISIBLE_JS)
    assert whole["cells"] > first["cells"] and whole["slide"] == "3"
    assert not page.evaluate("() => document.body.classList.contains('roofline-presenting')")
    page.close()
    # Voilà runs each page's notebook and shows only that run's outputs: no stored signature is checked.
    assert "is not trusted" not in Path(server.log.name).read_text()


# What must be readable together: the explorer's figure, its headline readout and its controls.
READABLE = (
    ".roofline-explorer img.roofline-figure, .roofline-explorer .roofline-readout-box td[data-key], "
    ".roofline-explorer .roofline-controls select, .roofline-explorer .roofline-controls input"
)
SIZES = [(1280, 800), (1440, 900)]


def show_explorer(page) -> float:
    """Once the page is laid out for the window, scroll the explorer's top to just under the kit's bar;
    returns the bar's bottom (px)."""
    page.wait_for_function(
        "() => Math.abs(document.getElementById('rendered_cells').getBoundingClientRect().right"
        " - innerWidth) < 2"
    )
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    page.evaluate("() => document.querySelector('.roofline-explorer').scrollIntoView({block: 'start'})")
    return page.evaluate("() => document.getElementById('roofline-kit').getBoundingClientRect().bottom")


def test_projector_scale_keeps_figure_readout_and_controls_readable_on_one_screen(browser, server):
    """At 150 % the labels, values and text grow 1.5x, the figure does not shrink, and at 1280×800 and
    1440×900, at 100 % and 150 %, the figure, the headline readout and the controls are all inside the
    window, unclipped, uncovered by the kit's bar and at least 11 px (the figure's smallest text too); the
    readout of a deployment that does not fit wraps instead of being cut."""
    # view=page: the whole page, whatever view an earlier page left remembered
    page = open_page(browser, server.page_url(LESSON, "scale=1&view=page"), ".roofline-explorer td[data-key]")
    page.set_viewport_size({"width": 1440, "height": 900})
    sizes_js = """() => {
      const px = sel => parseFloat(getComputedStyle(document.querySelector(sel)).fontSize);
      const figure = document.querySelector('.roofline-explorer .widget-image').getBoundingClientRect();
      return {label: px('.roofline-explorer .widget-label'), value: px('.roofline-explorer td[data-key]'),
              text: px('.jp-RenderedHTMLCommon p'), figure: figure.width};
    }"""
    before = page.evaluate(sizes_js)
    page.locator("#roofline-kit .roofline-scale-up").click()
    page.locator("#roofline-kit .roofline-scale-up").click()
    assert page.locator("#roofline-scale-label").inner_text() == "150%"
    after = page.evaluate(sizes_js)
    for part in ("label", "value", "text"):
        assert after[part] >= 1.4 * before[part], (part, before, after)
    assert after["figure"] >= before["figure"], (before, after)
    # the token left the address bar (the login cookie carries it)
    assert page.url.endswith("?scale=1&view=page")
    for scale in (1.5, 1):
        page.evaluate(f"() => window.rooflineKit.applyScale({scale})")
        for width, height in SIZES:
            page.set_viewport_size({"width": width, "height": height})
            where = f"{width}x{height} at {scale:.0%}"
            assert_visible(page, READABLE, where, top=show_explorer(page))
            page.screenshot(path=ARTIFACTS / f"projector-{width}x{height}-{scale * 100:.0f}.png")
    back = page.evaluate(sizes_js)
    assert {k: v for k, v in back.items() if k != "figure"} == {
        k: v for k, v in before.items() if k != "figure"
    }

    # 70B on 2 x H100-PCIe with 256 users: no room for their KV cache; the readout says so in full.
    for field, value in (("model", "llama-3-70b"), ("gpu", "h100-pcie"), ("num_gpus", "2")):
        menu = page.locator(f".roofline-explorer .roofline-control-{field} select")
        labels = [t.replace("\xa0", " ").split(" (")[0] for t in menu.locator("option").all_inner_texts()]
        menu.select_option(index=labels.index(value))  # a label may carry a mark: "llama-3-70b (needs ...)"
    box = page.locator(".roofline-explorer .roofline-number", has_text="batch").locator("input")
    box.fill("256")
    box.press("Enter")
    step = page.locator('.roofline-explorer td[data-key="step time"]')
    step.filter(has_text="does not fit").wait_for(timeout=30_000)
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        assert_visible(page, '.roofline-explorer td[data-key="step time"]', f"does not fit, {width}x{height}",
                       top=show_explorer(page))  # fmt: skip
        cut = step.evaluate(
            "e => e.scrollWidth > e.clientWidth + 1 || e.querySelector('b').scrollWidth > e.clientWidth + 1"
        )
        assert not cut, f"the does-not-fit readout is cut at {width}x{height}: {step.inner_text()!r}"
    page.screenshot(path=ARTIFACTS / "projector-does-not-fit.png")
    # the lesson ran as an app without an error output, and its Content-Security-Policy kept it on loopback
    assert not page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count()
    assert page.outside_requests == []
    page.close()


def test_start_page_lists_the_lessons_by_title_and_opens_them(browser, server):
    """The start page (the app's "/") used to be Voilà's list of file names; a lesson opened from it
    runs with the login cookie alone (its link carries no token)."""
    page = open_page(browser, f"{server.url}/?token={server.token}", "ol.roofline-lessons a")
    titles = page.locator("ol.roofline-lessons a").all_inner_texts()
    assert "The step-time model" in titles and not any(t.endswith(".ipynb") for t in titles)
    assert "token" not in page.url
    # The test copy's one-explorer notebook (no heading: listed by its name) is the quickest to run.
    page.locator("ol.roofline-lessons a", has_text="explorer_controls").click()
    page.wait_for_selector(".roofline-explorer td[data-key]", state="visible", timeout=90_000)
    assert page.url.endswith("/voila/render/explorer_controls.ipynb")
    page.close()
