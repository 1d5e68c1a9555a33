"""The console's Starlette application: routes, access control, and the pages' templates.

Opening ``GET /?token=...`` exchanges the access token for a session (see
:mod:`~langchain_hindsight.ui._security`): every page of the session lives under
``/s/<key>/`` and needs this console's session cookie, which is bound to that
path (another listener on the same host never receives it). Without both the
answer is 401, with a wrong or used token 403. Every ``POST`` also needs the
session's CSRF token (a hidden form field) and an ``Origin``, when the browser
sends one, that is this server; a read-only identity gets 403 for every action
(and the pages hide them). The ``Host`` header must be one of ``allowed_hosts``
(DNS rebinding). A parameter out of range (``k``, ``page``, a confidence, an id or
a query too long) is a 400 page saying which and why. Responses forbid framing,
scripts and caching, and send a referrer only to this server (the session's key
never leaves in a ``Referer``; ``no-referrer`` would make a browser send
``Origin: null`` with every form post, which the origin check refuses). Every
text reaches the page in the reader's language (:mod:`~langchain_hindsight.ui._words`).
Pages carry stable ``id``/``data-testid`` attributes for browser tests.
"""

from __future__ import annotations

import logging
import math
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
from langchain_hindsight.ui._diff import word_diff
from langchain_hindsight.ui._security import PATH_PREFIX, Session, TokenGate
from langchain_hindsight.ui._words import Words
from langchain_hindsight.ui.strings import UiLocale, strings
from langchain_hindsight.ui.views import SCORE_TERMS, Console, usage_bars

__all__ = ["LIMITS", "LOOPBACK_HOSTS", "create_app"]

logger = logging.getLogger(__name__)

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
"""Host names a console bound to loopback answers to."""

LIMITS = {"k": 50, "page": 100_000, "q": 1000, "id": 256, "namespace": 256, "filter": 128, "content": 20_000}
"""Largest accepted value of ``k`` and ``page``, and longest accepted text of each kind of parameter."""

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


class Refusal(HTTPException):
    """A refused request whose reason is a sentence of ``strings`` (``key``) with its fields."""

    def __init__(self, status: int, key: str, **params: object) -> None:
        super().__init__(status, f"{key} {params}")
        self.key = key
        self.params = {k: str(v) for k, v in params.items()}


def _text(value: str | None, name: str, limit: int) -> str:
    text = value or ""
    if len(text) > limit:
        raise Refusal(400, "bad_too_long", name=name, limit=limit, n=len(text))
    return text


def _int(value: str | None, name: str, default: int, top: int) -> int:
    if value in (None, ""):
        return default
    try:
        n = int(str(value))
    except ValueError:
        raise Refusal(400, "bad_int", name=name, value=str(value)[:40], top=top) from None
    if not 1 <= n <= top:
        raise Refusal(400, "bad_int", name=name, value=str(value)[:40], top=top)
    return n


def _float(value: str | None, name: str) -> float | None:
    if value in (None, ""):
        return None
    try:
        x = float(str(value))
    except ValueError:
        raise Refusal(400, "bad_conf", name=name, value=str(value)[:40]) from None
    if not math.isfinite(x) or not 0.0 <= x <= 1.0:
        raise Refusal(400, "bad_conf", name=name, value=str(value)[:40])
    return x


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
        self.env.globals.update(word_diff=word_diff, usage_bars=usage_bars, score_terms=SCORE_TERMS)

    # ------------------------------------------------------------------ plumbing
    def _lang(self, request: Request) -> UiLocale:
        asked = request.query_params.get("lang") or request.cookies.get(_LANG_COOKIE) or self.locale
        return "en" if asked == "en" else "zh"

    def _check_host(self, request: Request) -> None:
        if self.allowed_hosts is None:
            return
        host = (request.url.hostname or "").lower().strip("[]")
        if host not in self.allowed_hosts:
            raise Refusal(403, "denied_host", host=host[:80])

    def _current(self, request: Request) -> Session | None:
        """The request's session: the path's key with this console's cookie (``None``: not both, or wrong)."""
        key = request.path_params.get("key")
        return self.gate.session(key, request.cookies.get(self.gate.cookie)) if key else None

    def _session(self, request: Request) -> Session:
        self._check_host(request)
        session = self._current(request)
        if session is None:
            raise Refusal(401, "denied_session")
        return session

    def _namespace(self, request: Request, form: Mapping[str, Any] | None = None) -> str:
        ns = str((form or {}).get("namespace") or request.query_params.get("namespace") or "")
        ns = _text(ns, "namespace", LIMITS["namespace"]) or self.console.default_namespace
        try:
            self.console.check_read(ns)
        except AccessDeniedError:
            raise Refusal(403, "denied_namespace", namespace=ns) from None
        return ns

    def _id(self, request: Request, name: str) -> str:
        return _text(request.path_params[name], name, LIMITS["id"])

    def render(self, request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        """Render a template with the strings of the request's language and the page's common context."""
        lang = self._lang(request)
        session = self._current(request)
        ns = context.pop("namespace", None) or self.console.default_namespace
        other = "zh" if lang == "en" else "en"
        query = {**dict(request.query_params), "lang": other}
        queue = 0
        if session is not None:
            try:
                queue = len(self.console.queue(ns))
            except HindsightError:  # the page itself reports what failed
                queue = 0
        html = self.env.get_template(name).render(
            t=strings(lang),
            w=Words(lang),
            lang=lang,
            p=session.prefix if session else "",
            switch_url=f"{request.url.path}?{urlencode(query)}",
            namespace=ns,
            namespaces=self.console.namespaces() if session else [],
            csrf=session.csrf if session else "",
            flash=session.flash[:] if session else [],
            undo=session.undo[:] if session else [],
            queue_count=queue,
            writable=self.console.writable(ns),
            who=self.console.describe(),
            here_path=request.url.path[len(session.prefix) :] if session else "",
            **context,
        )
        if session:
            session.flash.clear()
            session.undo.clear()
        response = HTMLResponse(html, status_code=status, headers=_HEADERS)
        if request.query_params.get("lang") in ("zh", "en"):
            response.set_cookie(_LANG_COOKIE, lang, httponly=True, samesite="strict")
        return response

    async def error(self, request: Request, exc: Exception) -> Response:
        """Every refusal and failure as a page in the reader's language (never a traceback)."""
        t = strings(self._lang(request))
        if isinstance(exc, Refusal):
            status, detail = exc.status_code, t[exc.key].format(**exc.params)
        elif isinstance(exc, HTTPException):
            status = exc.status_code
            detail = t.get(f"err_{status}_body", "")
        elif isinstance(exc, MemoryNotFoundError | RunNotFoundError):
            status, detail = 404, t["missing"]
        elif isinstance(exc, AccessDeniedError):
            status, detail = 403, t["err_403_body"]
        else:
            status, detail = 500, t["err_500_body"]
            logger.error("console request %s failed", request.url.path, exc_info=exc)
        if status in (400, 401, 403, 404):
            logger.info("console: %s %s refused with %d (%s)", request.method, request.url.path[:120], status,
                        getattr(exc, "key", type(exc).__name__))  # fmt: skip
        title = t.get(f"err_{status}_title", t["err_400_title"])
        body = t.get(f"err_{status}_body", "")
        return self.render(request, "error.html", status=status, title=title, body=body, detail=detail)

    # ------------------------------------------------------------------ entry
    async def index(self, request: Request) -> Response:
        """``/``: exchanges ``?token=`` for a session under its own path, with its path-bound cookie."""
        self._check_host(request)
        token = request.query_params.get("token")
        if token is None:
            raise Refusal(401, "denied_session")
        session = self.gate.exchange(_text(token, "token", 512))
        if session is None:
            logger.warning("console: a wrong or already used access token was offered")
            raise Refusal(403, "denied_token")
        response = RedirectResponse(f"{session.prefix}/memories", status_code=303, headers=_HEADERS)
        response.set_cookie(self.gate.cookie, session.secret, httponly=True, samesite="strict",
                            path=f"{session.prefix}/")  # fmt: skip
        logger.info("console: access token exchanged for a session")
        return response

    async def outside(self, request: Request) -> Response:
        """Any path outside a session's prefix: 401 (the pages live under ``/s/<key>/``)."""
        self._check_host(request)
        raise Refusal(401, "denied_session")

    async def home(self, request: Request) -> Response:
        """``/s/<key>/``: the memories."""
        session = self._session(request)
        return RedirectResponse(f"{session.prefix}/memories", status_code=303, headers=_HEADERS)

    # ------------------------------------------------------------------ pages
    async def memories(self, request: Request) -> Response:
        """The list with filters, and the search (``?q=``) with every score factor and the floor."""
        self._session(request)
        ns = self._namespace(request)
        q = request.query_params
        filters = {key: _text(q.get(key, ""), key, LIMITS["filter"]) for key in ("task_type", "source", "status")}
        low, high = _float(q.get("min_conf"), "min_conf"), _float(q.get("max_conf"), "max_conf")
        filters.update(min_conf=q.get("min_conf", ""), max_conf=q.get("max_conf", ""))
        page = _int(q.get("page"), "page", 1, LIMITS["page"])
        query = _text(q.get("q", ""), "q", LIMITS["q"]).strip()
        k = _int(q.get("k"), "k", 10, LIMITS["k"])
        if query:
            rows, task_type, how = await run_in_threadpool(
                self.console.search, ns, query, k=k, task_type=filters["task_type"] or None
            )
            return self.render(request, "search.html", namespace=ns, query=query, rows=rows, task_type=task_type,
                               how=how, filters=filters)  # fmt: skip
        units, total = await run_in_threadpool(
            lambda: self.console.listing(
                ns,
                task_type=filters["task_type"],
                source=filters["source"],
                status=filters["status"],
                min_confidence=low,
                max_confidence=high,
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
        """One memory: its words, labels, confidence over time, usage, chain with diffs, runs, feedback, actions."""
        self._session(request)
        ns = self._namespace(request)
        memory_id = self._id(request, "memory_id")
        t = strings(self._lang(request))
        w = Words(self._lang(request))

        def gather() -> dict[str, Any]:
            page = self.console.memory(ns, memory_id)
            history = self.console.confidence_history(page)
            usage = self.console.usage_of(ns, memory_id)
            line = plots.line(
                [(w.date(at), v) for at, v in history],
                title=t["plot_conf_history"],
                x_label=t["axis_time"],
                y_label=t["axis_confidence"],
                testid="plot-conf-history",
            )
            return {"page": page, "u": page.unit, "usage": usage, "conf_line": line, "points": len(history)}

        data = await run_in_threadpool(gather)
        return self.render(request, "memory.html", namespace=ns, **data)

    async def forget_page(self, request: Request) -> Response:
        """The confirmation page that names what a forget erases."""
        self._session(request)
        ns = self._namespace(request)
        unit, runs, referring = await run_in_threadpool(self.console.forget_preview, ns, self._id(request, "memory_id"))
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
        ex = await run_in_threadpool(self.console.explain, ns, self._id(request, "run_id"))
        return self.render(request, "run.html", namespace=ns, ex=ex, r=ex.record,
                           undoable=self.console.undoable(ex.record))  # fmt: skip

    async def review(self, request: Request) -> Response:
        """The review queue as one list, each item with its actions beside it."""
        self._session(request)
        ns = self._namespace(request)
        items = await run_in_threadpool(self.console.queue, ns)
        return self.render(request, "review.html", namespace=ns, items=items)

    async def plots(self, request: Request) -> Response:
        """Confidence histogram, serves and successes per day, usage per memory labelled by its words."""
        self._session(request)
        ns = self._namespace(request)
        t = strings(self._lang(request))

        def draw() -> dict[str, Any]:
            days, serves, wins = self.console.timeline(ns)
            usage = self.console.usage(ns)[:15]
            rows = [
                (actions.short(m.content) or m.memory_id,
                 [(f, t[f"usage_{f}"], c) for bar in usage_bars(m)[:1] for f, c in bar])
                for m in usage
            ]  # fmt: skip
            legend = [(f, t[f"usage_{f}"]) for bar in usage_bars(usage[0])[:1] for f, _ in bar] if usage else []
            return {
                "histogram": plots.histogram(self.console.confidences(ns), title=t["plot_confidence"],
                                             x_label=t["axis_confidence"], y_label=t["axis_memories"]),
                "timeline": plots.timeline(
                    days, [(t["legend_serves"], serves), (t["legend_successes"], wins)], title=t["plot_timeline"],
                    x_label=t["axis_day"], y_label=t["axis_count"],
                ),
                "rates": plots.bars(rows, title=t["plot_success"], x_label=t["axis_runs"], legend=legend),
            }  # fmt: skip

        return self.render(request, "plots.html", namespace=ns, **(await run_in_threadpool(draw)))

    # ------------------------------------------------------------------ actions
    async def act(self, request: Request) -> Response:
        """``POST /s/<key>/act/{action}``: check session, CSRF, origin and grant; run it; land on its result."""
        session = self._session(request)
        origin = request.headers.get("origin")
        if origin and urlsplit(origin).netloc.lower() != request.headers.get("host", "").lower():
            raise Refusal(403, "denied_origin")
        form = await request.form()
        if not self.gate.csrf_ok(session, str(form.get("csrf") or "")):
            logger.warning("console: %s refused: missing or wrong CSRF token", request.url.path)
            raise Refusal(403, "denied_csrf")
        ns = self._namespace(request, form)
        if not self.console.writable(ns):
            raise Refusal(403, "denied_read_only", namespace=ns)
        name = request.path_params["action"]
        t = strings(self._lang(request))
        value = {k: str(v) for k, v in form.items() if isinstance(v, str)}
        target = _text(value.get("memory_id", ""), "memory_id", LIMITS["id"])
        other = _text(value.get("other", "").strip(), "other", LIMITS["id"])
        run_id = _text(value.get("run_id", ""), "run_id", LIMITS["id"])
        content = _text(value.get("content", ""), "content", LIMITS["content"])
        calls: dict[str, Callable[[], actions.Done]] = {
            "confirm": lambda: actions.confirm(self.console, t, ns, target),
            "edit": lambda: actions.edit(self.console, t, ns, target, content),
            "revert": lambda: actions.revert(self.console, t, ns, target),
            "merge": lambda: actions.merge(self.console, t, ns, target, other),
            "unmerge": lambda: actions.unmerge(self.console, t, ns, target),
            "forget": lambda: actions.forget(self.console, t, ns, target),
            "restore": lambda: actions.restore(self.console, t, ns, target),
            "undo_feedback": lambda: actions.undo_feedback(self.console, t, ns, run_id),
        }
        if name not in calls:
            raise Refusal(404, "missing_action", action=name[:40])
        done: actions.Done | None = None
        try:
            done = await run_in_threadpool(calls[name])
        except AccessDeniedError:
            raise Refusal(403, "denied_read_only", namespace=ns) from None
        except (MemoryNotFoundError, RunNotFoundError):
            raise Refusal(404, "missing") from None
        except actions.Refused as e:
            message = t["failed"].format(error=t[e.key].format(**e.params))
        except FeedbackNotFoundError:
            message = t["failed"].format(error=t["refused_nothing_to_undo"])
        except (ConfigurationError, InvalidMemoryError) as e:
            logger.info("console action %s refused: %s", name, e)
            message = t["failed"].format(error=t["refused_invalid"])
        except HindsightError:
            logger.error("console action %s failed", name, exc_info=True)
            message = t["failed"].format(error=t["refused_engine"])
        back = value.get("next", "")
        if not back.startswith("/") or back.startswith("//"):
            back = "/memories"
        if done is not None:
            message = done.message
            if done.undo:
                session.undo.append(done.undo)
            if done.land and (back.startswith("/memories/") or (name == "undo_feedback" and back.startswith("/runs/"))):
                back = done.land  # after an action on a memory's page: its result (the new version, the keeper)
            if name == "forget" and back.startswith("/memories/"):
                back = "/memories"
        session.flash.append(message)
        sep = "&" if "?" in back else "?"
        return RedirectResponse(f"{session.prefix}{back}{sep}{urlencode({'namespace': ns})}", status_code=303,
                                headers=_HEADERS)  # fmt: skip


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
        >>> len(gate.token) > 20, gate.cookie.startswith("hindsight_console_")
        (True, True)
        >>> store.close()
    """
    if locale not in ("zh", "en"):
        raise ConfigurationError(f"locale must be 'zh' or 'en', got {locale!r}")
    gate = TokenGate(token)
    ui = _App(console, gate, locale=locale, allowed_hosts=allowed_hosts)
    s = PATH_PREFIX + "{key}"
    routes = [
        Route("/", ui.index),
        Route(s, ui.home),
        Route(f"{s}/", ui.home),
        Route(f"{s}/memories", ui.memories),
        Route(s + "/memories/{memory_id}", ui.memory),
        Route(s + "/memories/{memory_id}/forget", ui.forget_page),
        Route(f"{s}/runs", ui.runs),
        Route(s + "/runs/{run_id:path}", ui.run),
        Route(f"{s}/review", ui.review),
        Route(f"{s}/plots", ui.plots),
        Route(s + "/act/{action}", ui.act, methods=["POST"]),
        Route("/{rest:path}", ui.outside, methods=["GET", "POST", "HEAD"]),
    ]

    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        HTTPException: ui.error,
        HindsightError: ui.error,
        Exception: ui.error,
    }
    return Starlette(routes=routes, exception_handlers=handlers), gate
