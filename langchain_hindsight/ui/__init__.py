"""``hindsight ui``: the review console, a local web page to see, review and correct what the agents learned.

Needs the ``ui`` extra (``pip install "langchain-hindsight[ui]"``: Starlette, Jinja2,
uvicorn). :class:`~langchain_hindsight.ui.views.Console` reads the store through the
library's API; :func:`~langchain_hindsight.ui.app.create_app` serves it with a one-time
access token, session cookies and CSRF tokens; :func:`~langchain_hindsight.ui.server.serve`
runs it until a signal. See ``docs/console.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_hindsight._lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_hindsight.ui.app import LOOPBACK_HOSTS, create_app
    from langchain_hindsight.ui.server import is_loopback, serve
    from langchain_hindsight.ui.views import Console

_EXPORTS: dict[str, str] = {
    "Console": ".views",
    "LOOPBACK_HOSTS": ".app",
    "create_app": ".app",
    "is_loopback": ".server",
    "serve": ".server",
}
"""Each public name and the module defining it (imported on first use)."""

__all__ = [
    "LOOPBACK_HOSTS",
    "Console",
    "create_app",
    "is_loopback",
    "serve",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
