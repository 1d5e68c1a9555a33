r"""The ``hindsight`` command line: inspect, maintain, export and forget memories.

Every subcommand takes ``--path DIR`` (an embedded store directory), or
``--server HOST:PORT`` (a Chroma server started with ``chroma run``), or
``--database-url postgresql://...`` (a PostgreSQL database with pgvector, shared by
any number of processes), plus ``--namespace`` and ``--json``. Defaults come from the
environment, read in one function (:func:`langchain_hindsight.settings.store_target`, which
``Hindsight()`` calls too); an option given on the command line wins over every variable:

* ``HINDSIGHT_PATH`` — store directory (default ``./memory_db``);
* ``HINDSIGHT_SERVER`` — ``host:port`` of a Chroma server (overrides the path);
* ``HINDSIGHT_DATABASE_URL`` — a Postgres database (overrides the path and the server).

``--principal NAME`` (grants from ``--config grants.toml``) runs a command as
that agent: ``search``, ``show``, ``history``, ``stats``, ``runs``, ``explain``,
``report`` and ``export`` see only the namespaces it may read (its own by
default; ``--namespace`` picks another readable one, ``--all`` means all of
them); ``forget`` deletes its own memories and every copy it published; the
operator commands (``maintain``, ``review``, ``import``, ``restore``,
``reembed``, ``undo-feedback``) refuse it.

Exit codes: 0 ok, 1 error (the store or server failed, or an unexpected error),
2 usage (bad arguments or input), 3 not found (memory, run, file, a run's feedback
to undo, a store path that does not exist or holds no store — only ``import``
creates a store — or a ``--namespace`` the store does not hold), 4 store locked by another
process, 5 access denied (the principal has no grant for it). Every error is one
line on stderr, never a traceback. Tables go to stdout, progress of long
operations to stderr; text from the store is shown with control, escape and
invisible characters escaped (``\x1b`` → ``\u001b``), so a stored memory cannot
drive the operator's terminal.

Each command's module is imported only when it runs, and only ``search`` (and
``demo``, ``maintain --review`` with a model, ``reembed``, ``mcp``) loads an
embedding or chat model. ``stats`` first tries its quick path (``_stats``), which answers from
the store's per-namespace counts files without importing Chroma or the store.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, NoReturn

from langchain_hindsight.cli._output import days, one_line, positive_int, query, safe
from langchain_hindsight.errors import (
    AccessDeniedError,
    ConfigurationError,
    FeedbackNotFoundError,
    HindsightError,
    InvalidMemoryError,
    MemoryNotFoundError,
    RunNotFoundError,
    StoreLockedError,
)
from langchain_hindsight.settings import DEFAULT_DIRECTORY, store_target

__all__ = [
    "EXIT_DENIED",
    "EXIT_ERROR",
    "EXIT_LOCKED",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_USAGE",
    "main",
    "resolve_store_target",
    "run",
]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_LOCKED, EXIT_DENIED = 0, 1, 2, 3, 4, 5

_OPERATOR_ONLY = frozenset({"maintain", "review", "import", "restore", "reembed", "undo-feedback"})
"""Commands that change or rewrite a whole store: never run as a principal."""


def _module(name: str) -> ModuleType:
    """A command module of this package, imported when its command runs (so ``stats`` never imports ``search``'s)."""
    return importlib.import_module(f"{__package__}.{name}")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2), like every other CLI error."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"hindsight: {safe(' '.join(message.split()))} (see '{self.prog} --help')\n")


def _parser(words: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The argument parser; ``words`` (the command line) says which command's heavy options to add."""
    common = argparse.ArgumentParser(add_help=False)
    # Each option always exists (None: not given); _run fills the one store target from the environment
    # (settings.store_target), so no command reads the environment or guesses a missing attribute.
    where = common.add_mutually_exclusive_group()
    where.add_argument(
        "--path",
        default=None,
        help="store directory (default: env HINDSIGHT_PATH, else ./memory_db)",
    )
    where.add_argument(
        "--server",
        default=None,
        help="Chroma server HOST:PORT (default: env HINDSIGHT_SERVER)",
    )
    where.add_argument(
        "--database-url",
        default=None,
        help="PostgreSQL database postgresql://USER@HOST/DB, shared by many processes (default: env "
        "HINDSIGHT_DATABASE_URL, which wins over HINDSIGHT_SERVER and HINDSIGHT_PATH)",
    )
    common.add_argument("--namespace", help="namespace (default: 'default', or the principal's own)")
    common.add_argument("--json", action="store_true", help="machine-readable JSON output")
    common.add_argument("--principal", help="act as this agent: only what its grants allow (see --config)")
    common.add_argument(
        "--config", help="TOML file with [principals.NAME] grants (default: the principal's own namespace only)"
    )
    model = argparse.ArgumentParser(add_help=False)
    model.add_argument(
        "--model",
        help="chat model name for an LLM review (ChatOpenAI; needs OPENAI_API_KEY unless --base-url is a local server)",
    )
    model.add_argument("--base-url", help="OpenAI-compatible base URL for --model")
    model.add_argument("--locale", choices=["zh", "en"], default="zh", help="language of review patterns")
    clock = argparse.ArgumentParser(add_help=False)
    clock.add_argument("--now", help="pretend the current time is this ISO-8601 time")

    parser = _Parser(
        prog="hindsight",
        description="Experience memory for LangChain agents.",
        epilog="exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 store locked, 5 access denied",
    )
    sub: Any = parser.add_subparsers(dest="command", required=True)

    def add(name: str, func: str, help: str, *parents: Any) -> Any:
        p = sub.add_parser(name, help=help, description=help, parents=[common, *parents])
        p.set_defaults(func=func)
        return p

    demo_help = "run the offline end-to-end demo: an agent learns a lesson in run 1 and uses it in run 2"
    demo = sub.add_parser("demo", help="run the offline end-to-end demo", description=demo_help)
    demo.add_argument(
        "--path",
        dest="demo_path",
        help="directory for the CSV files and the store (default: <temp dir>/hindsight-demo, reused by every run)",
    )
    demo.add_argument("--model", help="a real chat model instead of the scripted one")
    demo.add_argument("--base-url", help="OpenAI-compatible base URL for --model")
    demo.add_argument("--locale", choices=["zh", "en"], help="language of the demo's tasks and lesson (default: zh)")
    demo.add_argument("--quiet", action="store_true", help="print nothing (the exit code says how it went)")
    demo.set_defaults(func="serve:demo")

    p = add("search", "search:search", "what recall would serve for a task, with each factor of the score")
    p.add_argument("query", type=query, help="the task, as the agent would be given it (any language)")
    p.add_argument("-k", type=positive_int, default=5, help="how many memories to list (default: 5)")
    p.add_argument("--all", action="store_true", help="also the matches below the relevance floor (marked served: no)")
    p.add_argument("--task-type", help="score as for this task type (default: inferred from the query)")
    p = add("show", "browse:show", "print memories by id")
    p.add_argument("memory_id", nargs="+", help="one or more memory ids (mem_…), as search and runs print them")
    p = add("history", "browse:history", "the supersedes chain through a memory")
    p.add_argument("memory_id", help="a memory id (mem_…)")
    p = add("stats", "browse:stats", "counts by status, task type and source")
    p.add_argument("--all", action="store_true", help="every namespace (a principal: every one it may read)")
    p.set_defaults(quick="_stats:quick")  # answered from the store's trusted summary when it can be
    p = add("runs", "browse:runs", "recent journalled runs and reviews")
    p.add_argument("--limit", type=positive_int, default=20, help="how many runs, newest first (default: 20)")
    p = add("explain", "browse:explain", "which memories shaped a run, and why they were ranked so")
    p.add_argument("run_id", help="a run id, as hindsight runs prints it")
    p = add(
        "report", "maintenance:report", "usage review: memories recalled often but never followed by success", clock
    )
    p.add_argument("--days", type=days, default=None, help="only runs of the last DAYS days")
    p.add_argument(
        "--min-shown",
        type=positive_int,
        default=3,
        help="list a memory as never helping once shown this often (default: 3)",
    )
    p = add("review", "maintenance:review", "distil cross-task patterns from recent runs", model, clock)
    p.add_argument("--window-days", type=days, default=7.0, help="review the runs of the last DAYS days (default: 7)")
    p.add_argument("--if-due", action="store_true", help="skip unless the last review is --window-days old")
    p.add_argument("--yes", action="store_true", help="confirm a --now in the future")
    p = add("maintain", "maintenance:maintain", "decay, archive and merge (idempotent; run it daily)", model, clock)
    p.add_argument("--review", action="store_true", help="also run a periodic review")
    p.add_argument("--dry-run", action="store_true", help="report what would change, on a copy; change nothing")
    p.add_argument("--yes", action="store_true", help="confirm a --now in the future (it changes memories for good)")
    p = add("export", "browse:export", "write memories as JSONL (every field)")
    p.add_argument("-o", "--output", help="file (default: stdout)")
    p.add_argument(
        "--journal", action="store_true", help="also the run journal (a complete backup: import restores it)"
    )
    p.add_argument("--all", action="store_true", help="every namespace (a principal: every one it may read)")
    p = add("import", "maintenance:import_", "read memories from JSONL exactly as exported")
    p.add_argument("file", help="JSONL file, or - for stdin")
    p.add_argument("--replace", action="store_true", help="overwrite ids that are already stored with other data")
    p.set_defaults(creates_store=True)
    p = add("forget", "maintenance:forget", "hard-delete memories (or a whole namespace)")
    p.add_argument(
        "memory_id", nargs="*", help="memory ids to delete for good (erased from the store and the run journal)"
    )
    p.add_argument("--all", action="store_true", help="the whole --namespace (needs --yes)")
    p.add_argument("--yes", action="store_true", help="confirm --all (it cannot be undone)")
    p = add("undo-feedback", "feedback:undo_feedback", "revert exactly what a user's feedback on a run did")
    p.add_argument("run_id", help="the run whose newest feedback to revert")
    p = add("restore", "maintenance:restore", "bring archived memories back")
    p.add_argument("memory_id", nargs="+", help="archived memory ids to make active again")
    p = add("reembed", "maintenance:reembed", "re-embed every memory (every namespace unless --namespace)")
    if "reembed" in words:  # its options live with the re-embedding code, which imports the embedders
        _module("maintenance").add_reembed_arguments(p)
    p = add("mcp", "serve:mcp", "serve the store to MCP clients as one principal (needs the [mcp] extra)")
    p.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default="stdio",
        help="stdio for a client that starts the server (default), http to serve many with a bearer token",
    )
    p.add_argument("--host", default="127.0.0.1", help="bind address for --transport http")
    p.add_argument("--port", type=int, default=8765, help="port for --transport http")
    p.add_argument(
        "--token-file",
        help="file whose first line is the HTTP bearer token (else $HINDSIGHT_MCP_TOKEN, else a new one)",
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        help="a further Host/Origin name clients use (e.g. a LAN address with --host 0.0.0.0); repeatable",
    )
    p.add_argument("--locale", choices=["zh", "en"], default="zh", help="language of the recalled block")
    p.set_defaults(creates_store=True)  # an agent's first remember creates its store
    p = add("ui", "console:ui", "the review console: a local web page (needs the [ui] extra)")
    p.add_argument("--host", default="127.0.0.1", help="bind address (not loopback: needs --token-file)")
    p.add_argument("--port", type=int, default=8766, help="port (0: any free one)")
    p.add_argument("--token-file", help="file holding a fixed access token (at least 16 characters)")
    p.add_argument("--locale", choices=["zh", "en"], default="zh", help="default language of the pages")
    return parser


def _function(spec: str) -> Callable[[argparse.Namespace], Any]:
    """The function ``module:name`` of this package (its module imported now, not before)."""
    module, _, name = spec.partition(":")
    func: Callable[[argparse.Namespace], Any] = getattr(_module(module), name)
    return func


def resolve_store_target(args: argparse.Namespace) -> None:
    """Fill ``args.path`` / ``args.server`` / ``args.database_url`` with the one store target.

    The option given wins; with none, :func:`~langchain_hindsight.settings.store_target` reads the
    environment (the same function ``Hindsight()`` calls). Afterwards exactly one of the three is
    set, except ``args.path``, which keeps the directory a directory-less target would use.
    """
    target = store_target(directory=args.path, server=args.server, database_url=args.database_url)
    args.path = target.directory if target.directory is not None else DEFAULT_DIRECTORY
    args.server, args.database_url = target.server, target.database_url


def _run(args: argparse.Namespace) -> int:
    """Run the chosen command: its quick path first if it has one (``None`` from it: not answerable there)."""
    if getattr(args, "principal", None) and args.command in _OPERATOR_ONLY:
        raise ConfigurationError(f"'{args.command}' is an operator command: run it without --principal")
    if args.command != "demo":  # every other command takes --path / --server / --database-url
        resolve_store_target(args)
    quick = getattr(args, "quick", None)
    if quick is not None:
        code = _function(str(quick))(args)
        if code is not None:
            return int(code)
    return int(_function(str(args.func))(args))


def run() -> NoReturn:
    """The ``hindsight`` program (its console script and ``python -m``): :func:`main`, then the process exits."""
    sys.exit(main())


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hindsight`` command; returns the exit code."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser = _parser(words)
    try:
        args = parser.parse_args(words)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        return int(e.code) if isinstance(e.code, int) else EXIT_USAGE
    try:
        return _run(args)
    except StoreLockedError as e:
        print(f"hindsight: {safe(str(e))}", file=sys.stderr)
        return EXIT_LOCKED
    except AccessDeniedError as e:
        print(f"hindsight: access denied: {one_line(str(e))}", file=sys.stderr)
        return EXIT_DENIED
    except (MemoryNotFoundError, RunNotFoundError, FeedbackNotFoundError) as e:
        print(f"hindsight: {one_line(str(e))}", file=sys.stderr)
        return EXIT_NOT_FOUND
    except (ConfigurationError, InvalidMemoryError) as e:
        print(f"hindsight: {one_line(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    except HindsightError as e:
        print(f"hindsight: error: {one_line(str(e))}", file=sys.stderr)
        return EXIT_ERROR
    except (ValueError, TypeError, OverflowError, RecursionError, UnicodeError) as e:  # bad input the checks missed
        print(f"hindsight: {one_line(str(e), 500)}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        print(f"hindsight: {one_line(str(e), 500)}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as e:  # noqa: BLE001 - the last line of defence: one line, never a traceback
        print(f"hindsight: error: {type(e).__name__}: {one_line(str(e), 500)}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    run()
