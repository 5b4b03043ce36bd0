"""Instructor mode and the Jupyter server settings behind the course (the browser tests drive the pages).

The live tests start the real app (``python -m roofline.apps.instructor``) on a directory holding one tiny
notebook and talk HTTP to it: the token, the Host check and the Content-Security-Policy are the server's
behaviour, not its configuration. One test starts JupyterLab as the README's first command does.
"""

import asyncio
import base64
import concurrent.futures
import datetime
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from tornado import web
from traitlets import HasTraits

from roofline.apps import instructor, instructor_server
from roofline.apps.server_latency import enable_tcp_nodelay

ROOT = Path(__file__).resolve().parents[1]


def test_kernel_websocket_turns_off_nagle_before_opening():
    from jupyter_server.services.kernels.websocket import KernelWebsocketHandler

    assert enable_tcp_nodelay()
    calls = []

    class Handler:  # stands in for a connection: records the socket option, then the real open fails
        def set_nodelay(self, value):
            calls.append(value)

    opening = KernelWebsocketHandler.open(Handler(), "kernel-id")
    with pytest.raises((AttributeError, TypeError)):  # step the coroutine by hand: no event loop needed
        opening.send(None)
    assert calls == [True]


def test_jupyterlab_loads_the_extension_from_the_environment():
    config = Path(sys.prefix) / "etc/jupyter/jupyter_server_config.d/roofline.json"
    assert (
        json.loads(config.read_text())["ServerApp"]["jpserver_extensions"]["roofline.apps.server_latency"]
        is True
    )


@pytest.mark.parametrize("name", ["jupyter_server_config.json", "jupyter_server_config.d/roofline.json"])
def test_the_environment_holds_the_projects_jupyter_settings(name):
    """The package installs jupyter-config/ into the environment (uv reinstalls it when they change)."""
    installed = Path(sys.prefix) / "etc/jupyter" / name
    assert json.loads(installed.read_text()) == json.loads((ROOT / "jupyter-config" / name).read_text())


def test_jupyterlab_starts_as_the_readme_says_and_quietly(tmp_path):
    """`uv run jupyter lab notebooks/` starts as root too (Docker, cloud VMs) and prints no traitlets
    DeprecationWarning (notebook_shim's start-up scan) and no list of 19 "skipped" language servers."""
    port, token = _free_port(), "readme-token"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path), "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path)}
    log = open(tmp_path / "lab.log", "w+")  # noqa: SIM115
    command = [sys.executable, "-m", "jupyterlab", "notebooks/", "--no-browser", f"--ServerApp.port={port}"]
    proc = subprocess.Popen(
        [*command, "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_for_port(proc, port)
        # The language-server scan runs after start-up; /lsp/status answers once it has finished.
        assert _get(f"http://127.0.0.1:{port}/lsp/status?token={token}")[0] == 200
    finally:
        proc.terminate()
        proc.wait(10)
    log.seek(0)
    output = log.read()
    assert "roofline: TCP_NODELAY" in output  # it did start, with the course's extension
    assert "Running as root" not in output
    assert "DeprecationWarning" not in output
    assert "Skipped non-installed server" not in output


# --- argument parsing: `uv run instructor --port 8870` serves the lessons, not the current directory ----


@pytest.mark.parametrize("args", [["--port", "8870"], ["--port=8870"]])
def test_port_with_or_without_equals_serves_the_lessons(args):
    plan = instructor.build_plan(args)
    assert plan.port == 8870 and plan.config["Voila"]["port"] == 8870
    assert plan.root == instructor.course_notebooks().resolve()  # the lessons, not the current directory
    assert plan.argv == [str(instructor.course_notebooks().resolve())]  # "8870" is not taken for a path


@pytest.mark.parametrize("args", [["16", "--port", "8870"], ["--port", "8870", "16"], ["--port=8870", "16"]])
def test_a_lesson_and_a_port_in_any_order(args):
    plan = instructor.build_plan(args)
    assert plan.port == 8870 and plan.lessons == ["16_step_time.ipynb"]


def test_unknown_lesson_and_stray_words_are_refused_with_a_hint():
    with pytest.raises(SystemExit, match="no lesson matches '99'"):
        instructor.build_plan(["99"])
    with pytest.raises(SystemExit, match="--name=value"):  # a Voilà option's value given as a word
        instructor.build_plan(["16", "--theme", "dark"])


def test_voila_options_pass_through_and_override_the_defaults():
    plan = instructor.build_plan(["--no-browser", "--VoilaConfiguration.show_tracebacks=True"])
    assert plan.argv[1:] == ["--no-browser", "--VoilaConfiguration.show_tracebacks=True"]


@pytest.mark.parametrize(
    "option, hint",
    [
        ("--Voila.ip=0.0.0.0", "127.0.0.1 only"),
        ("--ip=0.0.0.0", "127.0.0.1 only"),
        ("--Voila.token=", "--token T, or --no-token"),
        ("--IdentityProvider.token=", "--token T, or --no-token"),
        ("--Voila.tornado_settings={}", "Host check and the Content-Security-Policy"),
        ("--Voila.tornado-settings={}", "Host check and the Content-Security-Policy"),
        ("--Voila.port=9999", "--port N"),
        ("--Voila.identity_provider_class=x.Y", "token check"),
        ("--ServerApp.ip=0.0.0.0", "127.0.0.1 only"),  # ignored by Voilà: refused rather than misleading
    ],
)
def test_options_that_undo_the_promises_are_refused_with_a_hint(option, hint):
    with pytest.raises(SystemExit, match=re.escape(f"refusing {option}: ") + ".*" + re.escape(hint)):
        instructor.build_plan(["16", option])


def test_a_setting_from_a_config_file_that_breaks_a_promise_is_named():
    plan = instructor.build_plan(["16", "--token=t", "--port=8870"])
    kept = SimpleNamespace(
        ip="127.0.0.1",
        port=8870,
        token="t",
        auto_token=False,
        identity_provider_class=instructor_server.PasswordIdentityProvider,
        authorizer_class=instructor_server.AllowAllAuthorizer,
        tornado_settings=instructor_server.tornado_settings(),
    )
    assert instructor_server.broken_promises(kept, plan) == []
    public = SimpleNamespace(**{**vars(kept), "ip": "0.0.0.0", "tornado_settings": {}})
    problems = " ".join(instructor_server.broken_promises(public, plan))
    assert "Voila.ip is '0.0.0.0'" in problems
    assert "drops the Host check" in problems and "replaces the Content-Security-Policy" in problems
    other_token = SimpleNamespace(**{**vars(kept), "token": ""})
    assert "Voila.token" in " ".join(instructor_server.broken_promises(other_token, plan))


def test_a_route_without_a_host_check_stops_the_app_from_starting():
    class PlainHandler(web.RequestHandler):
        pass

    routes = [("/voila/files/(.*)", instructor_server.AllowListFileHandler, {"path": "/tmp"})]
    guarded = instructor_server.guard_routes(routes, "/", Path("/tmp"), [])
    assert guarded[0][1] is instructor_server.GuardedFileHandler and guarded[0][2] == {"path": "/tmp"}
    with pytest.raises(SystemExit, match="/new/route .PlainHandler. has no Host check"):
        instructor_server.guard_routes([("/new/route", PlainHandler)], "/", Path("/tmp"), [])


def test_a_random_token_by_default_in_every_printed_url():
    first, second = instructor.build_plan([]), instructor.build_plan([])
    assert len(first.token) >= 20 and first.token != second.token  # random per start
    assert first.config["Voila"]["token"] == first.token
    assert all(url.endswith(f"?token={first.token}") for url in first.urls())
    plan = instructor.build_plan(["16", "--no-token"])
    assert plan.token == "" and "token" not in " ".join(plan.urls())


def test_scale_and_presenter_go_into_the_urls():
    plan = instructor.build_plan(["16", "--token=t", "--scale", "1.5", "--presenter"])
    assert plan.urls()[1].endswith("/voila/render/16_step_time.ipynb?token=t&scale=1.5&view=presenter")


def test_kernels_are_culled_when_their_page_is_closed_but_not_while_it_is_open():
    culling = instructor.build_plan([]).config["MappingKernelManager"]
    assert culling["cull_idle_timeout"] == instructor.CULL_IDLE_SECONDS > 0
    assert 0 < culling["cull_interval"] <= culling["cull_idle_timeout"]
    assert culling["cull_connected"] is False  # a projector tab left open keeps its kernel
    assert (
        instructor.build_plan(["--cull-idle-seconds=30"]).config["MappingKernelManager"]["cull_idle_timeout"]
        == 30
    )


def test_live_kernels_are_capped_and_the_cap_leaves_room_beside_the_preheated_ones():
    assert (
        instructor.build_plan([]).config["CourseKernelManager"]["max_kernels"] == instructor.MAX_KERNELS > 0
    )
    assert instructor.build_plan(["--max-kernels=0"]).config["CourseKernelManager"]["max_kernels"] == 0
    with pytest.raises(SystemExit, match="give at least 3"):
        instructor.build_plan(["02", "16", "--max-kernels=2"])


def test_named_lessons_and_only_those_get_a_preheated_kernel():
    plan = instructor.build_plan(["02", "16"])
    assert plan.config["VoilaConfiguration"]["preheat_kernel"] is True
    pools = plan.config["VoilaKernelManager"]["kernel_pools_config"]
    assert pools == {
        "default": {"pool_size": 0},
        "02_decode_floor.ipynb": {"pool_size": 1},
        "16_step_time.ipynb": {"pool_size": 1},
    }
    assert "preheat_kernel" not in instructor.build_plan([]).config["VoilaConfiguration"]
    assert "preheat_kernel" not in instructor.build_plan(["16", "--no-preheat"]).config["VoilaConfiguration"]


def test_policy_keeps_websockets_and_forms_on_this_server():
    directives = dict(d.strip().split(" ", 1) for d in instructor_server.CONTENT_SECURITY_POLICY.split(";"))
    assert directives["connect-src"] == "'self'"  # no `ws: wss:`: those allow websockets to any host
    assert directives["form-action"] == "'self'"
    assert "http" not in instructor_server.CONTENT_SECURITY_POLICY


def test_the_course_template_is_found_by_voila():
    from voila.paths import collect_template_paths

    instructor_env = {"JUPYTER_PATH": str(instructor_server.JUPYTER_DATA)}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", instructor_env["JUPYTER_PATH"])
        paths = collect_template_paths(["voila", "nbconvert"], instructor_server.TEMPLATE)
    found = [p for p in paths if (Path(p) / "index.html.j2").exists()]
    assert Path(found[0]) == instructor_server.JUPYTER_DATA / "voila/templates" / instructor_server.TEMPLATE
    assert any(Path(p).name == "lab" for p in found)  # it builds on Voilà's lab template


# --- the kernels: the cap, and a preheated kernel's idle time ----------------------------------------------

NOW = datetime.datetime.now(datetime.UTC)


def _run(coroutine):
    """Run a coroutine in a thread of its own: in a pytest process that also ran the browser tests,
    Playwright's sync API holds this thread's event loop, and asyncio.run would refuse."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


class FakeKernels(HasTraits):
    """Stands in for Jupyter's MappingKernelManager: kernels with a state, connections and last activity."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.kernels, self._kernel_connections, self.started = {}, {}, 0
        self.log = SimpleNamespace(info=lambda *a: None)

    def list_kernel_ids(self):
        return list(self.kernels)

    def get_kernel(self, kernel_id):
        return self.kernels[kernel_id]

    def add(self, kernel_id, state="idle", connections=0, idle_minutes=10):
        last = NOW - datetime.timedelta(minutes=idle_minutes)
        self.kernels[kernel_id] = SimpleNamespace(execution_state=state, last_activity=last)
        self._kernel_connections[kernel_id] = connections

    default_kernel_name = "python3"

    def __contains__(self, kernel_id):
        return kernel_id in self.kernels

    async def start_kernel(self, **kwargs):
        self.started += 1
        self.add(f"new-{self.started}", idle_minutes=0)
        self.start_arguments = kwargs
        return f"new-{self.started}"

    async def shutdown_kernel(self, kernel_id):
        del self.kernels[kernel_id]

    async def cull_kernel_if_idle(self, kernel_id):
        self.culled = kernel_id


class Ready:
    """A finished pool task, as Voilà keeps them."""

    def __init__(self, kernel_id):
        self.kernel_id = kernel_id

    def done(self):
        return True

    def cancelled(self):
        return False

    def exception(self):
        return None

    def result(self):
        return {"kernel_id": self.kernel_id}


def _capped(max_kernels, base=FakeKernels):
    factory = instructor_server.course_kernel_manager_factory(lambda *a, **k: base)
    return factory(None, False, 0)(max_kernels=max_kernels)


def test_one_kernel_too_many_shuts_down_a_closed_pages_kernel_first():
    manager = _capped(3)
    manager.add("projector", connections=1, idle_minutes=30)  # an open page, idle for long
    manager.add("closed", connections=0, idle_minutes=5)  # a page closed five minutes ago
    manager.add("busy", state="busy", idle_minutes=60)
    new = _run(manager.start_kernel())
    assert set(manager.kernels) == {"projector", "busy", new}
    _run(manager.start_kernel())  # no closed page left: the open page idle longest goes
    assert "projector" not in manager.kernels and "busy" in manager.kernels


def test_when_no_kernel_can_go_a_new_page_gets_a_clear_message():
    manager = _capped(2)
    manager.add("busy", state="busy")
    manager.add("loading", idle_minutes=0)  # a page still loading (active seconds ago)
    with pytest.raises(web.HTTPError) as refused:
        _run(manager.start_kernel())
    assert refused.value.status_code == 503
    assert "All 2 lesson kernels are in use" in refused.value.log_message
    assert "--max-kernels" in refused.value.log_message
    assert set(manager.kernels) == {"busy", "loading"}


def test_a_spare_kernel_with_the_lessons_imports_goes_to_the_next_new_page():
    manager = _capped(4)

    async def session():
        await manager.start_spare()
        spare = manager.spare_id
        warm_up = manager.start_arguments["extra_arguments"]
        assert warm_up == [f"--IPKernelApp.exec_lines={instructor_server.SPARE_WARM_UP}"]
        await manager.cull_kernel_if_idle(spare)  # waiting idle and unconnected is its job
        assert not hasattr(manager, "culled")
        assert await manager.start_kernel(kernel_name="python3", path="") == spare
        assert manager.spare_id is None  # the next one starts spare_delay_s later
        assert await manager.start_kernel(kernel_name="python3", path="") != spare

    _run(session())


def test_no_spare_kernel_in_the_caps_last_place():
    manager = _capped(3)
    manager.add("a")
    manager.add("b")
    _run(manager.start_spare())
    assert manager.spare_id is None and set(manager.kernels) == {"a", "b"}


def test_no_cap_when_max_kernels_is_zero():
    manager = _capped(0)
    for _ in range(5):
        _run(manager.start_kernel())
    assert len(manager.kernels) == 5


def test_a_preheated_kernel_taken_by_a_page_starts_its_idle_time_afresh():
    """The culler must not shut down a pool kernel in the seconds between a page taking it and the page's
    websocket connecting (its idle time must not run from the end of preheating); and taking it (which
    starts the pool's refill) first makes room under the cap."""

    class PoolManager(FakeKernels):  # stands in for Voilà's preheating kernel manager
        async def get_rendered_notebook(self, notebook_name):
            self._pools[notebook_name].remove(self.taken)
            return "render-task", ["<div>cell</div>"], "pooled"

    manager = _capped(2, base=PoolManager)
    manager.add("pooled", idle_minutes=60)  # waiting in the pool since long: never shut down for room
    manager.add("closed", idle_minutes=5)
    manager.taken = Ready("pooled")
    manager._pools = {"16_step_time.ipynb": [manager.taken]}
    before = datetime.datetime.now(datetime.UTC)
    taken = _run(manager.get_rendered_notebook("16_step_time.ipynb"))
    assert taken == ("render-task", ["<div>cell</div>"], "pooled")  # Voilà's answer, unchanged
    assert manager.kernels["pooled"].last_activity >= before
    assert "closed" not in manager.kernels  # room for the refill


def test_a_pool_kernel_taken_by_another_page_while_room_was_made_is_a_503_not_a_500():
    """Two pages of one lesson at once: the first waits while a kernel shuts down to make room, the second
    takes the lesson's last waiting kernel meanwhile. The first then gets the cap's kind of answer (503,
    reload), not Voilà's "Kernel pool is empty" exception (a 500)."""
    from tornado import web

    class PoolManager(FakeKernels):
        async def shutdown_kernel(self, kernel_id):
            await super().shutdown_kernel(kernel_id)
            self._pools["16_step_time.ipynb"].clear()  # the other page took it while we waited

        async def get_rendered_notebook(self, notebook_name):
            if not self._pools.get(notebook_name):
                raise Exception(f"Kernel pool for {notebook_name} is empty!")  # as Voilà does
            return "render-task", [], self._pools[notebook_name].pop(0).kernel_id

    manager = _capped(2, base=PoolManager)
    manager.add("pooled", idle_minutes=0)
    manager.add("closed", idle_minutes=5)
    manager._pools = {"16_step_time.ipynb": [Ready("pooled")]}
    with pytest.raises(web.HTTPError) as err:
        _run(manager.get_rendered_notebook("16_step_time.ipynb"))
    assert err.value.status_code == 503 and "Reload" in err.value.log_message


# --- the start page ---------------------------------------------------------------------------------------


def test_the_start_page_lists_the_named_lessons_by_title():
    named = instructor_server.lesson_links(
        instructor.course_notebooks(), ["02_decode_floor.ipynb", "16_step_time.ipynb"]
    )
    every = instructor_server.lesson_links(instructor.course_notebooks())
    page = instructor_server.start_page_html(named, every, "/", "scale=1.5")
    today = page.split("<details>")[0]
    assert re.findall(r"<a href=\"[^\"]+\">([^<]+)</a>", today)[:2] == [
        "The decode floor",
        "The step-time model",
    ]
    assert '<a href="/voila/render/02_decode_floor.ipynb?scale=1.5">' in today
    assert ".ipynb</a>" not in page  # titles, never file names
    assert len(every) == len(
        list(instructor.course_notebooks().glob("*.ipynb"))
    )  # every lesson below, folded
    assert every[0].notebook == "00_start_here.ipynb" and every[1].number == "01"


def test_a_notebook_outside_the_course_map_is_listed_by_its_first_heading(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("Intro\n\n## My own demo\n")])
    nbformat.write(nb, tmp_path / "demo.ipynb")
    assert [(x.number, x.title) for x in instructor_server.lesson_links(tmp_path)] == [("", "My own demo")]


# --- the running app ---------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(proc, port: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        assert proc.poll() is None, "the server exited early"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        assert time.monotonic() < deadline, "the server did not open its port"
        time.sleep(0.1)  # polling for the port, not synchronizing with a page


# A 1x1 PNG the lesson shows as an image (served by /voila/files/).
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


# An SVG with a script, as anyone could drop into the notebooks' folder.
SCRIPTED_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg"><script>fetch("/api/kernels")</script>'
    '<rect width="1" height="1"/></svg>'
)


def _start_app(directory: Path, *args: str):
    port = _free_port()
    log = open(directory / "voila.log", "w+")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "roofline.apps.instructor", *args, f"--port={port}"],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=directory,
    )
    _wait_for_port(proc, port)
    return proc, port, log


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The app with one lesson named (so it is preheated and Voilà's /voila/query route exists)."""
    directory = tmp_path_factory.mktemp("lessons")
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# A lesson\n\n![a pixel](pixel.png)")]
    )
    nbformat.write(nb, directory / "lesson.ipynb")
    (directory / "pixel.png").write_bytes(PIXEL)
    (directory / "drawing.svg").write_text(SCRIPTED_SVG)
    token = "secret-token"
    proc, port, log = _start_app(directory, str(directory / "lesson.ipynb"), f"--token={token}")
    yield f"http://127.0.0.1:{port}", port, token, log
    proc.terminate()
    proc.wait(10)
    log.close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _get(url: str, host: str | None = None, headers: dict | None = None, data: bytes | None = None):
    request = urllib.request.Request(
        url, data=data, headers={**({"Host": host} if host else {}), **(headers or {})}
    )
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read().decode(errors="replace")
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), ""


def _lesson_page(url: str, token: str):
    """Open the lesson (it takes a kernel): the page, its kernel id and the cookies a browser would keep."""
    request = urllib.request.Request(f"{url}/voila/render/lesson.ipynb?token={token}")
    with urllib.request.urlopen(request, timeout=60) as response:
        page = response.read().decode()
        cookies = [c.split(";")[0] for c in response.headers.get_all("Set-Cookie") or []]
    kernel_id = re.search(r'"kernelId": "([0-9a-f-]+)"', page).group(1)
    return page, kernel_id, dict(c.split("=", 1) for c in cookies)


@pytest.fixture(scope="module")
def lesson(app):
    """The lesson opened once (on its preheated kernel): page, kernel id, cookies."""
    url, _, token, _ = app
    return _lesson_page(url, token)


def _wait_until_idle(url: str, kernel_id: str, token: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while json.loads(_get(f"{url}/api/kernels/{kernel_id}?token={token}")[2])["execution_state"] != "idle":
        assert time.monotonic() < deadline, "the kernel never became idle"
        time.sleep(0.1)  # polling the kernel's state


def test_app_prints_the_url_with_its_token(app):
    _, port, token, log = app
    log.seek(0)
    assert f"http://127.0.0.1:{port}/?token={token}" in log.read()


def test_app_wants_the_token(app):
    url, _, token, _ = app
    assert _get(f"{url}/")[0] in (302, 403)  # to the login page
    assert _get(f"{url}/?token=wrong")[0] in (302, 403)
    status, headers, _ = _get(f"{url}/?token={token}")
    assert status == 200
    assert headers["Content-Security-Policy"] == instructor_server.CONTENT_SECURITY_POLICY


# One path per kind of route: pages, the file list, a notebook's files, the contents API, Voilà's and the
# template's scripts, the lab extensions, the login page.
ROUTES = [
    "/",
    "/voila/render/lesson.ipynb",
    "/voila/tree",
    "/voila/files/pixel.png",
    "/voila/api/contents",
    "/voila/static/voila.js",
    "/voila/templates/lab/static/index.css",
    "/voila/labextensions/@jupyter-widgets/jupyterlab-manager/package.json",
    "/login",
]


@pytest.mark.parametrize("path", ROUTES)
@pytest.mark.parametrize("host", ["evil.example", "192.168.1.10"])
def test_every_route_refuses_other_host_names_even_with_the_token(app, path, host):
    url, port, token, _ = app
    assert _get(f"{url}{path}?token={token}", host=f"{host}:{port}")[0] == 403


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_app_answers_to_loopback_names(app, host):
    url, port, token, _ = app
    assert _get(f"{url}/?token={token}", host=f"{host}:{port}")[0] == 200


def test_a_notebooks_files_want_the_token(app):
    url, _, token, _ = app
    assert _get(f"{url}/voila/files/pixel.png")[0] in (302, 403)
    status, headers, _ = _get(f"{url}/voila/files/pixel.png?token={token}")
    assert status == 200 and headers["Content-Type"] == "image/png"


def _query(port: int, kernel_id: str, token: str = "", host: str = "") -> str:
    """Connect to /voila/query/<kernel> as a web page or a script could: what it hands out, or the refusal."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    async def ask():
        url = f"ws://127.0.0.1:{port}/voila/query/{kernel_id}" + (f"?token={token}" if token else "")
        try:
            connection = await websocket_connect(HTTPRequest(url, headers={"Host": host} if host else {}))
        except Exception as err:  # noqa: BLE001 - the refusal is the answer
            return f"refused: {err}"
        return await asyncio.wait_for(connection.read_message(), 30)

    return _run(ask())


def test_the_request_info_route_wants_the_token_and_a_local_host(app, lesson):
    """/voila/query/<kernel> handed the page's query string, token included, to anyone who connected."""
    _, port, token, _ = app
    _, kernel_id, _ = lesson
    assert _query(port, kernel_id) == "refused: HTTP 403: Forbidden"
    assert _query(port, kernel_id, token, host="evil.example") == "refused: HTTP 403: Forbidden"
    assert json.loads(_query(port, kernel_id, token))["SCRIPT_NAME"] == "/voila/render/lesson.ipynb"


def test_closing_a_page_shuts_its_kernel_down(app, lesson):
    """Voilà's page sends its _xsrf cookie back when it closes (navigator.sendBeacon): without that cookie
    set, the server would refuse it (403) and the kernel would stay until the culler came."""
    url, _, token, _ = app
    _, kernel_id, cookies = lesson
    assert "_xsrf" in cookies
    assert _get(f"{url}/api/kernels/{kernel_id}?token={token}")[0] == 200
    boundary = "beacon"
    field = 'Content-Disposition: form-data; name="_xsrf"'
    form = f"--{boundary}\r\n{field}\r\n\r\n{cookies['_xsrf']}\r\n--{boundary}--\r\n"
    status, _, _ = _get(
        f"{url}/voila/api/shutdown/{kernel_id}",
        headers={
            "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items()),
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Origin": url,
        },
        data=form.encode(),
    )
    assert status == 204
    assert _get(f"{url}/api/kernels/{kernel_id}?token={token}")[0] == 404


def test_the_start_page_lists_the_lessons_by_title(app):
    url, _, token, _ = app
    status, _, page = _get(f"{url}/?token={token}&scale=1.5")
    assert status == 200
    assert '<a href="/voila/render/lesson.ipynb?scale=1.5">A lesson</a>' in page  # no token in the links


def test_lesson_page_carries_the_instructor_kit(lesson):
    page, _, _ = lesson
    assert "roofline-kit" in page and "A lesson" in page


def test_kernels_beyond_the_cap_replace_the_least_recently_used(tmp_path):
    """With --max-kernels 1, opening the lesson again shuts down the first page's kernel (the grace for
    pages still loading set to 0 here: by default a kernel active in the last 30 s is left alone)."""
    nbformat.write(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A lesson")]),
        tmp_path / "lesson.ipynb",
    )
    args = [str(tmp_path), "--token=t", "--max-kernels=1", "--CourseKernelManager.page_load_grace_s=0"]
    proc, port, log = _start_app(tmp_path, *args)
    try:
        url = f"http://127.0.0.1:{port}"
        _, first, _ = _lesson_page(url, "t")
        _wait_until_idle(url, first, "t")  # a busy kernel is never shut down to make room
        _, second, _ = _lesson_page(url, "t")
        assert _get(f"{url}/api/kernels/{first}?token=t")[0] == 404
        assert _get(f"{url}/api/kernels/{second}?token=t")[0] == 200
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


def test_a_config_file_that_breaks_a_promise_stops_the_app(tmp_path):
    """Voilà reads voila.json from the current directory (and Jupyter's config directories) after the
    command line: one that sets another interface would make the app listen on every network."""
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "lesson.ipynb")
    (tmp_path / "voila.json").write_text(json.dumps({"Voila": {"ip": "0.0.0.0"}}))
    run = subprocess.run(
        [sys.executable, "-m", "roofline.apps.instructor", str(tmp_path), f"--port={_free_port()}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode != 0
    assert "Voila.ip is '0.0.0.0'" in run.stderr and "instructor mode listens on 127.0.0.1 only" in run.stderr


def test_a_notebooks_files_open_in_a_sandbox(app):
    """A file opened on its own (an SVG with a script) runs no script in the app's origin: every file of
    the notebooks' folder comes with a sandboxing Content-Security-Policy and no content sniffing."""
    url, _, token, _ = app
    for name in ("drawing.svg", "pixel.png"):
        status, headers, _ = _get(f"{url}/voila/files/{name}?token={token}")
        policy = headers["Content-Security-Policy"]
        assert status == 200 and policy.startswith("sandbox;") and "default-src 'none'" in policy, name
        assert "script-src" not in policy and headers["X-Content-Type-Options"] == "nosniff", name


def test_logout_forgets_the_login_and_says_so(app):
    url, _, token, _ = app
    status, headers, body = _get(f"{url}/logout?token={token}")
    assert status == 200 and "Logged out" in body
    assert "Set-Cookie" in headers  # the login cookie cleared
