"""``hindsight ui``: the review console, a local web page to see, review and correct what the agents learned.

Needs the ``ui`` extra (``pip install "langchain-hindsight[ui]"``: Starlette, Jinja2,
uvicorn). :class:`~langchain_hindsight.ui.views.Console` reads the store through the
library's API; :func:`~langchain_hindsight.ui.app.create_app` serves it with a one-time
access token, session cookies and CSRF tokens; :func:`~langchain_hindsight.ui.server.serve`
runs it until a signal. See ``docs/console.md``.
"""

from langchain_hindsight.ui.app import LOOPBACK_HOSTS, create_app
from langchain_hindsight.ui.server import is_loopback, serve
from langchain_hindsight.ui.views import Console

__all__ = ["LOOPBACK_HOSTS", "Console", "create_app", "is_loopback", "serve"]
