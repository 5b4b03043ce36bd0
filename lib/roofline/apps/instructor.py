"""Instructor mode: serve the lessons as a clean app (narrative, figures and controls; no code) with Voilà.

    uv run instructor                        # every lesson, listed by title on a start page
    uv run instructor 02 16 28 --port 8870   # today's lessons, each preheated, listed on the start page
    uv run instructor --port=8870 --scale 1.5 --presenter

It prints the URLs to open, each with its random access token, and starts the app
(``roofline.apps.instructor_server`` says how it keeps its promises: 127.0.0.1 only, loopback host names
only, the token on every route, code hidden, the page kept on this machine). This module reads the command
line into a ``Plan`` and refuses the Voilà options that would undo those promises (``REFUSED``); any other
Voilà option passes through in ``--name=value`` form.

Each named lesson gets a kernel started in advance (preheated, ~125 MB each): its page arrives rendered
and its explorer is live in about 1.6 s (benchmarks/instructor_switch.py); other lessons take a spare
kernel started with their modules imported (about 3.2 s). Idle kernels of closed pages are culled after
``--cull-idle-seconds``; at most ``--max-kernels`` stay alive. Every page carries a projector scale (A+ /
A-, ``?scale=1.5``) and a presenter view (key ``P``, ``?view=presenter``: the lesson's idea, its explorer,
then each question with the explorer, one per screen, PageDown / PageUp to move).
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path

from roofline.apps.instructor_server import JUPYTER_DATA, TEMPLATE, Plan, launch
from roofline.apps.server_latency import enable_tcp_nodelay
from roofline.data import notebooks_dir
from roofline.errors import RooflineError

DEFAULT_PORT = 8866
CULL_IDLE_SECONDS = 300
CULL_INTERVAL_SECONDS = 60
# About 125 MB each: 12 kernels hold ~1.5 GB (five preheated lessons, the pages open on them, and a few
# more), where 30 page loads without a cap held 30 kernels, 4.1 GB (benchmarks/instructor_switch.py).
MAX_KERNELS = 12
# Seconds between a page taking a lesson's preheated kernel and the pool starting its next one: starting
# a kernel and running the lesson takes both cores for seconds, which slowed the very page that took it.
POOL_REFILL_DELAY_S = 10

# Voilà options that would undo what instructor mode promises (where it listens, the token, the Host check,
# the Content-Security-Policy), each with what to use instead. Matched on the option's name, any case.
REFUSED = {
    "voila.ip": "instructor mode listens on 127.0.0.1 only; to serve a network, run `voila` itself",
    "ip": "instructor mode listens on 127.0.0.1 only; to serve a network, run `voila` itself",
    "voila.port": "use --port N",
    "voila.port_retries": "the printed URLs name one port",
    "voila.token": "use --token T, or --no-token",
    "voila.auto_token": "use --token T, or --no-token",
    "identityprovider.token": "use --token T, or --no-token",
    "passwordidentityprovider.token": "use --token T, or --no-token",
    "voila.identity_provider_class": "it would replace the token check",
    "voila.authorizer_class": "it would replace the token check",
    "voila.tornado_settings": "it would replace the Host check and the Content-Security-Policy",
    "voila.allow_remote_access": "instructor mode answers to 127.0.0.1 and localhost only",
    # Jupyter server options look as if they would open the server, but Voilà standalone ignores them:
    # refused, so nobody believes a classroom network can reach it.
    "serverapp.ip": "Voilà ignores Jupyter server options; instructor mode listens on 127.0.0.1 only",
    "serverapp.port": "use --port N",
    "serverapp.token": "use --token T, or --no-token",
    "serverapp.allow_remote_access": "instructor mode answers to 127.0.0.1 and localhost only",
    "serverapp.tornado_settings": "it would replace the Host check and the Content-Security-Policy",
}


def course_notebooks() -> Path:
    """The course's notebooks (``roofline.data.notebooks_dir``); where there are none (an installed wheel
    without ``$SPEED_PHYSICS_NOTEBOOKS``), the command stops and says how to point at them."""
    try:
        return notebooks_dir()
    except RooflineError as exc:
        raise SystemExit(f"instructor: {exc}") from None


def resolve_lesson(name: str) -> Path:
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
    notebooks, stem = course_notebooks(), name.removesuffix(".ipynb")
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
    p.add_argument(
        "--no-preheat",
        action="store_true",
        help="start no kernel in advance (no preheated lessons, no spare)",
    )
    p.add_argument(
        "--cull-idle-seconds",
        type=int,
        default=CULL_IDLE_SECONDS,
        help="shut down a kernel whose page is closed after this many idle seconds "
        f"(default {CULL_IDLE_SECONDS}; 0: never)",
    )
    p.add_argument(
        "--max-kernels",
        type=int,
        default=MAX_KERNELS,
        help=f"most kernels alive at once, about 125 MB each (default {MAX_KERNELS}; 0: no cap); one more "
        "page first shuts down the least recently used idle kernel",
    )
    p.add_argument(
        "--scale", type=float, help="projector scale for the pages, e.g. 1.5 (adds ?scale= to URLs)"
    )
    p.add_argument(
        "--presenter", action="store_true", help="open in the presenter view (adds ?view=presenter)"
    )
    return p


def refused_option(arg: str) -> str | None:
    """Why a Voilà option passed through would break instructor mode's promises (``REFUSED``), or None.

    >>> refused_option("--Voila.ip=0.0.0.0")
    'instructor mode listens on 127.0.0.1 only; to serve a network, run `voila` itself'
    >>> refused_option("--VoilaConfiguration.show_tracebacks=True") is None
    True
    """
    name = arg.lstrip("-").split("=", 1)[0].replace("-", "_").lower()
    return REFUSED.get(name)


def build_plan(args: list[str]) -> Plan:
    """Parse the command line into a Plan; ``--port N`` and ``--port=N`` are the same.

    >>> build_plan(["--port", "8870"]).port == build_plan(["--port=8870"]).port == 8870
    True
    >>> plan = build_plan(["16", "28", "--port=8870", "--no-token"])
    >>> plan.root == course_notebooks().resolve(), plan.lessons, plan.token
    (True, ['16_step_time.ipynb', '28_kv_cache.ipynb'], '')
    >>> build_plan(["16", "--Voila.ip=0.0.0.0"])
    Traceback (most recent call last):
    ...
    SystemExit: instructor: refusing --Voila.ip=0.0.0.0: instructor mode listens on 127.0.0.1 only; ...
    """
    ns, passthrough = parser().parse_known_args(args)
    stray = [a for a in passthrough if not a.startswith("-")]
    if stray:
        raise SystemExit(f"instructor: unexpected argument(s) {stray}: pass Voilà options as --name=value")
    for arg in passthrough:
        if reason := refused_option(arg):
            raise SystemExit(f"instructor: refusing {arg}: {reason}")
    root, lessons = _root_and_lessons(ns.lessons)
    preheat = bool(lessons) and not ns.no_preheat
    if ns.max_kernels < 0 or (ns.max_kernels and preheat and ns.max_kernels <= len(lessons)):
        raise SystemExit(
            f"instructor: --max-kernels {ns.max_kernels} leaves no kernel for a page beside the "
            f"{len(lessons)} preheated lesson(s): give at least {len(lessons) + 1}, or 0 for no cap"
        )
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
        # A kernel started in advance for the next lesson opened without a preheated kernel of its own.
        "CourseKernelManager": {"max_kernels": ns.max_kernels, "spare_kernel": not ns.no_preheat},
    }
    if preheat:
        config["VoilaConfiguration"]["preheat_kernel"] = True
        config["VoilaKernelManager"] = {
            "kernel_pools_config": {"default": {"pool_size": 0}, **{n: {"pool_size": 1} for n in lessons}},
            "fill_delay": POOL_REFILL_DELAY_S,
        }
    return Plan(root, lessons, ns.port, token, config, argv=[str(root), *passthrough], query=query)


def _root_and_lessons(names: list[str]) -> tuple[Path, list[str]]:
    """The directory to serve and the lessons named in it (notebook file names)."""
    paths = [resolve_lesson(name) for name in names]
    directories = [p for p in paths if p.is_dir()]
    if directories and len(paths) > 1:
        raise SystemExit("instructor: give either one directory or lesson names, not both")
    if directories:
        return directories[0], []
    if paths:
        roots = {p.parent for p in paths}
        if len(roots) > 1:
            raise SystemExit("instructor: the lessons named must sit in one directory")
        return roots.pop(), [p.name for p in paths]
    return course_notebooks().resolve(), []


def main(argv: list[str] | None = None) -> None:
    """Start Voilà with the course's settings; ``argv`` as on the command line (default: sys.argv[1:])."""
    plan = build_plan(sys.argv[1:] if argv is None else argv)
    # The course's Voilà template is found through JUPYTER_PATH (Jupyter's data directories).
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        p for p in (str(JUPYTER_DATA), os.environ.get("JUPYTER_PATH", "")) if p
    )
    enable_tcp_nodelay()
    urls = plan.urls()
    print("Speed Physics, instructor mode. Open:", *(f"    {u}" for u in urls), sep="\n", flush=True)
    if plan.lessons:
        print(
            f"Preheating {len(plan.lessons)} lesson kernel(s); each page opens at once when ready.",
            flush=True,
        )
    launch(plan)


if __name__ == "__main__":
    main()
