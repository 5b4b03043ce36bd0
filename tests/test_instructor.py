"""Instructor mode and the server settings behind the explorers (the browser tests drive the app's pages).

The live tests start the real app (``python -m roofline.apps.instructor``) on a directory holding one tiny
notebook and talk HTTP to it: the token, the Host check and the Content-Security-Policy are the server's
behaviour, not its configuration.
"""

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest

from roofline.apps import instructor
from roofline.apps.server_latency import enable_tcp_nodelay


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


# --- argument parsing: the README's `uv run instructor --port 8870` used to serve the repository root ---


@pytest.mark.parametrize("args", [["--port", "8870"], ["--port=8870"]])
def test_port_with_or_without_equals_serves_the_lessons(args):
    plan = instructor.build_plan(args)
    assert plan.port == 8870 and plan.config["Voila"]["port"] == 8870
    assert plan.root == instructor.NOTEBOOKS.resolve()  # the lessons, not the current directory
    assert plan.argv == [str(instructor.NOTEBOOKS.resolve())]  # "8870" is not taken for a path


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
    directives = dict(d.strip().split(" ", 1) for d in instructor.CONTENT_SECURITY_POLICY.split(";"))
    assert directives["connect-src"] == "'self'"  # no `ws: wss:`: those allow websockets to any host
    assert directives["form-action"] == "'self'"
    assert "http" not in instructor.CONTENT_SECURITY_POLICY


def test_the_course_template_is_found_by_voila():
    from voila.paths import collect_template_paths

    instructor_env = {"JUPYTER_PATH": str(instructor.JUPYTER_DATA)}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", instructor_env["JUPYTER_PATH"])
        paths = collect_template_paths(["voila", "nbconvert"], instructor.TEMPLATE)
    found = [p for p in paths if (Path(p) / "index.html.j2").exists()]
    assert Path(found[0]) == instructor.JUPYTER_DATA / "voila/templates" / instructor.TEMPLATE
    assert any(Path(p).name == "lab" for p in found)  # it builds on Voilà's lab template


# --- the running app ---------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    directory = tmp_path_factory.mktemp("lessons")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A lesson")])
    nbformat.write(nb, directory / "lesson.ipynb")
    port, token = _free_port(), "secret-token"
    log = open(directory / "voila.log", "w+")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "roofline.apps.instructor",
            str(directory),
            f"--port={port}",
            f"--token={token}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, "instructor exited early"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        assert time.monotonic() < deadline, "instructor did not open its port"
        time.sleep(0.1)  # polling for the port, not synchronizing with a page
    yield f"http://127.0.0.1:{port}", port, token, log
    proc.terminate()
    proc.wait(10)
    log.close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _get(url: str, host: str | None = None):
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), ""


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
    assert headers["Content-Security-Policy"] == instructor.CONTENT_SECURITY_POLICY


@pytest.mark.parametrize("host", ["evil.example", "attacker.test:80", "192.168.1.10"])
def test_app_refuses_other_host_names_even_with_the_token(app, host):
    url, port, token, _ = app
    assert _get(f"{url}/?token={token}", host=f"{host}" if ":" in host else f"{host}:{port}")[0] == 403


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_app_answers_to_loopback_names(app, host):
    url, port, token, _ = app
    assert _get(f"{url}/?token={token}", host=f"{host}:{port}")[0] == 200


def test_lesson_page_carries_the_instructor_kit(app):
    url, _, token, _ = app
    status, _, page = _get(f"{url}/voila/render/lesson.ipynb?token={token}")
    assert status == 200 and "roofline-kit" in page and "A lesson" in page


def test_a_preheated_kernel_taken_by_a_page_starts_its_idle_time_afresh(monkeypatch):
    """The culler must not shut down a pool kernel in the seconds between a page taking it and the page's
    websocket connecting (its idle time used to run from the end of preheating)."""
    import asyncio
    import datetime

    import voila.app

    long_ago = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    kernel = type("Kernel", (), {"last_activity": long_ago})()

    class PoolManager:  # stands in for Voilà's preheating kernel manager
        async def get_rendered_notebook(self, notebook_name):
            return "render-task", ["<div>cell</div>"], "kernel-1"

        def get_kernel(self, kernel_id):
            assert kernel_id == "kernel-1"
            return kernel

    monkeypatch.setattr(voila.app, "voila_kernel_manager_factory", lambda *a, **k: PoolManager)
    assert instructor.keep_taken_kernels_from_the_culler()
    manager = voila.app.voila_kernel_manager_factory(None, True, 1)()
    before = datetime.datetime.now(datetime.UTC)
    taken = asyncio.run(manager.get_rendered_notebook("16_step_time.ipynb"))
    assert taken == ("render-task", ["<div>cell</div>"], "kernel-1")  # Voilà's answer, unchanged
    assert kernel.last_activity >= before
