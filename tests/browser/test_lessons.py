"""The second half of the lessons, and the Pack 01 self-check cards, driven in a real browser."""

from __future__ import annotations

import pytest

from roofline.lessons.pack01_speed_physics import card

from .conftest import ARTIFACTS, LESSONS, drive_first_control, open_page


@pytest.mark.parametrize("lesson", [n for n in LESSONS if n >= "20"])
def test_lesson_explorer_responds_to_its_first_control(browser, server, lesson):
    drive_first_control(browser, server, lesson)


def test_self_check_card_accepts_the_right_answer_and_names_a_trap(browser, server):
    page = open_page(browser, server.page_url("pack01_speed_physics.ipynb"), ".roofline-selfcheck input")
    first_card = page.locator(".roofline-selfcheck").first
    answer = card("Q1").answers[0]  # the decode floor, in ms, as the library computes it
    box = first_card.locator(".widget-text input").first
    check = first_card.get_by_role("button", name="Check")

    box.fill(f"{answer.value:.2f}")
    box.press("Enter")
    check.click()
    right = first_card.locator('li[data-status="right"]').first
    right.wait_for(timeout=20_000)
    assert f"{answer.value:.2f}" in right.inner_text()

    box.fill(f"{answer.value * 10:.1f}")  # a slipped power of ten
    box.press("Enter")
    check.click()
    trap = first_card.locator('li[data-status="trap"]').first
    trap.wait_for(timeout=20_000)
    assert "power of ten" in trap.inner_text()
    page.screenshot(path=ARTIFACTS / "pack01_speed_physics.png")
    page.close()
