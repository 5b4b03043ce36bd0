"""The instructor's kit in the app's pages (template ``speed-physics``): the presenter view shows one
explorer and one question per screen with keyboard navigation, and the projector scale enlarges the
widgets' labels and the text."""

from __future__ import annotations

from .conftest import ARTIFACTS, open_page

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


def test_presenter_view_shows_one_explorer_and_one_question_per_screen(browser, server):
    page = open_page(browser, server.page_url(LESSON, "view=presenter"), ".roofline-explorer")
    page.wait_for_selector("body.roofline-presenting", timeout=60_000)
    first = page.evaluate(VISIBLE_JS)
    assert first["slides"] >= 2 and first["slide"] == "1"
    assert first["explorers"] == 1 and first["answers"] == 1  # one explorer, one question with its answer
    assert "Predict" not in first["text"] or "1." in first["text"]
    page.screenshot(path=ARTIFACTS / "presenter-slide-1.png")

    page.locator("body").press("PageDown")  # a clicker's "next"
    second = page.evaluate(VISIBLE_JS)
    assert second["slide"] == "2" and second["explorers"] == 1 and second["answers"] == 1
    assert second["text"] != first["text"]

    # Arrow keys on a focused slider move the slider, not the slide.
    page.locator(".roofline-explorer .widget-slider .noUi-handle").first.focus()
    page.keyboard.press("ArrowRight")
    assert page.evaluate(VISIBLE_JS)["slide"] == "2"
    page.locator("body").press("PageUp")
    assert page.evaluate(VISIBLE_JS)["slide"] == "1"

    page.keyboard.press("Escape")  # back to the whole page
    whole = page.evaluate(VISIBLE_JS)
    assert whole["cells"] > first["cells"] and whole["slide"] == "1"
    assert not page.evaluate("() => document.body.classList.contains('roofline-presenting')")
    page.close()


def test_projector_scale_enlarges_labels_values_and_text(browser, server):
    page = open_page(browser, server.page_url(LESSON, "scale=1"), ".roofline-explorer td[data-key]")
    sizes_js = """() => {
      const px = sel => parseFloat(getComputedStyle(document.querySelector(sel)).fontSize);
      return {label: px('.roofline-explorer .widget-label'), value: px('.roofline-explorer td[data-key]'),
              text: px('.jp-RenderedHTMLCommon p')};
    }"""
    before = page.evaluate(sizes_js)
    page.locator("#roofline-kit .roofline-scale-up").click()
    page.locator("#roofline-kit .roofline-scale-up").click()
    assert page.locator("#roofline-scale-label").inner_text() == "150%"
    after = page.evaluate(sizes_js)
    for part in ("label", "value", "text"):
        assert after[part] >= 1.4 * before[part], (part, before, after)
    page.locator(".roofline-explorer").first.scroll_into_view_if_needed()
    page.screenshot(path=ARTIFACTS / "projector-scale-150.png")
    page.locator("#roofline-kit .roofline-scale-down").click()
    page.locator("#roofline-kit .roofline-scale-down").click()
    assert page.evaluate(sizes_js) == before
    page.close()
