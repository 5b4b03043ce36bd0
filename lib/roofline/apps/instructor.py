"""Instructor mode: serve the lessons as a clean app (narrative, figures and controls; no code) with Voilà.

    uv run instructor                                # every lesson: a page listing them
    uv run instructor notebooks/16_step_time.ipynb   # one lesson
    uv run instructor notebooks/ --port 8870         # any other Voilà option passes through

The app binds to 127.0.0.1 only, hides the code cells, and sends a Content-Security-Policy that keeps
the page on this machine: Voilà's page template links Font Awesome on a CDN, but the icons also ship in
its own bundle, so nothing is lost offline and no request leaves loopback. Widget messages go out
without Nagle's delay (``roofline.apps.server_latency``), so sliders answer in about half the time.
"""

from __future__ import annotations

import sys
from pathlib import Path

from roofline.apps.server_latency import enable_tcp_nodelay

NOTEBOOKS = Path(__file__).resolve().parents[3] / "notebooks"

# Only this machine; inline styles and scripts as Voilà's page uses them; websockets back to the server.
CONTENT_SECURITY_POLICY = (
    "default-src 'self' 'unsafe-inline' 'unsafe-eval' data: blob:; connect-src 'self' ws: wss:; "
    "frame-ancestors 'self'"
)


def voila_arguments(args: list[str]) -> list[str]:
    """Voilà's command line for ``args``: loopback only, code hidden, every lesson unless a path is given.

    >>> voila_arguments(["notebooks/16_step_time.ipynb", "--port=8870"])  # doctest: +NORMALIZE_WHITESPACE
    ['--Voila.ip=127.0.0.1', '--VoilaConfiguration.strip_sources=True',
     'notebooks/16_step_time.ipynb', '--port=8870']
    >>> voila_arguments([])[-1] == str(NOTEBOOKS)
    True
    """
    args = list(args)
    if not any(not a.startswith("-") for a in args):
        args.insert(0, str(NOTEBOOKS))
    return ["--Voila.ip=127.0.0.1", "--VoilaConfiguration.strip_sources=True", *args]


def main(argv: list[str] | None = None) -> None:
    """Start Voilà with the course's settings; ``argv`` as on the command line (default: sys.argv[1:])."""
    from voila.app import Voila

    enable_tcp_nodelay()
    Voila.launch_instance(
        argv=voila_arguments(sys.argv[1:] if argv is None else argv),
        tornado_settings={"headers": {"Content-Security-Policy": CONTENT_SECURITY_POLICY}},
    )


if __name__ == "__main__":
    main()
