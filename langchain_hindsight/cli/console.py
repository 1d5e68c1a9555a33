"""``hindsight ui``: serve the review console over the store (needs the ``ui`` extra).

This module is imported only when the command runs, and it imports the console
(Starlette, Jinja2, uvicorn) at its top; without the extra the command says which
package to install.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from langchain_hindsight.cli._store import open_store, principal_of
from langchain_hindsight.errors import ConfigurationError

try:  # the [ui] extra
    from langchain_hindsight.ui import LOOPBACK_HOSTS, Console, create_app, is_loopback, serve
except ImportError as _missing:  # pragma: no cover - depends on the environment
    _UI_ERROR: ImportError | None = _missing
else:
    _UI_ERROR = None

__all__ = ["ui"]


def _token(args: argparse.Namespace) -> str | None:
    """The configured token of ``--token-file`` (stripped), or ``None``."""
    if not args.token_file:
        return None
    try:
        token = Path(args.token_file).read_text(encoding="utf-8").strip()
    except OSError as e:
        raise ConfigurationError(f"cannot read --token-file {args.token_file!r}: {e.strerror or e}") from e
    if len(token) < 16:
        raise ConfigurationError("the token in --token-file must be at least 16 characters")
    return token


def ui(args: argparse.Namespace) -> int:
    """``hindsight ui``: print the URL with the access token, then serve until SIGTERM/SIGINT."""
    if _UI_ERROR is not None:
        raise ConfigurationError(
            f'hindsight ui needs the ui extra: pip install "langchain-hindsight[ui]" ({_UI_ERROR})'
        )
    if not 0 <= args.port < 65536:
        raise ConfigurationError(f"--port must be 0-65535, got {args.port}")
    token = _token(args)
    loopback = is_loopback(args.host)
    if not loopback and token is None:
        raise ConfigurationError(f"--host {args.host} is not loopback: give a configured token with --token-file FILE")
    principal = principal_of(args)
    if principal is not None:
        args.namespace = args.namespace or principal.namespace
    with open_store(args) as store:
        console = Console(store, principal=principal, namespace=args.namespace)
        console.warm()  # the listing is read while the browser opens the URL
        try:
            app, gate = create_app(console, token=token, locale=args.locale,
                                   allowed_hosts=LOOPBACK_HOSTS if loopback else None)  # fmt: skip
            who = f"principal {principal.name!r}" if principal else "the operator"
            mode = " (read-only)" if console.read_only else ""
            print(f"hindsight ui: {who}{mode}, namespace {console.default_namespace!r}; Ctrl-C stops", file=sys.stderr)
            stopped = serve(app, host=args.host, port=args.port, token=gate.token)
        finally:
            console.close()
    if stopped:
        print(f"hindsight ui: stopped by {stopped}; the store is closed", file=sys.stderr)
    return 0
