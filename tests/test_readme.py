"""The README's Python examples run as written (tests/test_lint.py keeps them formatted)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("code", BLOCKS, ids=[b.splitlines()[-1][:40] for b in BLOCKS])
def test_a_readme_example_runs(code):
    exec(compile(code, str(README), "exec"), {})  # noqa: S102 - the project's own README
