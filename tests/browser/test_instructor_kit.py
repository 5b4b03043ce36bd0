"""The instructor's kit in the app's pages (template ``speed-physics``): the presenter view shows one
explorer and one question per screen with keyboard navigation, the projector scale enlarges the widgets'
labels, the text and the figures; and the start page lists the lessons by title."""

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


def test_projector_scale_enlarges_labels_values_text_and_the_figure(browser, server):
    """At 150 % on a 1440-px screen the explorer's figure used to shrink (830 -> 585 px) beside a readout
    grown 1.5x; now it grows with the text and the readout moves below it."""
    page = open_page(browser, server.page_url(LESSON, "scale=1"), ".roofline-explorer td[data-key]")
    page.set_viewport_size({"width": 1440, "height": 900})
    sizes_js = """() => {
      const px = sel => parseFloat(getComputedStyle(document.querySelector(sel)).fontSize);
      const figure = document.querySelector('.roofline-explorer .widget-image').getBoundingClientRect();
      return {label: px('.roofline-explorer .widget-label'), value: px('.roofline-explorer td[data-key]'),
              text: px('.jp-RenderedHTMLCommon p'), figure: figure.width,
              room: document.querySelector('#rendered_cells').clientWidth};
    }"""
    before = page.evaluate(sizes_js)
    page.locator("#roofline-kit .roofline-scale-up").click()
    page.locator("#roofline-kit .roofline-scale-up").click()
    assert page.locator("#roofline-scale-label").inner_text() == "150%"
    after = page.evaluate(sizes_js)
    for part in ("label", "value", "text"):
        assert after[part] >= 1.4 * before[part], (part, before, after)
    assert after["figure"] >= min(1.4 * before["figure"], 0.9 * after["room"]), (before, after)
    assert page.url.endswith("?scale=1")  # the token left the address bar (the login cookie carries it)
    page.locator(".roofline-explorer").first.scroll_into_view_if_needed()
    page.screenshot(path=ARTIFACTS / "projector-scale-150.png")
    page.locator("#roofline-kit .roofline-scale-down").click()
    page.locator("#roofline-kit .roofline-scale-down").click()
    back = page.evaluate(sizes_js)
    # the room beside the figure may differ by a scrollbar's width while the page relays out
    assert {k: v for k, v in back.items() if k != "room"} == {k: v for k, v in before.items() if k != "room"}
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
