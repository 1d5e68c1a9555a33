"""Commands that run something: ``demo`` (the offline end-to-end demo) and ``mcp`` (the MCP server)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from importlib.metadata import entry_points
from pathlib import Path

from langchain_hindsight.cli._output import one_line
from langchain_hindsight.cli._store import open_store, principal_of
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.settings import mcp_token
from langchain_hindsight.sharing.access import ScopedMemory
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit

__all__ = ["demo", "mcp"]


def demo(args: argparse.Namespace) -> int:
    """Run the ``hindsight-demo`` entry point (found by name: the library never imports the demo package)."""
    found = entry_points(group="console_scripts", name="hindsight-demo")
    if not found:
        print("hindsight-demo is not installed; running the store-only demo instead")
        return _store_demo(args)
    options = {"--path": args.demo_path, "--model": args.model, "--base-url": args.base_url, "--locale": args.locale}
    argv = [part for flag, value in options.items() if value for part in (flag, value)]
    argv += ["--quiet"] if args.quiet else []
    return int(next(iter(found)).load()(argv))


def _store_demo(args: argparse.Namespace) -> int:
    path = Path(args.demo_path or Path(tempfile.gettempdir()) / "hindsight_demo")
    print(f"store: {path}")
    with MemoryStore(path) as store:
        unit = store.add(
            MemoryUnit(
                task_type="清洗数据",
                content="使用pandas读取CSV时，如果文件包含中文，需要指定encoding='utf-8-sig'，否则会出现乱码。",
                tags=["csv", "encoding"],
            )
        ).unit
        print(f"stored {unit.memory_id} as task_type={unit.task_type} confidence={unit.confidence:.2f}")
        for found, similarity, _ in store.search("读取中文CSV文件出现乱码", k=3):
            print(f"  recall {similarity:.2f}  {found.content}")
        print(f"{store.count()} memories in {path}")
    return 0


def mcp(args: argparse.Namespace) -> int:
    """``hindsight mcp --principal NAME``: serve one principal's view of the store over MCP."""
    try:  # the [mcp] extra
        from langchain_hindsight.sharing.mcp_server import create_server, run_server
    except ImportError as e:
        raise ConfigurationError(
            f'hindsight mcp needs the mcp extra: pip install "langchain-hindsight[mcp]" ({e})'
        ) from e
    principal = principal_of(args)
    if principal is None:
        raise ConfigurationError("hindsight mcp needs --principal NAME (the agent identity the server acts as)")
    if not 0 < args.port < 65536:
        raise ConfigurationError(f"--port must be 1-65535, got {args.port}")
    args.namespace = principal.namespace
    token, told = _token(args)
    with open_store(args) as store:
        server = create_server(
            ScopedMemory(store, principal),
            locale=args.locale,
            host=args.host,
            port=args.port,
            token=token,
            allowed_hosts=args.allow_host,
        )
        print(
            f"hindsight mcp: principal {principal.name!r} (namespace {principal.namespace!r}, reads "
            f"{one_line(', '.join(principal.readable))}) over {args.transport}",
            file=sys.stderr,
        )
        if args.transport == "http":
            url = f"http://{_url_host(args.host)}:{args.port}/mcp"
            if told:
                print(f"hindsight mcp: {url} (bearer token from {told})", file=sys.stderr)
            else:  # like Jupyter: the one line a client needs
                print(f"hindsight mcp: {url} Authorization: Bearer {server.token}", file=sys.stderr, flush=True)
        stopped = run_server(server, args.transport)
    if stopped:
        print(f"hindsight mcp: stopped by {stopped}; the store is closed", file=sys.stderr)
    return 0


def _token(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """The HTTP bearer token from ``--token-file`` or ``$HINDSIGHT_MCP_TOKEN`` and where it came from, else none."""
    if args.token_file:
        try:
            lines = Path(args.token_file).read_text(encoding="utf-8").splitlines()
        except OSError as e:  # the reason only, as hindsight ui says it
            raise ConfigurationError(f"cannot read --token-file {args.token_file!r}: {e.strerror or e}") from e
        except UnicodeDecodeError as e:
            raise ConfigurationError(f"cannot read --token-file {args.token_file!r}: {e}") from e
        token = lines[0].strip() if lines else ""
        if not token:
            raise ConfigurationError(f"--token-file {args.token_file!r} is empty")
        return token, "--token-file"
    from_env = mcp_token()
    return (from_env, "$HINDSIGHT_MCP_TOKEN") if from_env else (None, None)


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", "::", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host
