r"""The ``hindsight`` command line: inspect, maintain, export and forget memories.

Every subcommand takes ``--path DIR`` (an embedded store directory), or
``--server HOST:PORT`` (a Chroma server started with ``chroma run``), plus
``--namespace`` and ``--json``. Defaults come from the environment, read in
one place (:func:`_environment`):

* ``HINDSIGHT_PATH`` — store directory (default ``./memory_db``);
* ``HINDSIGHT_SERVER`` — ``host:port`` of a Chroma server (overrides the path).

Exit codes: 0 ok, 1 error (the store or server failed, or an unexpected error),
2 usage (bad arguments or input), 3 not found (memory, run, file, or a store path
that does not exist: only ``import`` creates a store), 4 store locked by another
process. Every error is one line on stderr, never a traceback. Tables go to
stdout, progress of long operations to stderr; text from the store is shown with
control, escape and invisible characters escaped (``\x1b`` → ``\u001b``), so a
stored memory cannot drive the operator's terminal.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from langchain_hindsight.errors import (
    ConfigurationError,
    HindsightError,
    InvalidMemoryError,
    MemoryNotFoundError,
    RunNotFoundError,
    StoreError,
    StoreLockedError,
)
from langchain_hindsight.settings import openai_chat_model, read_environment

if TYPE_CHECKING:
    from langchain_hindsight.store.memory_store import MemoryStore

__all__ = ["EXIT_ERROR", "EXIT_LOCKED", "EXIT_NOT_FOUND", "EXIT_OK", "EXIT_USAGE", "main"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_LOCKED = 0, 1, 2, 3, 4
_CONTENT_COLS = 60


def _environment() -> dict[str, str | None]:
    """The CLI's defaults from the environment (read in :mod:`langchain_hindsight.settings`)."""
    env = read_environment()
    return {"path": env.store_path, "server": env.server}


# ----------------------------------------------------------------------------- output helpers
def _safe(text: str) -> str:
    r"""``text`` with control, escape and invisible format characters shown as ``\uXXXX`` (newlines kept)."""
    return "".join(
        c if c == "\n" or unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co") else f"\\u{ord(c):04x}" for c in text
    )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if not 1 <= value <= 1_000_000:
        raise argparse.ArgumentTypeError(f"expected a whole number in [1, 1000000], got {text!r}")
    return value


def _days(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of days, got {text!r}") from None
    if not 0 < value <= 36_500:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"expected a number of days in (0, 36500], got {text!r}")
    return value


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _clip(text: str, cols: int = _CONTENT_COLS) -> str:
    text = _safe(" ".join(str(text).split()))
    if _width(text) <= cols:
        return text
    out, used = [], 0
    for c in text:
        w = _width(c)
        if used + w > cols - 1:
            break
        out.append(c)
        used += w
    return "".join(out) + "…"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers], *[["" if v is None else _safe(str(v)) for v in row] for row in rows]]
    widths = [max(_width(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(v + " " * (widths[i] - _width(v)) for i, v in enumerate(row)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _emit_json(value: Any) -> None:
    text = json.dumps(_jsonable(value), ensure_ascii=False, indent=2)  # C0 controls are escaped by JSON
    print("".join(c if unicodedata.category(c) not in ("Cc", "Cf") or c == "\n" else f"\\u{ord(c):04x}" for c in text))


def _progress(stage: str, done: int, total: int) -> None:
    print(f"\r{stage}: {done}/{total}" if total else f"\r{stage}: {done}", end="", file=sys.stderr, flush=True)
    if total and done >= total:
        print(file=sys.stderr)


def _when(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M")


def _parse_now(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as e:
        raise ConfigurationError(f"--now must be an ISO-8601 time, got {text!r}") from e
    value = value if value.tzinfo else value.replace(tzinfo=UTC)
    if not 1970 <= value.year <= 9000:
        raise ConfigurationError(f"--now must be between the years 1970 and 9000, got {text!r}")
    return value


def _check_future(args: argparse.Namespace, now: datetime | None) -> None:
    """A ``--now`` in the future changes memories for good: it needs ``--dry-run`` or ``--yes``."""
    future = now is not None and now > datetime.now(UTC) + timedelta(minutes=5)
    if future and not (getattr(args, "dry_run", False) or getattr(args, "yes", False)):
        raise ConfigurationError(
            "--now is in the future: that decays and archives memories for good; "
            "add --dry-run to see what would change, or --yes to apply it"
        )


# ----------------------------------------------------------------------------- store
@contextmanager
def _open(args: argparse.Namespace) -> Iterator[MemoryStore]:
    from langchain_hindsight.store.memory_store import MemoryStore

    namespace = args.namespace or "default"
    if args.server:
        import chromadb
        from chromadb.config import Settings

        host, _, port = args.server.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c in host for c in "/ @?#"):
            raise ConfigurationError(f"--server must be HOST:PORT, got {args.server!r}")
        try:
            client = chromadb.HttpClient(host=host, port=int(port), settings=Settings(anonymized_telemetry=False))
        except Exception as e:  # connection refused, bad host name, not a Chroma server, ...
            raise StoreError(f"cannot reach a Chroma server at {args.server}: {' '.join(str(e).split())[:200]}") from e
        store = MemoryStore(client=client, namespace=namespace, embeddings=getattr(args, "embeddings", None))
    else:
        if not getattr(args, "creates_store", False) and not Path(args.path).is_dir():
            raise MemoryNotFoundError(f"no store at {args.path!r} (only 'import' creates a store)")
        store = MemoryStore(args.path, namespace=namespace, embeddings=getattr(args, "embeddings", None))
    try:
        yield store
    finally:
        store.close()


# ----------------------------------------------------------------------------- commands
def _demo(args: argparse.Namespace) -> int:
    """Run the ``hindsight-demo`` entry point (found by name: the library never imports the demo package)."""
    found = entry_points(group="console_scripts", name="hindsight-demo")
    if not found:
        print("hindsight-demo is not installed; running the store-only demo instead")
        return _store_demo(args)
    options = {"--path": args.demo_path, "--model": args.model, "--base-url": args.base_url}
    argv = [part for flag, value in options.items() if value for part in (flag, value)]
    argv += ["--quiet"] if args.quiet else []
    return int(next(iter(found)).load()(argv))


def _store_demo(args: argparse.Namespace) -> int:
    from langchain_hindsight.store.memory_store import MemoryStore
    from langchain_hindsight.types import MemoryUnit

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
    return EXIT_OK


def _search(args: argparse.Namespace) -> int:
    with _open(args) as store:
        hits: list[tuple[Any, float, float, dict[str, float]]]
        try:
            from langchain_hindsight.recall.retriever import HindsightRetriever
        except ImportError:
            hits = [(u, s, s, {}) for u, s, _ in store.search(args.query, k=args.k)]
        else:
            # an inspection tool: the best k with their relevance, below the serving floor too
            retriever = HindsightRetriever(store=store, k=args.k, min_relevance=None)
            scored = retriever.recall(args.query, k=args.k, task_type=args.task_type)
            hits = [(m.memory, m.score, m.similarity, m.breakdown) for m in scored]
        if args.json:
            _emit_json([{"memory": u, "score": s, "similarity": sim, "breakdown": b} for u, s, sim, b in hits])
            return EXIT_OK
        rows = [
            (i, f"{s:.3f}", f"{sim:.3f}", f"{u.score_confidence:.2f}", u.task_type, u.memory_id, _clip(u.content))
            for i, (u, s, sim, _) in enumerate(hits, start=1)
        ]
        print(_table(["#", "score", "sim", "conf", "task_type", "memory_id", "content"], rows) if rows else "no match")
    return EXIT_OK


def _show(args: argparse.Namespace) -> int:
    with _open(args) as store:
        units = [store.get(i) for i in args.memory_id]
    if args.json:
        _emit_json(units if len(units) > 1 else units[0])
        return EXIT_OK
    for unit in units:
        data = unit.to_dict()
        width = max(map(len, data))
        for key, value in data.items():
            text = json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else value
            print(f"{key:<{width}}  {_safe(str(text))}")
        print()
    return EXIT_OK


def _history(args: argparse.Namespace) -> int:
    with _open(args) as store:
        chain = store.history(args.memory_id)
    if args.json:
        _emit_json(chain)
        return EXIT_OK
    rows = [
        (u.memory_id, u.status, f"{u.score_confidence:.2f}", _when(u.created_at), _clip(u.content, 50)) for u in chain
    ]
    print(_table(["memory_id (newest first)", "status", "conf", "created", "content"], rows))
    return EXIT_OK


def _stats(args: argparse.Namespace) -> int:
    from collections import Counter

    from langchain_hindsight.store.journal import RunJournal

    with _open(args) as store:
        namespaces = store.namespaces() if args.all else [store.namespace]
        journal = RunJournal(store)
        out: dict[str, Any] = {}
        for ns in namespaces:
            status: Counter[str] = Counter()
            types: Counter[str] = Counter()
            sources: Counter[str] = Counter()
            for (state, task_type, source), n in store.count_by("status", "task_type", "source", namespace=ns).items():
                status[state] += n
                sources[source] += n
                if state == "active":
                    types[task_type] += n
            out[ns] = {
                "total": sum(status.values()),
                "status": dict(status),
                "active_by_task_type": dict(types.most_common()),
                "by_source": dict(sources.most_common()),
                "runs": journal.count(namespace=ns),
            }
    if args.json:
        _emit_json(out)
        return EXIT_OK
    for ns, s in out.items():
        print(f"namespace {ns}: {s['total']} memories, {s['runs']} journalled runs")
        print(_table(["status", "count"], sorted(s["status"].items())) if s["status"] else "  (empty)")
        if s["active_by_task_type"]:
            print(_table(["task_type (active)", "count"], list(s["active_by_task_type"].items())))
        if s["by_source"]:
            print(_table(["source", "count"], list(s["by_source"].items())))
        print()
    return EXIT_OK


def _lifecycle(args: argparse.Namespace, store: MemoryStore) -> Any:
    from langchain_hindsight.lifecycle.maintenance import Lifecycle

    model = None
    if getattr(args, "model", None):
        model = openai_chat_model(args.model, args.base_url)  # no key: a ConfigurationError, not a traceback
    return Lifecycle(store, model=model, locale=getattr(args, "locale", "zh"), progress=_progress)


def _maintain(args: argparse.Namespace) -> int:
    now = _parse_now(args.now)
    _check_future(args, now)
    if args.dry_run:
        return _maintain_dry_run(args, now)
    with _open(args) as store:
        report = _lifecycle(args, store).maintain(now=now, review=args.review)
    return _print_maintain(args, report)


def _maintain_dry_run(args: argparse.Namespace, now: datetime | None) -> int:
    """Run ``maintain`` on a temporary copy of the store directory and report what it would change."""
    import shutil

    if args.server:
        raise ConfigurationError("--dry-run needs --path (it works on a copy of the store directory)")
    if not Path(args.path).is_dir():
        raise MemoryNotFoundError(f"no store at {args.path!r}")
    with tempfile.TemporaryDirectory(prefix="hindsight-dry-run-") as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(args.path, copy, ignore=shutil.ignore_patterns("*.lock"))
        copied = argparse.Namespace(**{**vars(args), "path": str(copy), "server": None})
        with _open(copied) as store:
            report = _lifecycle(args, store).maintain(now=now, review=args.review)
    if not args.json:
        print("dry run: nothing was changed; this is what maintain would do:")
    return _print_maintain(args, report)


def _print_maintain(args: argparse.Namespace, report: Any) -> int:
    if args.json:
        _emit_json(report)
        return EXIT_OK
    print(f"decay:   {report.decay.decayed} of {report.decay.examined} units lowered ({report.decay.periods} periods)")
    print(f"archive: {len(report.archive.archived)} of {report.archive.examined} active units archived")
    print(f"merge:   {report.merge.removed} units folded into {len(report.merge.merged)}")
    if report.review is not None:
        _print_review(report.review)
    return EXIT_OK


def _print_review(report: Any) -> None:
    if report.skipped:
        print(f"review:  skipped ({report.skipped}; {report.runs} runs in the window)")
        return
    how = "model" if report.used_model else "rules"
    print(f"review:  {report.runs} runs, {len(report.created)} new pattern(s) by {how}")
    for u in report.created:
        print(f"  {u.memory_id}  {_clip(u.content, 80)}")


def _review(args: argparse.Namespace) -> int:
    now = _parse_now(args.now)
    _check_future(args, now)
    with _open(args) as store:
        lc = _lifecycle(args, store)
        if args.if_due:
            report = lc.review_if_due(every_days=args.window_days, now=now)
        else:
            report = lc.review(window_days=args.window_days, now=now)
    if args.json:
        _emit_json(report)
    else:
        _print_review(report)
    return EXIT_OK


def _runs(args: argparse.Namespace) -> int:
    from langchain_hindsight.store.journal import RunJournal

    with _open(args) as store:
        runs = RunJournal(store).list_runs(limit=args.limit, kind=None)
    if args.json:
        _emit_json(runs)
        return EXIT_OK
    rows = [
        (r.run_id, r.kind, _when(r.started_at), r.task_type or "", r.outcome, len(r.served), len(r.produced),
         _clip(r.task, 40))
        for r in runs
    ]  # fmt: skip
    headers = ["run_id", "kind", "started", "task_type", "outcome", "served", "produced", "task"]
    print(_table(headers, rows) if rows else "no runs")
    return EXIT_OK


def _explain(args: argparse.Namespace) -> int:
    from langchain_hindsight.store.journal import RunJournal

    with _open(args) as store:
        ex = RunJournal(store).explain(args.run_id)
    if args.json:
        _emit_json(ex)
        return EXIT_OK
    r = ex.record
    print(_safe(f"run {r.run_id} [{r.namespace}] {r.outcome}, started {_when(r.started_at)}"))
    print(f"task ({r.task_type or '?'}): {_clip(r.task, 100)}")
    rows = []
    for m in ex.memories:
        s = m.served
        factors = ", ".join(f"{name} {value:.3f}" for name, value in m.factors)
        now = f"{m.unit.score_confidence:.2f}" if m.unit else "-"
        text = _clip(m.unit.content, 40) if m.unit else ""
        rows.append((s.rank, s.memory_id, f"{s.score:.3f}", f"{s.similarity:.3f}", factors, m.status, now, text))
    if rows:
        print("memories shown (rank order; factors largest first):")
        print(_table(["#", "memory_id", "score", "sim", "factors", "status", "conf now", "content"], rows))
    else:
        print("no memories were shown to this run")
    for memory_id, unit in ex.produced:
        print(_safe(f"produced {memory_id}: {_clip(unit.content, 80) if unit else '(no longer exists)'}"))
    for f in r.feedback:
        print(_safe(f"feedback {_when(f.at)} success={f.success} rejected={f.rejected}: {f.text}"))
    return EXIT_OK


def _report(args: argparse.Namespace) -> int:
    with _open(args) as store:
        now = _parse_now(args.now) or datetime.now(UTC)
        try:
            since = now - timedelta(days=args.days) if args.days else None
        except OverflowError as e:
            raise ConfigurationError(f"--days {args.days} reaches before the year 1: use fewer days") from e
        rep = _lifecycle(args, store).usage_report(since=since, now=now, min_shown=args.min_shown)
    if args.json:
        _emit_json(rep)
        return EXIT_OK
    print(f"{rep.runs} runs in namespace {rep.namespace}")
    sections: list[tuple[str, list[str], list[tuple[Any, ...]]]] = [
        (
            f"often recalled, never followed by success (shown >= {args.min_shown})",
            ["memory_id", "shown", "fail", "unknown", "sim", "conf", "content"],
            [
                (m.memory_id, m.shown, m.failures, m.unknown, f"{m.mean_similarity:.2f}",
                 "-" if m.confidence is None else f"{m.confidence:.2f}", _clip(m.content, 40))
                for m in rep.never_successful
            ],
        ),
        (
            "most recalled memories",
            ["memory_id", "shown", "ok", "fail", "sim", "status", "content"],
            [(m.memory_id, m.shown, m.successes, m.failures, f"{m.mean_similarity:.2f}", m.status,
              _clip(m.content, 40)) for m in rep.memories[:10]],
        ),
        (
            "low-similarity recalls",
            ["run_id", "memory_id", "rank", "sim", "task"],
            [(x.run_id, x.memory_id, x.rank, f"{x.similarity:.2f}", _clip(x.task, 30))
             for x in rep.low_similarity[:20]],
        ),
        (
            "supersede chains (newest first)",
            ["length", "chain"],
            [(len(c), " <- ".join(c)) for c in rep.supersede_chains[:20]],
        ),
        (
            "task types",
            ["task_type", "runs", "ok", "fail", "active memories"],
            [(t.task_type, t.runs, t.successes, t.failures, t.memories) for t in rep.task_types],
        ),
    ]  # fmt: skip
    for title, headers, rows in sections:
        print(f"\n{title}:")
        print(_table(headers, rows) if rows else "  (none)")
    return EXIT_OK


def _export(args: argparse.Namespace) -> int:
    from langchain_hindsight.store._transfer import export_units

    with _open(args) as store:
        namespaces = store.namespaces() if args.all else [store.namespace]
        if args.output in (None, "-"):
            count = export_units(store, sys.stdout, namespaces=namespaces, progress=_progress)
        else:
            with open(args.output, "w", encoding="utf-8") as fh:
                count = export_units(store, fh, namespaces=namespaces, progress=_progress)
    print(f"exported {count} memories", file=sys.stderr)
    return EXIT_OK


def _import(args: argparse.Namespace) -> int:
    from langchain_hindsight.store._transfer import import_units, read_jsonl

    with _open(args) as store:
        if args.file == "-":
            report = import_units(
                store, read_jsonl(sys.stdin), namespace=args.namespace, progress=_progress, replace=args.replace
            )
        else:
            try:
                fh = open(args.file, encoding="utf-8")  # noqa: SIM115 - closed below, errors mapped first
            except FileNotFoundError as e:
                raise MemoryNotFoundError(f"no such file: {args.file}") from e
            with fh:
                try:
                    report = import_units(
                        store, read_jsonl(fh), namespace=args.namespace, progress=_progress, replace=args.replace
                    )
                except UnicodeDecodeError as e:
                    raise InvalidMemoryError(f"{args.file} is not UTF-8 text ({e.reason} at byte {e.start})") from e
    if args.json:
        _emit_json(report)
    else:
        print(f"imported {report.imported} memories " + ", ".join(f"{k}: {v}" for k, v in report.namespaces.items()))
    return EXIT_OK


def _forget(args: argparse.Namespace) -> int:
    with _open(args) as store:
        if args.all:
            if not args.namespace or not args.yes:
                raise ConfigurationError("forget --all needs an explicit --namespace and --yes")
            deleted = store.forget(namespace=args.namespace)
        elif args.memory_id:
            deleted = store.forget(list(args.memory_id))
            if deleted == 0:
                raise MemoryNotFoundError(f"no memory {args.memory_id[0]!r} in namespace {store.namespace!r}")
        else:
            raise ConfigurationError("give memory ids, or --all with --namespace and --yes")
    if args.json:
        _emit_json({"deleted": deleted})
    else:
        print(f"forgot {deleted} memories")
    return EXIT_OK


def _restore(args: argparse.Namespace) -> int:
    with _open(args) as store:
        restored = store.restore(list(args.memory_id))
    if not restored:
        raise MemoryNotFoundError(f"no archived memory among {', '.join(args.memory_id)}")
    print(f"restored {len(restored)} memories")
    return EXIT_OK


def _reembed(args: argparse.Namespace) -> int:
    from langchain_hindsight.store._reembed import run_cli

    return run_cli(args, _open, _progress, print)


def _mcp(args: argparse.Namespace) -> int:
    from langchain_hindsight.sharing.access import AccessPolicy, Principal, ScopedMemory

    try:
        from langchain_hindsight.sharing.mcp_server import create_server
    except ImportError as e:
        raise ConfigurationError(
            f'hindsight mcp needs the mcp extra: pip install "langchain-hindsight[mcp]" ({e})'
        ) from e
    if args.config:
        principal = AccessPolicy.from_file(args.config).principal(args.principal)
    else:
        principal = Principal(args.principal, args.namespace or args.principal)
    if not 0 < args.port < 65536:
        raise ConfigurationError(f"--port must be 1-65535, got {args.port}")
    args.namespace = principal.namespace
    with _open(args) as store:
        server = create_server(ScopedMemory(store, principal), locale=args.locale, host=args.host, port=args.port)
        print(
            f"hindsight mcp: principal {principal.name!r} (namespace {principal.namespace!r}, reads "
            f"{', '.join(principal.readable)}) over {args.transport}",
            file=sys.stderr,
        )
        server.run("streamable-http" if args.transport == "http" else "stdio")
    return EXIT_OK


# ----------------------------------------------------------------------------- parser
class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2), like every other CLI error."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"hindsight: {_safe(' '.join(message.split()))} (see '{self.prog} --help')\n")


def _parser() -> argparse.ArgumentParser:
    env = _environment()
    common = argparse.ArgumentParser(add_help=False)
    where = common.add_mutually_exclusive_group()
    where.add_argument("--path", default=env["path"] or "./memory_db", help="store directory (env HINDSIGHT_PATH)")
    where.add_argument("--server", default=env["server"], help="Chroma server HOST:PORT (env HINDSIGHT_SERVER)")
    common.add_argument("--namespace", help="namespace (default: 'default')")
    common.add_argument("--json", action="store_true", help="machine-readable JSON output")
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
        epilog="exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 store locked",
    )
    sub: Any = parser.add_subparsers(dest="command", required=True)

    def add(name: str, func: Callable[[argparse.Namespace], int], help: str, *parents: Any) -> Any:
        p = sub.add_parser(name, help=help, description=help, parents=[common, *parents])
        p.set_defaults(func=func)
        return p

    demo = sub.add_parser("demo", help="run the offline end-to-end demo")
    demo.add_argument("--path", dest="demo_path", help="store directory (default: a temp dir)")
    demo.add_argument("--model", help="a real chat model instead of the scripted one")
    demo.add_argument("--base-url", help="OpenAI-compatible base URL for --model")
    demo.add_argument("--quiet", action="store_true")
    demo.set_defaults(func=_demo)

    p = add("search", _search, "recall the memories that match a task")
    p.add_argument("query")
    p.add_argument("-k", type=_positive_int, default=5)
    p.add_argument("--task-type")
    p = add("show", _show, "print memories by id")
    p.add_argument("memory_id", nargs="+")
    p = add("history", _history, "the supersedes chain through a memory")
    p.add_argument("memory_id")
    p = add("stats", _stats, "counts by status, task type and source")
    p.add_argument("--all", action="store_true", help="every namespace")
    p = add("runs", _runs, "recent journalled runs and reviews")
    p.add_argument("--limit", type=_positive_int, default=20)
    p = add("explain", _explain, "which memories shaped a run, and why they were ranked so")
    p.add_argument("run_id")
    p = add("report", _report, "usage review: memories recalled often but never followed by success", clock)
    p.add_argument("--days", type=_days, default=None, help="only runs of the last DAYS days")
    p.add_argument("--min-shown", type=_positive_int, default=3)
    p = add("review", _review, "distil cross-task patterns from recent runs", model, clock)
    p.add_argument("--window-days", type=_days, default=7.0)
    p.add_argument("--if-due", action="store_true", help="skip unless the last review is --window-days old")
    p.add_argument("--yes", action="store_true", help="confirm a --now in the future")
    p = add("maintain", _maintain, "decay, archive and merge (idempotent; run it daily)", model, clock)
    p.add_argument("--review", action="store_true", help="also run a periodic review")
    p.add_argument("--dry-run", action="store_true", help="report what would change, on a copy; change nothing")
    p.add_argument("--yes", action="store_true", help="confirm a --now in the future (it changes memories for good)")
    p = add("export", _export, "write memories as JSONL (every field)")
    p.add_argument("-o", "--output", help="file (default: stdout)")
    p.add_argument("--all", action="store_true", help="every namespace")
    p = add("import", _import, "read memories from JSONL exactly as exported")
    p.add_argument("file", help="JSONL file, or - for stdin")
    p.add_argument("--replace", action="store_true", help="overwrite ids that are already stored with other data")
    p.set_defaults(creates_store=True)
    p = add("forget", _forget, "hard-delete memories (or a whole namespace)")
    p.add_argument("memory_id", nargs="*")
    p.add_argument("--all", action="store_true", help="the whole --namespace (needs --yes)")
    p.add_argument("--yes", action="store_true")
    p = add("restore", _restore, "bring archived memories back")
    p.add_argument("memory_id", nargs="+")
    p = add("reembed", _reembed, "re-embed every memory (every namespace unless --namespace) with another embedder")
    from langchain_hindsight.store._reembed import add_arguments

    add_arguments(p)
    p = add("mcp", _mcp, "serve the store to MCP clients as one principal (needs the [mcp] extra)")
    p.add_argument("--principal", required=True, help="the agent identity this server acts as")
    p.add_argument("--config", help="TOML file with [principals.NAME] grants (default: own namespace only)")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="bind address for --transport http")
    p.add_argument("--port", type=int, default=8765, help="port for --transport http")
    p.add_argument("--locale", choices=["zh", "en"], default="zh", help="language of the recalled block")
    p.set_defaults(creates_store=True)  # an agent's first remember creates its store
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hindsight`` command; returns the exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        return int(e.code) if isinstance(e.code, int) else EXIT_USAGE
    try:
        return int(args.func(args))
    except StoreLockedError as e:
        print(f"hindsight: {_safe(str(e))}", file=sys.stderr)
        return EXIT_LOCKED
    except (MemoryNotFoundError, RunNotFoundError) as e:
        print(f"hindsight: {_safe(' '.join(str(e).split()))}", file=sys.stderr)
        return EXIT_NOT_FOUND
    except (ConfigurationError, InvalidMemoryError) as e:
        print(f"hindsight: {_safe(' '.join(str(e).split()))}", file=sys.stderr)
        return EXIT_USAGE
    except HindsightError as e:
        print(f"hindsight: error: {_safe(' '.join(str(e).split()))}", file=sys.stderr)
        return EXIT_ERROR
    except (ValueError, TypeError, OverflowError, RecursionError, UnicodeError) as e:  # bad input the checks missed
        print(f"hindsight: {_safe(' '.join(str(e).split()))[:500]}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        print(f"hindsight: {_safe(' '.join(str(e).split()))[:500]}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as e:  # noqa: BLE001 - the last line of defence: one line, never a traceback
        print(f"hindsight: error: {type(e).__name__}: {_safe(' '.join(str(e).split()))[:500]}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
