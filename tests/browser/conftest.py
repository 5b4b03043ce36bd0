"""Real-browser fixtures: the instructor app (Voilà) and JupyterLab on loopback, Debian's Chromium driven
by Playwright.

No browser is downloaded: Playwright launches /usr/bin/chromium (``apt-get install -y chromium``). Every
request to a host other than loopback is aborted, so the tests also prove the app works offline.
Screenshots land in test-artifacts/ (kept by CI as artifacts).

By default every lesson's explorer is driven on one JupyterLab page (``ALL_EXPLORERS_NOTEBOOK``) and the
instructor kit's tests open lesson 16 as an app, which keeps the whole test command within about three
minutes on two cores; set ``SPEED_PHYSICS_ALL_LESSONS=1`` to also open every lesson as an app, one by one.
Each server starts once per test process (session scope), on each pytest-xdist worker that needs it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
LOOPBACK = r"^https?://(127\.0\.0\.1|localhost|\[::1\])(:\d+)?/"


def browser_available() -> bool:
    return Path(CHROMIUM).exists()


def require_browser():
    if not browser_available():
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: .ci/run installs it with apt-get install -y chromium")
        pytest.skip("Chromium not installed (apt-get install -y chromium); browser tests skipped")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Server:
    """A server process on a free loopback port, logging to test-artifacts/; stopped by its own PID."""

    name = "server"

    def _start(self, command: list[str], cwd: Path, env: dict | None = None) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.log = open(ARTIFACTS / f"{self.name}-{self.port}.log", "w")  # noqa: SIM115
        self.proc = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, cwd=cwd, env=env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited early; see {self.log.name}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)  # polling for the port to open, not synchronizing with the page
        raise RuntimeError(f"{self.name} did not open its port within 60 s")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


class VoilaServer(_Server):
    """The instructor app (``roofline.apps.instructor``, Voilà) on a free loopback port, with a token;
    pages are ``page_url("NAME.ipynb")``. ``lessons`` are preheated, as ``uv run instructor 02 16`` does."""

    name = "voila"

    def __init__(self, directory: Path, lessons: tuple[str, ...] = (), extra: tuple[str, ...] = ()):
        self.port = free_port()
        self.token = "browser-test-token"
        self.url = f"http://127.0.0.1:{self.port}"
        names = [str(directory / n) for n in lessons] or [str(directory)]
        self._start(  # the README's instructor app, as a user starts it
            [
                sys.executable,
                "-m",
                "roofline.apps.instructor",
                *names,
                f"--port={self.port}",
                f"--token={self.token}",
                "--VoilaConfiguration.show_tracebacks=True",
                *extra,
            ],
            cwd=directory,
        )

    def page_url(self, notebook: str, query: str = "") -> str:
        return f"{self.url}/voila/render/{notebook}?token={self.token}" + (f"&{query}" if query else "")


class JupyterLabServer(_Server):
    """JupyterLab on a free loopback port, as ``uv run jupyter lab notebooks/`` starts it (plus
    ``--allow-root`` for root, a token, and throwaway settings/workspace directories so no earlier layout
    or news toast leaks in). ``window.jupyterapp`` is exposed for the tests."""

    name = "jupyterlab"

    def __init__(self, directory: Path, home: Path):
        self.port = free_port()
        self.token = "browser-test-token"
        self.url = f"http://127.0.0.1:{self.port}"
        settings = home / "settings"
        (settings / "@jupyterlab/apputils-extension").mkdir(parents=True)
        (settings / "@jupyterlab/apputils-extension/notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False})
        )
        env = {
            **os.environ,
            "JUPYTERLAB_SETTINGS_DIR": str(settings),
            "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        }
        self._start(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--allow-root",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={self.token}",
                "--LabApp.expose_app_in_browser=True",
                f"--ServerApp.root_dir={directory}",
            ],
            cwd=directory,
            env=env,
        )

    def lab_url(self, notebook: str) -> str:
        """The notebook alone in a fresh layout: ``reset`` drops the workspace an earlier test left (its
        notebooks would come back open, and one of them, not this one, could be the current tab)."""
        return f"{self.url}/lab/tree/{notebook}?reset&token={self.token}"


@pytest.fixture(scope="session")
def chromium():
    """One Playwright driver and one Chromium per test process (a second sync Playwright in the same
    process fails: "Sync API inside the asyncio loop")."""
    require_browser()
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def browser(chromium):
    """One Chromium context for the app's pages: they share its HTTP and compiled-script caches, so only
    the first page pays for parsing Voilà's JavaScript bundle."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    yield context
    context.close()


NOTEBOOK_ERROR = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'


def open_page(browser, url: str, ready_selector: str, attempts: int = 3):
    """Open ``url`` with outside hosts blocked and wait until ``ready_selector`` is visible.

    Voilà occasionally never finishes executing a page (about 1 load in 20 on this machine); a fresh
    load starts a fresh kernel, so a bounded retry is the guard. A notebook that raises shows its
    traceback (stderr output) instead: that fails at once with the error's text, without retrying.
    """
    outside = []
    last_error = None
    for _ in range(attempts):
        page = browser.new_page()  # ``browser`` is a context (tests) or a Browser (benchmark)
        page.route(
            "**/*",
            lambda route: (
                route.continue_()
                if _is_loopback(route.request.url)
                else (outside.append(route.request.url), route.abort())
            ),
        )
        try:
            page.goto(url, wait_until="domcontentloaded", timeout=60_000)
            page.wait_for_selector(f"{ready_selector}, {NOTEBOOK_ERROR}", state="visible", timeout=90_000)
        except Exception as err:  # noqa: BLE001 - retried, then re-raised
            last_error = err
            page.close()
            continue
        if page.locator(NOTEBOOK_ERROR).count() and not page.locator(ready_selector).count():
            text = page.locator(NOTEBOOK_ERROR).first.inner_text()[-1500:]
            page.close()
            pytest.fail(f"the notebook raised while running ({url.split('?')[0]}):\n{text}")
        page.outside_requests = outside
        return page
    raise last_error


def _is_loopback(url: str) -> bool:
    import re

    return re.match(LOOPBACK, url) is not None or url.startswith(("data:", "blob:"))


EXPLORER_NOTEBOOK = """
from roofline.course.widgets import Explorer
from roofline.lessons.step_time import StepTimeVsBatch
from roofline.scenario import Scenario
Explorer(StepTimeVsBatch, controls=["batch", "gpu", "usd_per_gpu_hour", "context_tokens"],
         scenario=Scenario(batch=32))
"""

# The numbered lessons run as apps (the Pack 01 self-check has its own test: its controls are answer boxes).
# By default two, one per test file, so both test processes share the work: every lesson's explorer is driven
# on one JupyterLab page (test_lesson_explorers.py), which costs one page load instead of one per lesson.
# SPEED_PHYSICS_ALL_LESSONS=1 opens every lesson as an app.
ALL_LESSONS = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9]*.ipynb"))
# None by default: every explorer is driven on one page (test_lesson_explorers.py), and the instructor kit's
# tests open lesson 16 as an app and move its controls (test_instructor_kit.py).
DEFAULT_LESSONS: list[str] = []
LESSONS = ALL_LESSONS if os.environ.get("SPEED_PHYSICS_ALL_LESSONS") == "1" else DEFAULT_LESSONS


# Every lesson's explorer, built with the lesson's starting scenario in one kernel on one page (one page
# load instead of one per lesson), each marked with its notebook's name; then one more explorer for the GPU
# menu test, which moves its GPU to one GPU of each kind (8 users at 1,000 tokens, so every GPU has a step to
# price). Built in the order of ``lesson_registry.lesson_explorers()``.
ALL_EXPLORERS_NOTEBOOK = f"""
import sys
sys.path.insert(0, {str(ROOT / "tests")!r})
from IPython.display import HTML, display
from lesson_registry import lesson_explorers
from roofline.lessons.token_cost import cost_explorer
from roofline.scenario import Scenario
for lesson, makers in lesson_explorers().items():
    for i, make in enumerate(makers):
        ex = make()
        ex.add_class("roofline-lesson")
        ex.add_class(f"roofline-lesson-{{lesson}}--{{i}}")
        display(ex)
gpu_menu = cost_explorer(Scenario(batch=8, context_tokens=1000))  # fits on every GPU of the tables
gpu_menu.add_class("roofline-gpu-menu")
display(gpu_menu)
display(HTML('<div class="roofline-all-built">every explorer is built</div>'))
"""


def _write_notebook(path: Path, source: str) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def copy_notebooks(directory: Path) -> Path:
    """A temporary copy of the notebooks plus one explorer with every kind of control, and a page with
    every lesson's explorer."""
    for path in (ROOT / "notebooks").glob("*.ipynb"):
        shutil.copy(path, directory / path.name)
    _write_notebook(directory / "explorer_controls.ipynb", EXPLORER_NOTEBOOK)
    _write_notebook(directory / "all_explorers.ipynb", ALL_EXPLORERS_NOTEBOOK)
    return directory


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """JupyterLab serving a temporary copy of the notebooks (once per test process, shared by the JupyterLab
    test files it runs)."""
    require_browser()
    srv = JupyterLabServer(copy_notebooks(tmp_path_factory.mktemp("lab")), tmp_path_factory.mktemp("home"))
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """Voilà serving a temporary copy of the notebooks (one per test process, shared by its modules)."""
    srv = VoilaServer(copy_notebooks(tmp_path_factory.mktemp("app")))
    yield srv
    srv.stop()


SNAPSHOT_JS = """() => Array.from(document.querySelectorAll(
        '.widget-image, .jp-OutputArea img, .widget-html-content'))
    .map(e => e.getAttribute('src') || e.innerText).join('|')"""


def drive_first_control(browser, server, lesson: str) -> None:
    """Open a lesson as an app, move its first slider one step (or pick another option of its first
    dropdown), and wait until a figure or readout on the page changes; no error output may appear."""
    page = open_page(browser, server.page_url(lesson), ".widget-slider, .widget-dropdown")
    page.wait_for_selector(".widget-image, .jp-OutputArea img", state="attached", timeout=60_000)
    before = page.evaluate(SNAPSHOT_JS)
    if page.locator(".widget-slider .noUi-handle").count():
        page.locator(".widget-slider .noUi-handle").first.focus()
        page.keyboard.press("ArrowRight")
    else:
        select = page.locator(".widget-dropdown select").first
        options = select.locator("option").all_inner_texts()
        current = select.evaluate("e => e.options[e.selectedIndex].text")
        select.select_option(label=next(o for o in options if o != current))
    page.wait_for_function(f"(before) => ({SNAPSHOT_JS})() !== before", arg=before, timeout=30_000)
    assert not page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count()
    page.screenshot(path=ARTIFACTS / f"{lesson.removesuffix('.ipynb')}.png", full_page=False)
    assert page.outside_requests == []  # the app's Content-Security-Policy keeps the page on loopback
    page.close()


# What a reader can see of the elements matching a selector (not what the page holds): for each, whether its
# box lies inside the viewport (below ``top``, e.g. a fixed bar's bottom), is not clipped by an ancestor
# that hides overflow, is the element drawn at its centre (nothing covers it), and its computed font size.
# Figures (img.roofline-figure) also report their smallest text on screen: the picture's smallest text
# (``data-text-px`` of the figure's alt text, in its own pixels) times the shown ÷ drawn width.
VISIBILITY_JS = """([selector, top]) => Array.from(document.querySelectorAll(selector))
    .filter(e => !e.closest('details') && e.offsetParent !== null).map(e => {
  const r = e.getBoundingClientRect();
  let clipped = false;
  for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
    const cs = getComputedStyle(a);
    if (/(hidden|clip|auto|scroll)/.test(cs.overflowX + cs.overflowY)) {
      const b = a.getBoundingClientRect();
      if (r.left < b.left - 1 || r.right > b.right + 1 || r.top < b.top - 1 || r.bottom > b.bottom + 1) {
        clipped = true;
      }
    }
  }
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  const alt = e.tagName === 'IMG' && e.parentElement.querySelector('[data-text-px]');
  return {what: (e.dataset.key || e.className || e.tagName).toString().slice(0, 60),
          inside: r.left >= -1 && r.right <= innerWidth + 1 && r.top >= top - 1
                  && r.bottom <= innerHeight + 1,
          clipped, covered: !hit || !(hit === e || e.contains(hit)),
          font: parseFloat(getComputedStyle(e).fontSize),
          figure_text: alt ? parseFloat(alt.dataset.textPx) * r.width / e.naturalWidth : null};
})"""


def assert_visible(page, selector: str, where: str, top: float = 0) -> list[dict]:
    """Every element matching ``selector`` (outside folded details) can be read: inside the viewport below
    ``top``, not clipped, not covered, its text at least 11 px (a figure's smallest text too)."""
    seen = page.evaluate(VISIBILITY_JS, [selector, top])
    assert seen, f"{where}: nothing matches {selector}"
    bad = [
        s
        for s in seen
        if not s["inside"]
        or s["clipped"]
        or s["covered"]
        or s["font"] < 11
        or (s["figure_text"] is not None and s["figure_text"] < 11)
    ]
    assert not bad, f"{where}: {len(bad)} of {len(seen)} not readable: {bad[:4]}"
    return seen
