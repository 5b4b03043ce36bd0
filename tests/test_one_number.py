"""One number per quantity: every figure the notebooks print for the study card's headline quantities (the
batch-1 decode step and its tokens/s, the 32-user step, each user's and the GPU's tokens/s there) is the
library's exact figure or the card's own round figure, and a card figure says it is the card's.

Golden values from hand arithmetic: Llama 3 8B in BF16 reads 15.01 GB per batch-1 step (16,060,522,496
bytes of weights less the 128,256 × 4,096 × 2-byte embedding table, plus the one row a token looks up), at
3.35 TB/s; its KV is 131,072 bytes per token. The card's figures: 16 GB ÷ 3.35 TB/s ≈ 4.8 ms ≈ 200 tok/s;
(16 + 4.1) GB ÷ 3.35 TB/s ≈ 6.0 ms, 1 ÷ 6.0 ms = 167 tok/s each, 32 ÷ 6.0 ms ≈ 5,300 tok/s.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

BW, KV = 3.35e12, 131_072
W_READ = 16_060_522_496 - 128_256 * 4096 * 2 + 4096 * 2
EXACT_B1_MS = round(W_READ / BW * 1e3, 2)  # 4.48
EXACT_B1_TPS = round(BW / W_READ)  # 223
EXACT_B32_MS = round((W_READ + 32 * 1000 * KV) / BW * 1e3, 2)  # 5.73
EXACT_B32_EACH, EXACT_B32_TOTAL = 174, 5582  # 1 ÷ 5.733 ms and 32 ÷ 5.733 ms
CARD = {"b1_ms": 4.8, "b1_tps": 200, "b32_ms": 6.0, "b32_each": 167, "b32_total": 5300}
NUMBER = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*(ms|tok/s|tokens/s)\b")


def _html_blocks(page):
    """An HTML output cut at its blocks; a block under a heading that names the card ("Worked answer, in
    the card's round figures") carries that heading, so its figures read as labelled."""
    heading = ""
    for block in re.split(r"</(?:li|p|tr|h\d)>", page):
        opened = re.search(r"<h\d[^>]*>(.*)", block, re.S)
        if opened:
            heading = opened.group(1)
            yield block
        else:
            yield f"{block} [{heading}]" if "card" in heading.lower() else block


def _segments():
    """(notebook, text) for every line of every output, HTML cut at its blocks and stripped of tags."""
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            for out in cell.get("outputs", []):
                texts = [out.get("text", "")] + [out.get("data", {}).get("text/plain", "")]
                texts += _html_blocks(out.get("data", {}).get("text/html", ""))
                for text in texts:
                    for line in html.unescape(re.sub(r"<[^>]+>", " ", text)).splitlines():
                        if line.strip():
                            yield path.stem, line


SEGMENTS = list(_segments())


def _figures(unit_kind):
    for nb, line in SEGMENTS:
        for m in NUMBER.finditer(line):
            unit = "ms" if m.group(2) == "ms" else "tps"
            if unit == unit_kind:
                yield nb, line, float(m.group(1).replace(",", ""))


def _card_named(line):
    return "card" in line.lower()


# A line about Llama 3 8B's batch-1 decode step on an H100 (not a prefill, a TPOT under load, a launch
# budget, a draft, another precision or machine, or a trap the lesson names as wrong).
BATCH_1 = re.compile(
    r"\bB\s*=\s*1\b|batch[ -]?1\b|\b1 user\b|one user|alone|lone user|floor|exact|card", re.I
)
OTHER = re.compile(
    r"\bP\s*=|TPOT|TTFT|launch|draft|verify|clients|fp8|int8|int4|wrong|measured|predicted|rtx|m4|Q4|"
    r"\b[2-9] GPUs"
)


def _about_batch_1(line):
    return bool(BATCH_1.search(line)) and not OTHER.search(line)


def test_the_golden_values():
    assert (EXACT_B1_MS, EXACT_B1_TPS, EXACT_B32_MS) == (4.48, 223, 5.73)
    step = (W_READ + 32 * 1000 * KV) / BW
    assert (round(1 / step), round(32 / step)) == (EXACT_B32_EACH, EXACT_B32_TOTAL)


def test_the_batch_1_step_has_one_exact_figure_and_the_cards_round_one():
    seen, wrong = set(), []
    for nb, line, v in _figures("ms"):
        if not (4.3 <= v <= 5.0 and _about_batch_1(line)):
            continue
        other = re.search(r"T\s*=\s*[1-9]|[1-9][\d,]* tokens(?!/)|B\s*=\s*(?!1\b)\d|\b(?!1\b)\d+ users", line)
        if other:
            continue  # another context or batch, said so on the line
        if v == EXACT_B1_MS or (v == CARD["b1_ms"] and _card_named(line)):
            seen.add(v)
        else:
            wrong.append((nb, v, line.strip()[:160]))
    assert not wrong, "batch-1 step figures neither exact, the card's nor labelled:\n" + "\n".join(
        map(str, wrong)
    )
    assert seen == {EXACT_B1_MS, CARD["b1_ms"]}


def test_the_batch_1_tokens_per_s_are_exact_or_the_cards():
    wrong = []
    for nb, line, v in _figures("tps"):
        if not (195 <= v <= 235 and _about_batch_1(line)):
            continue
        labelled = re.search(r"T\s*=\s*[1-9]|B\s*=\s*(?!1\b)\d|[1-9][\d,]* tokens(?!/)", line)
        if v == EXACT_B1_TPS or labelled or (v == CARD["b1_tps"] and _card_named(line)):
            continue
        wrong.append((nb, v, line.strip()[:160]))
    assert not wrong, "\n".join(map(str, wrong))


@pytest.mark.parametrize(
    ("unit", "low", "high", "exact", "card"),
    [
        ("ms", 5.6, 6.1, EXACT_B32_MS, CARD["b32_ms"]),
        ("tps", 160, 180, EXACT_B32_EACH, CARD["b32_each"]),
        ("tps", 5200, 5700, EXACT_B32_TOTAL, CARD["b32_total"]),
    ],
)
def test_the_32_user_figures_are_exact_or_the_cards(unit, low, high, exact, card):
    wrong = []
    for nb, line, v in _figures(unit):
        if not (low <= v <= high and re.search(r"B\s*=\s*32\b|\b32 users", line)):
            continue
        if v == exact or (v == card and _card_named(line)):
            continue
        wrong.append((nb, v, line.strip()[:160]))
    assert not wrong, "\n".join(map(str, wrong))
