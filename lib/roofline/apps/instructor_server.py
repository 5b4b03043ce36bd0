"""The instructor app's server: Voilà, with the promises ``instructor`` prints kept on every route.

``roofline.apps.instructor`` reads the command line into a ``Plan``; ``launch(plan)`` runs it. Over plain
Voilà it checks the Host header and asks for the token on every route but public scripts and styles
(``guard_routes``; a page opened with the token keeps it in a login cookie), refuses to start when a
Jupyter config file breaks a promise (``broken_promises``), serves a start page listing the lessons by
title, lets a closed page shut its kernel down at once (``LessonPageHandler``), caps the live kernels and
keeps a spare one started in advance (``course_kernel_manager_factory``), and lets the browser keep the
lab extensions' content-hashed scripts (``tornado_settings``).
"""

from __future__ import annotations

import asyncio
import html
import ipaddress
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, urlencode

from jupyter_core.utils import ensure_async
from jupyter_server.auth.authorizer import AllowAllAuthorizer
from jupyter_server.auth.decorator import allow_unauthenticated
from jupyter_server.auth.identity import PasswordIdentityProvider
from jupyter_server.auth.logout import LogoutHandler
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.services.contents.largefilemanager import LargeFileManager
from tornado import web
from traitlets import Bool, Float, Integer
from traitlets.config import Config
from voila.app import Voila
from voila.request_info_handler import RequestInfoSocketHandler
from voila.static_file_handler import AllowListFileHandler, MultiStaticFileHandler, TemplateStaticFileHandler
from voila.tornado.handler import TornadoVoilaHandler
from voila.tornado.treehandler import TornadoVoilaTreeHandler

from roofline.course.course_map import course_map

# Jupyter data directory holding the course's Voilà template (voila/templates/speed-physics).
JUPYTER_DATA = Path(__file__).resolve().parent / "jupyter_data"
TEMPLATE = "speed-physics"
# Only this machine: inline styles and scripts as Voilà's page uses them; data:/blob: images; network
# connections (XHR, websockets) only back to the page's own origin; forms post only to it.
CONTENT_SECURITY_POLICY = (
    "default-src 'self' 'unsafe-inline' 'unsafe-eval' data: blob:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'self'; base-uri 'self'"
)
# A notebook folder's files: no script, no plugin, no form, no fetch, in a sandbox of their own origin.
FILE_CONTENT_SECURITY_POLICY = "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'"
# Host names the server answers to (an IP address is accepted when it is a loopback address).
LOCAL_HOSTNAMES = ["localhost"]

# A kernel active this recently may belong to a page still loading (it connects seconds after the server
# rendered it): never shut down to make room (CourseKernelManager's page_load_grace_s).
PAGE_LOAD_GRACE_S = 30.0
# Seconds between a page taking the spare kernel and the next spare's start (the page is still loading).
SPARE_DELAY_S = 10.0


# --- every route: the Host check, and the token where there is anything to protect ------------------------


def is_loopback_host(host: str, names: list[str] = LOCAL_HOSTNAMES) -> bool:
    """Whether a Host header (with or without a port) names this machine: a loopback address or a name in
    ``names``; the same rule as Jupyter's own handlers (``allow_remote_access = False``).

    >>> [is_loopback_host(h) for h in ("127.0.0.1:8866", "localhost", "[::1]:80", "evil.example:8866")]
    [True, True, True, False]
    """
    name = re.match(r"^(.*?)(:\d+)?$", host).group(1).strip("[]")
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return name in names


class _LoopbackOnly:
    """Host check for Voilà's plain static-file handlers (Voilà's JavaScript and CSS: no token needed)."""

    def prepare(self):
        if not is_loopback_host(self.request.host, self.settings.get("local_hostnames", LOCAL_HOSTNAMES)):
            raise web.HTTPError(403)
        return super().prepare()


class LoopbackTemplateStaticHandler(_LoopbackOnly, TemplateStaticFileHandler):
    """``/voila/templates/<template>/static/*``: the template's scripts and styles."""


class LoopbackStaticHandler(_LoopbackOnly, MultiStaticFileHandler):
    """``/voila/static/*``: Voilà's own scripts and styles."""


class GuardedRequestInfoHandler(WebSocketMixin, RequestInfoSocketHandler, JupyterHandler):
    """``/voila/query/<kernel>`` with the Host check and the token (Jupyter's handler checks): Voilà's
    hands the page's query string, token included, to whoever connects. No course notebook asks for it."""


class GuardedFileHandler(JupyterHandler, AllowListFileHandler):
    """``/voila/files/*`` (a notebook's images) with the Host check and the token (or login cookie), each
    file in a CSP sandbox (``FILE_CONTENT_SECURITY_POLICY``): a file opened on its own (an SVG or HTML
    file with a script, dropped into the notebooks' folder) runs no script in the app's origin; a page
    showing it as an image is unaffected."""

    @property
    def content_security_policy(self) -> str:
        return FILE_CONTENT_SECURITY_POLICY


class CourseLogoutHandler(JupyterHandler):
    """``/logout``: forget the login cookie and say so. (Jupyter's own handler renders a ``logout.html``
    that Voilà's templates lack: an HTTP 500.)"""

    @allow_unauthenticated
    def get(self):
        self.identity_provider.clear_login_cookie(self)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.write("Logged out. To come back, open the address instructor printed, with its token.\n")


class LessonPageHandler(TornadoVoilaHandler):
    """A lesson page (``/voila/render/NAME.ipynb``), which also sets the ``_xsrf`` cookie: Voilà's page
    sends it back with its "page closed" request (``/voila/api/shutdown/<kernel>``), whose kernel is
    then shut down at once instead of idling until the culler or the kernel cap removes it."""

    async def get(self, path=None):
        self.xsrf_token  # noqa: B018 - reading it sets the cookie
        return await super().get(path)


class LessonContentsManager(LargeFileManager):
    """Voilà's contents manager without the notebook-trust check: a lesson page never shows a notebook's
    stored outputs. Voilà runs the notebook for each page and renders the outputs of that run, which its
    exporter marks trusted itself; a stored signature decides nothing here, so none is checked (and no
    "Notebook ... is not trusted" warning is logged per page). Every stored cell stays marked untrusted."""

    def mark_trusted_cells(self, nb, path=""):
        self.notary.mark_cells(nb, False)


# --- the start page ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LessonLink:
    """One line of the start page: the notebook, its number ("" for lessons without one) and title."""

    notebook: str
    number: str
    title: str
    minutes: int = 0


def _first_heading(path: Path) -> str:
    """A notebook's first Markdown heading, else its file name without ``.ipynb``."""
    try:
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError):
        return path.stem
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            match = re.search(r"^#+\s+(.+)$", "".join(cell.get("source", "")), re.M)
            if match:
                return match.group(1).strip()
    return path.stem


def lesson_links(root: Path, names: list[str] | None = None) -> list[LessonLink]:
    """The lessons ``names`` (default: every notebook in ``root``, in the course map's order) with their
    titles: the course map's, else the notebook's first heading.

    >>> from roofline.data import notebooks_dir
    >>> links = lesson_links(notebooks_dir(), ["16_step_time.ipynb", "28_kv_cache.ipynb"])
    >>> [(x.number, x.title) for x in links]
    [('16', 'The step-time model'), ('28', 'The KV cache')]
    """
    mapped = {row.notebook: row for row in course_map(root)}
    if names is None:
        others = sorted(p.name for p in root.glob("*.ipynb") if p.name not in mapped)
        names = [*(n for n in others if n.startswith("00")), *mapped, *(n for n in others if n[:2] != "00")]
    return [
        LessonLink(name, row.number, row.title, row.minutes)
        if (row := mapped.get(name))
        else LessonLink(name, "", _first_heading(root / name))
        for name in names
    ]


def start_page_html(
    today: list[LessonLink], every: list[LessonLink], base_url: str = "/", query: str = ""
) -> str:
    """The start page: ``today`` (the lessons named; empty: every lesson instead), every lesson folded, then
    Voilà's file list; ``query`` (``scale=1.5``, ...) on every link, the token not (the cookie carries it).

    >>> page = start_page_html([LessonLink("16_step_time.ipynb", "16", "The step-time model", 35)], [])
    >>> '<a href="/voila/render/16_step_time.ipynb">The step-time model</a>' in page
    True
    """
    suffix = f"?{query}" if query else ""

    def items(links: list[LessonLink]) -> str:
        rows = []
        for link in links:
            href = html.escape(f"{base_url}voila/render/{quote(link.notebook)}{suffix}")
            minutes = f' <span class="min">{link.minutes} min</span>' if link.minutes else ""
            rows.append(
                f'<li><span class="num">{html.escape(link.number)}</span> '
                f'<a href="{href}">{html.escape(link.title)}</a>{minutes}</li>'
            )
        return "\n".join(rows)

    heading = "Today's lessons" if today else "Lessons"
    body = [
        f"<h2>{heading}</h2>",
        f'<ol class="roofline-lessons">\n{items(today or every)}\n</ol>',
    ]
    if today:
        body.append(
            f"<details><summary>Every lesson ({len(every)})</summary><ol>{items(every)}</ol></details>"
        )
    tree = html.escape(f"{base_url}voila/tree{suffix}")
    body.append(f'<p class="files"><a href="{tree}">All files (Voil&agrave;&rsquo;s list)</a></p>')
    return "\n".join([_START_PAGE_HEAD, *body, f"<script>{STRIP_TOKEN_JS}</script>", "</body></html>"])


_START_PAGE_HEAD = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Speed Physics: instructor mode</title>
<link rel="icon" href="data:;base64,=">
<style>
  body { font: 18px/1.5 system-ui, sans-serif; max-width: 46em; margin: 2em auto; padding: 0 1em;
         color: #222; }
  h1 { font-size: 1.7em; margin-bottom: 0.2em; }
  ol { list-style: none; padding-left: 0; } li { margin: 0.4em 0; }
  .num { display: inline-block; min-width: 2.4em; color: #666; font-variant-numeric: tabular-nums; }
  .min { color: #777; font-size: 0.85em; margin-left: 0.4em; }
  details, .files { margin-top: 1.5em; font-size: 0.9em; }
</style></head>
<body>
<h1>Speed Physics</h1>"""

# The lesson template's script that takes the token out of the address bar, used by the start page too.
STRIP_TOKEN_JS = (JUPYTER_DATA / "voila/templates" / TEMPLATE / "static/strip_token.js").read_text()


class StartPageHandler(JupyterHandler):
    """``/``: the lessons named on the command line with their titles, every lesson folded below."""

    def initialize(self, root: Path, lessons: list[str]):
        self.root, self.lessons = root, lessons

    def get(self):
        kept = [(k, v.decode()) for k, vs in self.request.query_arguments.items() if k != "token" for v in vs]
        every = lesson_links(self.root)
        today = lesson_links(self.root, self.lessons) if self.lessons else []
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.write(start_page_html(today, every, self.base_url, urlencode(kept)))


# Voilà's routes without a Host check or a token, and what replaces each; the start page replaces the
# file list at "/" (the list stays at /voila/tree).
REPLACEMENTS = {
    RequestInfoSocketHandler: GuardedRequestInfoHandler,
    AllowListFileHandler: GuardedFileHandler,
    TemplateStaticFileHandler: LoopbackTemplateStaticHandler,
    MultiStaticFileHandler: LoopbackStaticHandler,
    TornadoVoilaHandler: LessonPageHandler,
    LogoutHandler: CourseLogoutHandler,
}


def guard_routes(routes: list[tuple], server_url: str, root: Path, lessons: list[str]) -> list[tuple]:
    """Voilà's routes with the course's handlers in place (``root`` and ``lessons``: the start page's); a
    route still without a Host check (a future Voilà's) stops the app rather than being served unchecked.

    >>> routes = [("/voila/files/(.*)", AllowListFileHandler, {"path": "."})]
    >>> [handler.__name__ for _, handler, _ in guard_routes(routes, "/", Path("."), [])]
    ['GuardedFileHandler']
    """
    guarded = []
    for pattern, handler, *kwargs in routes:
        if handler is TornadoVoilaTreeHandler and pattern == server_url:
            handler, kwargs = StartPageHandler, [{"root": root, "lessons": lessons}]
        handler = REPLACEMENTS.get(handler, handler)
        if not issubclass(handler, JupyterHandler | _LoopbackOnly):
            raise SystemExit(
                f"instructor: Voilà's route {pattern} ({handler.__name__}) has no Host check or token; "
                "roofline.apps.instructor_server.REPLACEMENTS needs an entry for it"
            )
        guarded.append((pattern, handler, *kwargs))
    return guarded


# --- the kernels: a cap, a spare kernel, and a preheated kernel's idle time restarted when taken -------


def kernel_to_evict(kernels, now: datetime, keep=(), grace_s: float = PAGE_LOAD_GRACE_S) -> str | None:
    """The kernel to shut down to make room, of ``(kernel_id, execution_state, connections, last_activity)``
    rows: not busy (as Jupyter's culler: a kernel whose first status message was missed stays "starting"),
    not in ``keep`` (the preheated pools), not active in the last ``grace_s`` seconds (its page may still be
    loading); a closed page's before an open one's, then the longest idle; None if no kernel qualifies.

    >>> t = lambda minute: datetime(2026, 1, 1, 10, minute, tzinfo=UTC)
    >>> rows = [("open-old", "idle", 1, t(0)), ("closed", "starting", 0, t(5)), ("busy", "busy", 0, t(0))]
    >>> kernel_to_evict(rows, now=t(10))
    'closed'
    >>> kernel_to_evict(rows, now=t(10), keep={"closed"})
    'open-old'
    >>> kernel_to_evict([("loading", "starting", 0, t(10))], now=t(10)) is None
    True
    """
    candidates = [
        (connections > 0, last_activity, kernel_id)
        for kernel_id, state, connections, last_activity in kernels
        if kernel_id not in keep and state != "busy" and (now - last_activity).total_seconds() >= grace_s
    ]
    return min(candidates)[2] if candidates else None


class _KernelCap:
    """Mixed into Voilà's kernel manager (a MappingKernelManager): at most ``max_kernels`` kernels."""

    def _pooled(self) -> set[str]:
        """Kernels waiting in a preheated pool (never shut down to make room)."""
        tasks = [t for pool in getattr(self, "_pools", {}).values() for t in pool]
        return {
            t.result()["kernel_id"] for t in tasks if t.done() and not t.cancelled() and not t.exception()
        }

    def live_kernels(self) -> int:
        """Kernels running or being started (pool refills included)."""
        pending = sum(not t.done() for pool in getattr(self, "_pools", {}).values() for t in pool)
        return len(self.list_kernel_ids()) + pending + self._starting

    async def make_room(self) -> None:
        """Shut down kernels until one more fits under the cap; HTTP 503 with a message if none can go."""
        while self.max_kernels and self.live_kernels() >= self.max_kernels:
            connections = self._kernel_connections
            rows = [
                (k, getattr(x, "execution_state", ""), connections.get(k, 0), x.last_activity)
                for k, x in ((k, self.get_kernel(k)) for k in self.list_kernel_ids())
            ]
            victim = kernel_to_evict(rows, datetime.now(UTC), self._pooled(), self.page_load_grace_s)
            if victim is None:
                raise web.HTTPError(
                    503,
                    f"All {self.max_kernels} lesson kernels are in use (instructor --max-kernels "
                    f"{self.max_kernels}). Close a lesson tab you no longer need and reload, or restart "
                    "instructor with a larger --max-kernels (each kernel takes about 125 MB).",
                )
            self.log.info(
                "instructor: %s kernels (the cap): shutting down idle kernel %s", self.max_kernels, victim
            )
            await ensure_async(self.shutdown_kernel(victim))

    async def start_kernel(self, *args, **kwargs):
        await self.make_room()
        self._starting += 1
        try:
            return await ensure_async(super().start_kernel(*args, **kwargs))
        finally:
            self._starting -= 1


# What every lesson imports first (the notebooks' import cell): a spare kernel imports it in advance.
SPARE_WARM_UP = (
    "import matplotlib.pyplot, ipywidgets; from roofline import engines, measure, sim; "
    "from roofline.course import figures, readouts, widgets"
)


class _SpareKernel:
    """Mixed into Voilà's kernel manager: one kernel started in advance with the lessons' modules imported,
    handed to the next page that needs a new kernel (saving about 1.2 s of a 4 s switch); the next spare
    starts ``spare_delay_s`` later, never in the cap's last place. A page on a spare kernel does not see
    Voilà's request variables (``QUERY_STRING``, ...); no lesson reads them."""

    spare_id: str | None = None

    async def start_kernel(self, *args, **kwargs):
        spare, name = self.spare_id, kwargs.get("kernel_name") or self.default_kernel_name
        if spare is not None and not kwargs.get("path") and name == self.default_kernel_name:
            self.spare_id = None
            self.schedule_spare()
            if spare in self:  # (the cap may have shut it down to make room)
                self.get_kernel(spare).last_activity = datetime.now(UTC)
                return spare
        return await super().start_kernel(*args, **kwargs)

    def schedule_spare(self, delay_s: float | None = None) -> None:
        """Start the next spare kernel after ``delay_s`` (default ``spare_delay_s``)."""
        delay_s = self.spare_delay_s if delay_s is None else delay_s
        asyncio.get_event_loop().call_later(delay_s, lambda: asyncio.ensure_future(self.start_spare()))

    async def start_spare(self) -> None:
        if self.spare_id is not None or (self.max_kernels and self.live_kernels() + 1 >= self.max_kernels):
            return  # one already waits, or it would take the cap's last place, which is a page's
        warm_up = f"--IPKernelApp.exec_lines={SPARE_WARM_UP}"
        self.spare_id = await ensure_async(super().start_kernel(path="", extra_arguments=[warm_up]))

    async def cull_kernel_if_idle(self, kernel_id: str):
        if kernel_id != self.spare_id:  # the spare waits, idle and unconnected, by design
            return await ensure_async(super().cull_kernel_if_idle(kernel_id))


class _PoolTaking:
    """Mixed into Voilà's preheating kernel manager: room for the pool's refill before a page takes a
    kernel, and the taken kernel's idle time restarted: it ran from the end of preheating, and a culler
    pass before the page's websocket connected shut the kernel down under the page."""

    async def get_rendered_notebook(self, notebook_name=None, *args, **kwargs):
        await self.make_room()  # taking a kernel starts the pool's refill
        if not getattr(self, "_pools", {}).get(notebook_name):  # another page took it while room was made
            raise web.HTTPError(
                503,
                "The lesson's waiting kernel was just taken by another page loading at the same time. "
                "Reload in a few seconds.",
            )
        render_task, rendered, kernel_id = await super().get_rendered_notebook(notebook_name, *args, **kwargs)
        self.get_kernel(kernel_id).last_activity = datetime.now(UTC)
        return render_task, rendered, kernel_id


def course_kernel_manager_factory(factory):
    """Wrap Voilà's ``voila_kernel_manager_factory``: its kernel manager (``CourseKernelManager``) gets the
    cap, the spare kernel and, when preheating, ``_PoolTaking``."""
    if getattr(factory, "_course_factory", False):
        return factory

    def make(*args, **kwargs):
        base = factory(*args, **kwargs)
        mixins = (_SpareKernel, _KernelCap)
        if hasattr(base, "get_rendered_notebook"):
            mixins = (_PoolTaking, *mixins)

        class CourseKernelManager(*mixins, base):
            max_kernels = Integer(0, config=True, help="Most kernels alive at once (0: no cap).")
            page_load_grace_s = Float(
                PAGE_LOAD_GRACE_S, config=True, help="Seconds a kernel just used is kept from the cap."
            )
            spare_kernel = Bool(False, config=True, help="Keep one kernel started in advance.")
            spare_delay_s = Float(SPARE_DELAY_S, config=True, help="Seconds before the next spare starts.")

            def __init__(self, **kw):
                self._starting = 0
                super().__init__(**kw)
                if self.spare_kernel:
                    self.schedule_spare(delay_s=0)

        return CourseKernelManager

    make._course_factory = True
    return make


# --- the app ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What the app will serve (``roofline.apps.instructor.build_plan`` reads it from the command line).

    root : directory whose notebooks are served (``/voila/render/NAME.ipynb``).
    lessons : notebook paths relative to ``root``, each given one preheated kernel.
    port : TCP port on 127.0.0.1.
    token : the access token ("" when switched off).
    config : Voilà's settings (traitlets config); options given on the command line override them.
    argv : Voilà's command line: the directory, then the options passed through.
    query : added to every printed URL (``scale=1.5``, ``view=presenter``).
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

        >>> plan = Plan(Path("."), ["16_step_time.ipynb"], port=8870, token="abc", config={}, argv=[])
        >>> plan.urls()[0]
        'http://127.0.0.1:8870/?token=abc'
        >>> plan.urls()[1]
        'http://127.0.0.1:8870/voila/render/16_step_time.ipynb?token=abc'
        """
        base = f"http://127.0.0.1:{self.port}"
        params = "&".join(p for p in (f"token={self.token}" if self.token else "", self.query) if p)
        suffix = f"?{params}" if params else ""
        return [f"{base}/{suffix}", *(f"{base}/voila/render/{name}{suffix}" for name in self.lessons)]


def tornado_settings() -> dict:
    """Headers, the Host check and caching for every response (applied over Voilà's own settings)."""
    return {
        "headers": {"Content-Security-Policy": CONTENT_SECURITY_POLICY},
        "allow_remote_access": False,  # Jupyter's handlers then check the Host header ...
        "local_hostnames": LOCAL_HOSTNAMES,  # ... against these names and loopback addresses
        # The lab extensions' files are named by their content's hash: the browser may keep them rather
        # than ask again on every page (Voilà marks them no-cache; the round trips slowed every switch).
        "static_immutable_cache": ["/voila/labextensions/"],
    }


def broken_promises(app: Voila, plan: Plan) -> list[str]:
    """The settings, as Voilà ends up with them after every config file and option, that break what
    ``instructor`` printed: where it listens, its token, the Host check, the Content-Security-Policy."""
    problems = []
    if app.ip != "127.0.0.1":
        problems.append(f"Voila.ip is {app.ip!r} (instructor mode listens on 127.0.0.1 only)")
    if app.port != plan.port:
        problems.append(f"Voila.port is {app.port} (use --port {app.port})")
    if (app.token or "") != plan.token or app.auto_token:
        problems.append("Voila.token differs from the printed one (use --token T or --no-token)")
    if (
        app.identity_provider_class is not PasswordIdentityProvider
        or app.authorizer_class is not AllowAllAuthorizer
    ):
        problems.append("Voila.identity_provider_class or Voila.authorizer_class replaces the token check")
    settings = app.tornado_settings
    if settings.get("allow_remote_access", True) or settings.get("local_hostnames") != LOCAL_HOSTNAMES:
        problems.append("Voila.tornado_settings drops the Host check")
    if settings.get("headers", {}).get("Content-Security-Policy") != CONTENT_SECURITY_POLICY:
        problems.append("Voila.tornado_settings replaces the Content-Security-Policy")
    return problems


class CourseVoila(Voila):
    """Voilà with the course's routes and checks; ``launch(plan)`` starts it."""

    plan: Plan | None = None

    def initialize(self, argv=None):
        super().initialize(argv)
        problems = broken_promises(self, self.plan)
        if problems:
            raise SystemExit(
                "instructor: not starting, a setting breaks what instructor mode promises: "
                + "; ".join(problems)
                + ". It comes from a Jupyter config file (voila.json or voila.py in this directory or in "
                "`jupyter --paths`' config directories) or an option; to serve a network, run `voila` itself."
            )

    def init_handlers(self) -> list:
        return guard_routes(super().init_handlers(), self.server_url, self.plan.root, self.plan.lessons)


def launch(plan: Plan) -> None:
    """Start the instructor app for ``plan`` (blocks until the server stops)."""
    import voila.app

    voila.app.LargeFileManager = LessonContentsManager  # Voilà builds its contents manager from this name
    voila.app.voila_kernel_manager_factory = course_kernel_manager_factory(
        voila.app.voila_kernel_manager_factory
    )
    CourseVoila.plan = plan
    CourseVoila.launch_instance(
        argv=plan.argv, config=Config(plan.config), tornado_settings=tornado_settings()
    )
