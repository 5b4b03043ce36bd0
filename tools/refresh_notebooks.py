"""Re-execute notebooks in place on a fresh kernel and strip widget state, so git holds fresh outputs.

    uv run python tools/refresh_notebooks.py                 # every notebook
    uv run python tools/refresh_notebooks.py notebooks/02_decode_floor.ipynb

Stored outputs are what nbval compares against in the test run, so refresh after changing the library.
Widget state (random model ids) is dropped: the saved notebook shows its static figures, and a live
kernel brings the explorers back. So is the accessibility script each explorer shows before itself
(``roofline.course.accessibility``): a saved notebook never runs it, and it would repeat in every explorer
cell. The notebook's kernelspec is written as the installed kernel describes itself (name, display name,
language), so JupyterLab does not mark a notebook modified on opening it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
KERNEL_NAME = "python3"


def installed_kernelspec(name: str = KERNEL_NAME) -> dict:
    """The notebook metadata for the installed kernel ``name``, as JupyterLab writes it on saving."""
    spec = KernelSpecManager().get_kernel_spec(name)
    return {"display_name": spec.display_name, "language": spec.language, "name": name}


def refresh(path: Path) -> float:
    start = time.perf_counter()
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=120, kernel_name=KERNEL_NAME, resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    nb.metadata["kernelspec"] = installed_kernelspec()
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if "outputs" in cell:
            cell.outputs = [o for o in cell.outputs if set(o.get("data", {})) != {"application/javascript"}]
    nbformat.write(nb, path)
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    for path in paths:
        print(f"{path.name}: {refresh(path):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
