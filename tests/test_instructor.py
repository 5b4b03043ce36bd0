"""Instructor mode and the server settings behind the explorers (the browser tests drive the app itself)."""

import json
import sys
from pathlib import Path

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


def test_instructor_app_is_loopback_only_hides_code_and_allows_no_outside_host(monkeypatch):
    seen = {}

    class FakeVoila:
        @staticmethod
        def launch_instance(argv, **kwargs):
            seen.update(argv=argv, **kwargs)

    monkeypatch.setitem(sys.modules, "voila.app", type(sys)("voila.app"))
    sys.modules["voila.app"].Voila = FakeVoila
    instructor.main(["--port=9999"])
    assert (
        "--Voila.ip=127.0.0.1" in seen["argv"] and "--VoilaConfiguration.strip_sources=True" in seen["argv"]
    )
    assert seen["argv"][-2:] == [str(instructor.NOTEBOOKS), "--port=9999"]  # all lessons by default
    policy = seen["tornado_settings"]["headers"]["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "http" not in policy
