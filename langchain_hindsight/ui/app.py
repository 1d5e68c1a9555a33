"""The console's Starlette application: routes, access control, and the pages' templates.

Every request needs the session cookie the access token was exchanged for
(``GET /?token=...``); without it the answer is 401, with a wrong or used token
403. Every ``POST`` also needs the session's CSRF token (a hidden form field) and
an ``Origin``, when the browser sends one, that is this server; a read-only
identity gets 403 for every action (and the pages hide them). The ``Host`` header
must be one of ``allowed_hosts`` (DNS rebinding). Responses forbid framing,
scripts and caching, and send a referrer only to this server (the token never
leaves in a ``Referer``; ``no-referrer`` would make a browser send ``Origin: null``
with every form post, which the origin check refuses). Pages carry stable
``id``/``data-testid`` attributes for browser tests.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from langchain_hindsight.errors import (
    AccessDeniedError,
    ConfigurationError,
    FeedbackNotFoundError,
    HindsightError,
    InvalidMemoryError,
    MemoryNotFoundError,
    RunNotFoundError,
)
from langchain_hindsight.ui import actions, plots
from langchain_hindsight.ui._security import COOKIE, Session, TokenGate
from langchain_hindsight.ui.strings import UiLocale, strings
from langchain_hindsight.ui.views import Console

__all__ = ["LOOPBACK_HOSTS", "create_app"]

logger = logging.getLogger(__name__)

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
"""Host names a console bound to loopback answers to."""

_LANG_COOKIE = "hindsight_console_lang"
_TEMPLATES = Path(__file__).parent / "templates"
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # not no-referrer: browsers then post Origin: null
    "Cache-Control": "no-store",
}
_PER_PAGE = 50

Handler = Callable[[Request], Awaitable[Response]]


def _float(value: str | None) -> float | None:
    try:
        return None if value in (None, "") else float(str(value))
    except ValueError:
        return None


def _int(value: str | None, default: int) -> int:
    try:
        return max(1, int(str(value))) if value else default
    except ValueError:
        return default


class _App:
    """The handlers over one :class:`Console` (see :func:`create_app`)."""

    def __init__(
        self, console: Console, gate: TokenGate, *, locale: UiLocale, allowed_hosts: Sequence[str] | None
    ) -> None:
        self.console = console
        self.gate = gate
        self.locale = locale
        self.allowed_hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}
        self.env = Environment(loader=FileSystemLoader(_TEMPLATES), autoescape=select_autoescape(default=True))

    # ------------------------------------------------------------------ plumbing
    def _lang(self, request: Request) -> UiLocale:
        asked = request.query_params.get("lang") or request.cookies.get(_LANG_COOKIE) or self.locale
        return "en" if asked == "en" else "zh"

    def _check_host(self, request: Request) -> None:
        if self.allowed_hosts is None:
            return
        host = (request.url.hostname or "").lower().strip("[]")
        if host not in self.allowed_hosts:
            raise HTTPException(403, f"host {host!r} is not served here")

    def _session(self, request: Request) -> Session:
        self._check_host(request)
        session = self.gate.session(request.cookies.get(COOKIE))
        if session is None:
            raise HTTPException(401, "no session: open the URL with the access token")
        return session

    def _namespace(self, request: Request, form: Mapping[str, Any] | None = None) -> str:
        ns = str((form or {}).get("namespace") or request.query_params.get("namespace") or "")
        ns = ns or self.console.default_namespace
        try:
            self.console.check_read(ns)
        except AccessDeniedError as e:
            raise HTTPException(403, str(e)) from e
        return ns

    def render(self, request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        """Render a template with the strings of the request's language and the page's common context."""
        lang = self._lang(request)
        session = self.gate.session(request.cookies.get(COOKIE))
        ns = context.pop("namespace", None) or self.console.default_namespace
        other = "zh" if lang == "en" else "en"
        query = {**dict(request.query_params), "lang": other}
        html = self.env.get_template(name).render(
            t=strings(lang),
            lang=lang,
            switch_url=f"{request.url.path}?{urlencode(query)}",
            namespace=ns,
            namespaces=self.console.namespaces() if session else [],
            csrf=session.csrf if session else "",
            flash=session.flash[:] if session else [],
            writable=self.console.writable(ns),
            who=self.console.describe(),
            **context,
        )
        if session:
            session.flash.clear()
        response = HTMLResponse(html, status_code=status, headers=_HEADERS)
        if request.query_params.get("lang") in ("zh", "en"):
            response.set_cookie(_LANG_COOKIE, lang, httponly=True, samesite="strict")
        return response

    async def error(self, request: Request, exc: Exception) -> Response:
        """Every refusal and failure as a page (never a traceback)."""
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        if status == 500:
            logger.error("console request %s failed", request.url.path, exc_info=exc)
        t = strings(self._lang(request))
        title = t.get(f"err_{status}_title", t["err_400_title"])
        body = t.get(f"err_{status}_body", "")
        return self.render(request, "error.html", status=status, title=title, body=body, detail=str(detail))

    # ------------------------------------------------------------------ entry
    async def index(self, request: Request) -> Response:
        """``/``: exchanges ``?token=`` for a session cookie, else redirects to the memories."""
        self._check_host(request)
        token = request.query_params.get("token")
        if token is not None:
            session_id = self.gate.exchange(token)
            if session_id is None:
                logger.warning("console: a wrong or already used access token was offered")
                raise HTTPException(403, "wrong or already used access token")
            response = RedirectResponse("/memories", status_code=303, headers=_HEADERS)
            response.set_cookie(COOKIE, session_id, httponly=True, samesite="strict", path="/")
            logger.info("console: access token exchanged for a session")
            return response
        self._session(request)
        return RedirectResponse("/memories", status_code=303, headers=_HEADERS)

    # ------------------------------------------------------------------ pages
    async def memories(self, request: Request) -> Response:
        """The list with filters, and the search (``?q=``) with every score factor and the floor."""
        self._session(request)
        ns = self._namespace(request)
        q = request.query_params
        filters = {key: q.get(key, "") for key in ("task_type", "source", "status", "min_conf", "max_conf")}
        page = _int(q.get("page"), 1)
        query = q.get("q", "").strip()
        if query:
            rows, task_type, how = await run_in_threadpool(
                self.console.search, ns, query, k=_int(q.get("k"), 10), task_type=q.get("task_type") or None
            )
            return self.render(request, "search.html", namespace=ns, query=query, rows=rows, task_type=task_type,
                               how=how, filters=filters)  # fmt: skip
        units, total = await run_in_threadpool(
            lambda: self.console.listing(
                ns,
                task_type=filters["task_type"],
                source=filters["source"],
                status=filters["status"],
                min_confidence=_float(filters["min_conf"]),
                max_confidence=_float(filters["max_conf"]),
                page=page,
                per_page=_PER_PAGE,
            )
        )
        pages = max(1, -(-total // _PER_PAGE))
        base = {"namespace": ns, **filters}
        prev_url = f"/memories?{urlencode({**base, 'page': page - 1})}" if page > 1 else ""
        next_url = f"/memories?{urlencode({**base, 'page': page + 1})}" if page < pages else ""
        facets = await run_in_threadpool(self.console.facets, ns)
        return self.render(request, "memories.html", namespace=ns, units=units, total=total, page=page, pages=pages,
                           filters=filters, facets=facets, query="", prev_url=prev_url, next_url=next_url)  # fmt: skip

    async def memory(self, request: Request) -> Response:
        """One memory: every field, history, runs it was served in, feedback, actions."""
        self._session(request)
        ns = self._namespace(request)
        page = await run_in_threadpool(self.console.memory, ns, request.path_params["memory_id"])
        return self.render(request, "memory.html", namespace=ns, page=page, u=page.unit, fields=page.unit.to_dict())

    async def forget_page(self, request: Request) -> Response:
        """The confirmation page that names what a forget erases."""
        self._session(request)
        ns = self._namespace(request)
        unit, runs, referring = await run_in_threadpool(
            self.console.forget_preview, ns, request.path_params["memory_id"]
        )
        return self.render(request, "forget.html", namespace=ns, u=unit, runs=runs, referring=referring)

    async def runs(self, request: Request) -> Response:
        """The journal: newest runs first."""
        self._session(request)
        ns = self._namespace(request)
        records = await run_in_threadpool(self.console.runs, ns)
        return self.render(request, "runs.html", namespace=ns, records=records)

    async def run(self, request: Request) -> Response:
        """``explain`` as a page, with each feedback's journaled effects and the undo."""
        self._session(request)
        ns = self._namespace(request)
        ex = await run_in_threadpool(self.console.explain, ns, request.path_params["run_id"])
        return self.render(request, "run.html", namespace=ns, ex=ex, r=ex.record,
                           undoable=self.console.undoable(ex.record))  # fmt: skip

    async def review(self, request: Request) -> Response:
        """The review queue: never successful, doubtful, near-duplicates, detected corrections."""
        self._session(request)
        ns = self._namespace(request)

        def gather() -> dict[str, Any]:
            return {
                "never": self.console.never_successful(ns),
                "doubtful": self.console.doubtful(ns),
                "pairs": self.console.near_duplicates(ns),
                "corrections": self.console.corrections(ns),
            }

        data = await run_in_threadpool(gather)
        return self.render(request, "review.html", namespace=ns, undoable=self.console.undoable, **data)

    async def plots(self, request: Request) -> Response:
        """Confidence histogram, serves and successes per day, success rate per memory."""
        self._session(request)
        ns = self._namespace(request)
        t = strings(self._lang(request))

        def draw() -> dict[str, Any]:
            days, serves, wins = self.console.timeline(ns)
            usage = self.console.usage(ns)
            return {
                "histogram": plots.histogram(self.console.confidences(ns), title=t["plot_confidence"]),
                "timeline": plots.timeline(
                    days, [(t["legend_serves"], serves), (t["legend_successes"], wins)], title=t["plot_timeline"]
                ),
                "rates": plots.bars(self.console.success_rates(usage), title=t["plot_success"]),
            }

        return self.render(request, "plots.html", namespace=ns, **(await run_in_threadpool(draw)))

    # ------------------------------------------------------------------ actions
    async def act(self, request: Request) -> Response:
        """``POST /act/{action}``: check session, CSRF, origin and grant; run the action; redirect with its message."""
        session = self._session(request)
        origin = request.headers.get("origin")
        if origin and urlsplit(origin).netloc.lower() != request.headers.get("host", "").lower():
            raise HTTPException(403, "cross-origin request")
        form = await request.form()
        if not self.gate.csrf_ok(session, str(form.get("csrf") or "")):
            logger.warning("console: %s refused: missing or wrong CSRF token", request.url.path)
            raise HTTPException(403, "missing or wrong CSRF token")
        ns = self._namespace(request, form)
        if not self.console.writable(ns):
            raise HTTPException(403, f"read-only console: no write grant on namespace {ns!r}")
        name = request.path_params["action"]
        t = strings(self._lang(request))
        value = {k: str(v) for k, v in form.items() if isinstance(v, str)}
        target = value.get("memory_id", "")
        calls: dict[str, Callable[[], str]] = {
            "confirm": lambda: actions.confirm(self.console, t, ns, target),
            "edit": lambda: actions.edit(self.console, t, ns, target, value.get("content", "")),
            "revert": lambda: actions.revert(self.console, t, ns, target),
            "merge": lambda: actions.merge(self.console, t, ns, target, value.get("other", "").strip()),
            "unmerge": lambda: actions.unmerge(self.console, t, ns, target),
            "forget": lambda: actions.forget(self.console, t, ns, target),
            "restore": lambda: actions.restore(self.console, t, ns, target),
            "undo_feedback": lambda: actions.undo_feedback(self.console, t, ns, value.get("run_id", "")),
        }
        if name not in calls:
            raise HTTPException(404, f"no action {name!r}")
        try:
            message = await run_in_threadpool(calls[name])
        except AccessDeniedError as e:
            raise HTTPException(403, str(e)) from e
        except (MemoryNotFoundError, RunNotFoundError) as e:
            raise HTTPException(404, str(e)) from e
        except (ConfigurationError, InvalidMemoryError, FeedbackNotFoundError) as e:
            message = t["failed"].format(error=str(e))
        except HindsightError as e:
            logger.error("console action %s failed", name, exc_info=True)
            message = t["failed"].format(error=f"{type(e).__name__}: {e}")
        session.flash.append(message)
        back = value.get("next", "")
        if not back.startswith("/") or back.startswith("//"):
            back = "/memories"
        if name == "forget" and back.startswith("/memories/"):
            back = "/memories"
        sep = "&" if "?" in back else "?"
        return RedirectResponse(f"{back}{sep}{urlencode({'namespace': ns})}", status_code=303, headers=_HEADERS)


def create_app(
    console: Console,
    *,
    token: str | None = None,
    locale: UiLocale = "zh",
    allowed_hosts: Sequence[str] | None = LOOPBACK_HOSTS,
) -> tuple[Starlette, TokenGate]:
    """The console's ASGI application over ``console``, and the gate holding its access token.

    Args:
        console: What the pages show and the actions change.
        token: A configured access token (reusable, at least 16 characters); ``None``
            generates a single-use one (``gate.token``).
        locale: The default language (``?lang=zh|en`` switches, remembered in a cookie).
        allowed_hosts: Host names the app answers to (``None``: any; for a non-loopback bind).

    Example:
        >>> from langchain_hindsight import MemoryStore
        >>> from langchain_hindsight.store.backend import InMemoryBackend
        >>> from langchain_hindsight.ui.views import Console
        >>> store = MemoryStore(backend=InMemoryBackend())
        >>> app, gate = create_app(Console(store), locale="en")
        >>> len(gate.token) > 20
        True
        >>> store.close()
    """
    if locale not in ("zh", "en"):
        raise ConfigurationError(f"locale must be 'zh' or 'en', got {locale!r}")
    gate = TokenGate(token)
    ui = _App(console, gate, locale=locale, allowed_hosts=allowed_hosts)
    routes = [
        Route("/", ui.index),
        Route("/memories", ui.memories),
        Route("/memories/{memory_id}", ui.memory),
        Route("/memories/{memory_id}/forget", ui.forget_page),
        Route("/runs", ui.runs),
        Route("/runs/{run_id:path}", ui.run),
        Route("/review", ui.review),
        Route("/plots", ui.plots),
        Route("/act/{action}", ui.act, methods=["POST"]),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        return await ui.error(request, HTTPException(404, str(exc)))

    async def forbidden(request: Request, exc: Exception) -> Response:
        return await ui.error(request, HTTPException(403, str(exc)))

    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        HTTPException: ui.error,
        AccessDeniedError: forbidden,
        MemoryNotFoundError: not_found,
        RunNotFoundError: not_found,
        Exception: ui.error,
    }
    return Starlette(routes=routes, exception_handlers=handlers), gate
