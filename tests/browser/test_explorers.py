"""Every explorer, driven in a real browser (Voilà + Debian Chromium): controls move, figures and readouts
change to the values the library computes.

Synchronization is by condition (Playwright waits for a selector or a page-side predicate), never sleeps.
"""

from __future__ import annotations

import re

import pytest

import roofline as rl
from roofline.scenario import Scenario

from .conftest import ARTIFACTS, LESSONS, drive_first_control, open_page


def readout(page, key: str) -> str:
    return page.locator(f'td[data-key="{key}"]').first.inner_text()


def wait_for_change(page, selector: str, old: str, attr: str | None = None):
    """Wait until the first element matching ``selector`` no longer shows ``old`` (text or attribute)."""
    getter = f"e.getAttribute({attr!r})" if attr else "e.innerText"
    page.wait_for_function(
        f"([sel, old]) => {{ const e = document.querySelector(sel); return e && {getter} !== old; }}",
        arg=[selector, old],
        timeout=20_000,
    )


def ms(text: str) -> float:
    return float(re.search(r"([0-9.]+) ms", text).group(1))


def expected_ms(s: Scenario) -> float:
    return round(s.decode().step_time_s * 1e3, 2)


def test_every_kind_of_control_updates_figure_and_readout(browser, server):
    page = open_page(browser, server.page_url("explorer_controls.ipynb"), ".roofline-explorer img")
    img = ".roofline-explorer img"
    s = Scenario(batch=32)
    assert ms(readout(page, "step time")) == expected_ms(s)
    page.screenshot(path=ARTIFACTS / "explorer-start.png")

    # 1. Slider, by keyboard: one step right moves batch 32 -> 48.
    src, text = page.get_attribute(img, "src"), readout(page, "step time")
    page.locator(".widget-slider .noUi-handle").first.focus()
    page.keyboard.press("ArrowRight")
    wait_for_change(page, 'td[data-key="step time"]', text)
    s = s.with_(batch=48)
    assert ms(readout(page, "step time")) == expected_ms(s)
    assert page.get_attribute(img, "src") != src
    assert readout(page, "tokens/s total") == f"{s.decode().tokens_per_s_total:,.0f}"

    # 2. Dropdown: another GPU.
    text = readout(page, "step time")
    page.locator(".widget-dropdown", has_text="GPU").locator("select").select_option("h200")
    wait_for_change(page, 'td[data-key="step time"]', text)
    s = s.with_(gpu="h200")
    assert ms(readout(page, "step time")) == expected_ms(s)

    # 3. Typed value: the price per GPU-hour changes the cost, not the step time.
    text = readout(page, "cost per 1M tokens")
    price = page.locator(".widget-text", has_text="GPU-hour").locator("input")
    price.fill("2")
    price.press("Enter")
    wait_for_change(page, 'td[data-key="cost per 1M tokens"]', text)
    s = s.with_(usd_per_gpu_hour=2.0)
    expected_cost = rl.cost_per_million_tokens_usd(2.0, s.decode().tokens_per_s_total)
    assert readout(page, "cost per 1M tokens") == f"${expected_cost:.2f}"
    assert ms(readout(page, "step time")) == expected_ms(s)

    # 4. Out of memory: the last batch (1,024 users x 1,000 tokens) does not fit; no time is shown.
    text = readout(page, "step time")
    page.locator(".widget-slider .noUi-handle").first.focus()
    page.keyboard.press("End")
    wait_for_change(page, 'td[data-key="step time"]', text)
    assert "does not fit" in readout(page, "step time")
    page.screenshot(path=ARTIFACTS / "explorer-out-of-memory.png")
    # Everything comes from loopback: Voila's template links Font Awesome on a CDN, but the icons are also
    # in its bundle, and the app's Content-Security-Policy stops the browser from asking other hosts.
    assert page.outside_requests == []
    page.close()


# The lessons are split over two files so that pytest-xdist (--dist loadfile) runs them on both workers.
@pytest.mark.parametrize("lesson", [n for n in LESSONS if n < "20"])
def test_lesson_explorer_responds_to_its_first_control(browser, server, lesson):
    drive_first_control(browser, server, lesson)
