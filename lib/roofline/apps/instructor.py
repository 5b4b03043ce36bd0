"""Instructor mode: serve the lessons as a clean app (narrative, figures and controls; no code) with Voilà.

    uv run instructor                        # every lesson: a page listing them
    uv run instructor 16                     # lesson 16, its kernel started in advance (preheated)
    uv run instructor 02 16 28 --port 8870   # today's lessons, each preheated: a switch takes ~2 s
    uv run instructor --port=8870 --scale 1.5 --presenter

It prints the URLs to open, each with its access token. The app

- binds to 127.0.0.1 only, refuses requests whose Host header is not 127.0.0.1/localhost (a web page
  using DNS rebinding cannot reach it), and asks for a token (random per start; ``--no-token`` for none);
- hides the code cells and sends a Content-Security-Policy that keeps the page on this machine
  (``connect-src 'self'``: websockets only back to this server; ``form-action 'self'``);
- starts a kernel for each named lesson in advance (Voilà's preheated kernels, one per lesson, ~125 MB
  each), so the server sends the rendered page at once and the explorer is live in about 2 s (the
  browser loading Voilà's scripts and drawing the widgets; benchmarks/instructor_switch.py); other
  lessons start and run their kernel on opening (about 5 s);
- culls kernels whose page was closed (idle and disconnected for ``--cull-idle-seconds``, 300 by
  default): a lesson's kernel is ~125 MB, and without culling every page view kept one until the end;
- adds the instructor's kit to every page (template ``speed-physics``): a projector scale (A+ / A-, or
  ``?scale=1.5``) that enlarges the widgets' labels, values and the text, and a presenter view (button or
  key ``P``, or ``?view=presenter``): one question with its explorer below it per screen, PageDown /
  PageUp (a clicker) or the arrow keys to move between them. Both settings are remembered across lessons.

Widget messages go out without Nagle's delay (``roofline.apps.server_latency``), so sliders answer in
about half the time. Any other Voilà option passes through in ``--name=value`` form.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path

from roofline.apps.server_latency import enable_tcp_nodelay

NOTEBOOKS = Path(__file__).resolve().parents[3] / "notebooks"
# Jupyter data directory holding the course's Voilà template (voila/templates/speed-physics).
JUPYTER_DATA = Path(__file__).resolve().parent / "jupyter_data"
TEMPLATE = "speed-physics"
DEFAULT_PORT = 8866
CULL_IDLE_SECONDS = 300
CULL_INTERVAL_SECONDS = 60

# Only this machine: inline styles and scripts as Voilà's page uses them; data:/blob: images; network
# connections (XHR, websockets) only back to the page's own origin; forms post only to it.
CONTENT_SECURITY_POLICY = (
    "default-src 'self' 'unsafe-inline' 'unsafe-eval' data: blob:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'self'; base-uri 'self'"
)
# Host names the server answers to (an IP address is accepted when it is a loopback address).
LOCAL_HOSTNAMES = ["localhost"]


@dataclass(frozen=True)
class Plan:
    """What ``instructor`` will start: the directory served, the lessons preheated, the Voilà argv.

    root : directory whose notebooks are served (``/voila/render/NAME.ipynb``).
    lessons : notebook paths relative to ``root``, each given one preheated kernel.
    port : TCP port on 127.0.0.1.
    token : the access token ("" when switched off).
    config : Voilà's settings (traitlets config); options given on the command line override them.
    argv : Voilà's command line: the directory, then the options passed through.
    """

    root: Path
    lessons: list[str]
    port: int
    token: str
    config: dict = field(repr=False)
    argv: list[str] = field(repr=False)
    query: str = ""

    def urls(self) -> list[str]:
        """The URLs to open: the lesson list, then each named lesson (with the token, if any).

        >>> plan = build_plan(["16", "--port", "8870", "--token", "abc"])
        >>> plan.urls()[0]
        'http://127.0.0.1:8870/?token=abc'
        >>> plan.urls()[1]
        'http://127.0.0.1:8870/voila/render/16_step_time.ipynb?token=abc'
        """
        base = f"http://127.0.0.1:{self.port}"
        params = "&".join(p for p in (f"token={self.token}" if self.token else "", self.query) if p)
        suffix = f"?{params}" if params else ""
        return [f"{base}/{suffix}", *(f"{base}/voila/render/{name}{suffix}" for name in self.lessons)]


def resolve_lesson(name: str, notebooks: Path = NOTEBOOKS) -> Path:
    """The notebook (or directory) a command-line name means: a path, or a lesson number or name prefix.

    >>> resolve_lesson("16").name
    '16_step_time.ipynb'
    >>> resolve_lesson("kv_cache").name
    '28_kv_cache.ipynb'
    >>> resolve_lesson("99")
    Traceback (most recent call last):
    ...
    SystemExit: instructor: no lesson matches '99' in notebooks/ (try a number such as 16, or a path)
    """
    path = Path(name)
    if path.exists():
        return path.resolve()
    stem = name.removesuffix(".ipynb")
    candidates = sorted(notebooks.glob(f"{stem}*.ipynb")) or sorted(notebooks.glob(f"*{stem}*.ipynb"))
    if len(candidates) != 1:
        if candidates:
            names = ", ".join(c.name for c in candidates)
            raise SystemExit(f"instructor: several lessons match {name!r}: {names}; be more specific")
        raise SystemExit(
            f"instructor: no lesson matches {name!r} in notebooks/ (try a number such as 16, or a path)"
        )
    return candidates[0].resolve()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="instructor",
        description="Serve the course's lessons as an app (Voilà) for teaching: code hidden, loopback only, "
        "a token, preheated kernels for the named lessons, a projector scale and a presenter view.",
        epilog="Other Voilà options pass through in --name=value form, e.g. --no-browser "
        "--VoilaConfiguration.show_tracebacks=True.",
    )
    p.add_argument(
        "lessons",
        nargs="*",
        metavar="LESSON",
        help="lesson numbers, names or notebook paths (default: every lesson), or one directory",
    )
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port on 127.0.0.1 (default {DEFAULT_PORT})"
    )
    token = p.add_mutually_exclusive_group()
    token.add_argument("--token", help="access token (default: a random one, printed in the URLs)")
    token.add_argument("--no-token", action="store_true", help="no token: any local user can open the app")
    p.add_argument("--no-preheat", action="store_true", help="start no kernel in advance")
    p.add_argument(
        "--cull-idle-seconds",
        type=int,
        default=CULL_IDLE_SECONDS,
        help="shut down a kernel whose page is closed after this many idle seconds "
        f"(default {CULL_IDLE_SECONDS}; 0: never)",
    )
    p.add_argument(
        "--scale", type=float, help="projector scale for the pages, e.g. 1.5 (adds ?scale= to URLs)"
    )
    p.add_argument(
        "--presenter", action="store_true", help="open in the presenter view (adds ?view=presenter)"
    )
    return p


def build_plan(args: list[str]) -> Plan:
    """Parse the command line into a Plan; ``--port N`` and ``--port=N`` are the same.

    >>> build_plan(["--port", "8870"]).port == build_plan(["--port=8870"]).port == 8870
    True
    >>> plan = build_plan(["16", "28", "--port=8870", "--no-token"])
    >>> plan.root == NOTEBOOKS, plan.lessons, plan.token
    (True, ['16_step_time.ipynb', '28_kv_cache.ipynb'], '')
    """
    ns, passthrough = parser().parse_known_args(args)
    stray = [a for a in passthrough if not a.startswith("-")]
    if stray:
        raise SystemExit(f"instructor: unexpected argument(s) {stray}: pass Voilà options as --name=value")
    paths = [resolve_lesson(name) for name in ns.lessons]
    directories = [p for p in paths if p.is_dir()]
    if directories and len(paths) > 1:
        raise SystemExit("instructor: give either one directory or lesson names, not both")
    if directories:
        root, lessons = directories[0], []
    elif paths:
        roots = {p.parent for p in paths}
        if len(roots) > 1:
            raise SystemExit("instructor: the lessons named must sit in one directory")
        root, lessons = roots.pop(), [p.name for p in paths]
    else:
        root, lessons = NOTEBOOKS.resolve(), []
    token = "" if ns.no_token else (ns.token or secrets.token_urlsafe(18))
    query = "&".join(
        q for q in (f"scale={ns.scale:g}" if ns.scale else "", "view=presenter" if ns.presenter else "") if q
    )
    config = {
        "Voila": {
            "ip": "127.0.0.1",
            "port": ns.port,
            "port_retries": 0,  # the printed URLs name this port: fail rather than move to another
            "token": token,
            "open_browser": False,  # it would open the page without the token; the URLs are printed
        },
        "VoilaConfiguration": {"strip_sources": True, "template": TEMPLATE},
        "MappingKernelManager": {
            "cull_idle_timeout": ns.cull_idle_seconds,
            "cull_interval": CULL_INTERVAL_SECONDS,
            "cull_connected": False,  # a projector tab left open keeps its kernel
        },
    }
    if lessons and not ns.no_preheat:
        config["VoilaConfiguration"]["preheat_kernel"] = True
        config["VoilaKernelManager"] = {
            "kernel_pools_config": {"default": {"pool_size": 0}, **{n: {"pool_size": 1} for n in lessons}},
            "fill_delay": 0,  # refill a lesson's pool at once when its kernel is taken
        }
    return Plan(
        root=root,
        lessons=lessons,
        port=ns.port,
        token=token,
        config=config,
        argv=[str(root), *passthrough],
        query=query,
    )


def tornado_settings() -> dict:
    """Headers and Host check for every response (applied over Voilà's own settings)."""
    return {
        "headers": {"Content-Security-Policy": CONTENT_SECURITY_POLICY},
        "allow_remote_access": False,  # Jupyter's handlers then check the Host header ...
        "local_hostnames": LOCAL_HOSTNAMES,  # ... against these names and loopback addresses
    }


def keep_taken_kernels_from_the_culler() -> bool:
    """Patch Voilà so a preheated kernel counts as active at the moment a page takes it; True if done.

    A kernel waiting in the pool is exempt from culling, but its idle time runs from when it finished
    rendering. Once a page takes it, the page needs a few seconds to load before its websocket connects;
    a culler pass in that gap found a kernel "idle" for longer than the timeout with no connection and
    shut it down under the page (the page then never shows its widgets). Marking the kernel active when
    it is taken gives the page the full idle timeout to connect.
    """
    import voila.app
    from jupyter_server._tz import utcnow

    factory = voila.app.voila_kernel_manager_factory
    if getattr(factory, "_course_patched", False):
        return True

    def course_factory(*args, **kwargs):
        base = factory(*args, **kwargs)
        if not hasattr(base, "get_rendered_notebook"):  # preheating off: nothing is taken from a pool
            return base

        class VoilaKernelManager(base):
            async def get_rendered_notebook(self, *a, **k):
                render_task, rendered, kernel_id = await super().get_rendered_notebook(*a, **k)
                self.get_kernel(kernel_id).last_activity = utcnow()
                return render_task, rendered, kernel_id

        return VoilaKernelManager

    course_factory._course_patched = True
    voila.app.voila_kernel_manager_factory = course_factory
    return True


def main(argv: list[str] | None = None) -> None:
    """Start Voilà with the course's settings; ``argv`` as on the command line (default: sys.argv[1:])."""
    plan = build_plan(sys.argv[1:] if argv is None else argv)
    # The course's Voilà template is found through JUPYTER_PATH (Jupyter's data directories).
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        p for p in (str(JUPYTER_DATA), os.environ.get("JUPYTER_PATH", "")) if p
    )
    from traitlets.config import Config
    from voila.app import Voila

    enable_tcp_nodelay()
    keep_taken_kernels_from_the_culler()
    urls = plan.urls()
    print("Speed Physics, instructor mode. Open:", *(f"    {u}" for u in urls), sep="\n", flush=True)
    if plan.lessons:
        print(
            f"Preheating {len(plan.lessons)} lesson kernel(s); each page opens at once when ready.",
            flush=True,
        )
    Voila.launch_instance(argv=plan.argv, config=Config(plan.config), tornado_settings=tornado_settings())


if __name__ == "__main__":
    main()
