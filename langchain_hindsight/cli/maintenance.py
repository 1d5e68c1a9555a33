"""Commands that change the store or review it.

``maintain``, ``review``, ``report``, ``import``, ``forget``, ``restore``, ``reembed``.
They are the operator's: with ``--principal`` only ``report`` (which reads a
namespace the principal may read) and ``forget`` (the principal's own memories,
with every copy it published) run; the others are refused.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_hindsight.cli._output import Progress, check_future, clip, emit_json, one_line, parse_now, table
from langchain_hindsight.cli._store import open_store, open_view, principal_of
from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.embeddings.multilingual import MultilingualEmbeddings, ScriptRoutedEmbeddings
from langchain_hindsight.errors import ConfigurationError, InvalidMemoryError, MemoryNotFoundError
from langchain_hindsight.lifecycle.maintenance import Lifecycle
from langchain_hindsight.settings import openai_chat_model
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.store.transfer import import_units, read_backup

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

__all__ = [
    "add_reembed_arguments",
    "forget",
    "import_",
    "maintain",
    "reembed",
    "report",
    "restore",
    "review",
]


def _lifecycle(args: argparse.Namespace, store: MemoryStore) -> Lifecycle:
    model = None
    if getattr(args, "model", None):
        model = openai_chat_model(args.model, args.base_url)  # no key: a ConfigurationError, not a traceback
    return Lifecycle(store, model=model, locale=getattr(args, "locale", "zh"), progress=Progress())


def maintain(args: argparse.Namespace) -> int:
    """``hindsight maintain``: decay, archive and merge (optionally review)."""
    now = parse_now(args.now)
    check_future(args, now)
    if args.dry_run:
        return _maintain_dry_run(args, now)
    with open_store(args) as store:
        result = _lifecycle(args, store).maintain(now=now, review=args.review)
    return _print_maintain(args, result)


def _maintain_dry_run(args: argparse.Namespace, now: datetime | None) -> int:
    """Run ``maintain`` on a temporary copy of the store directory and report what it would change."""
    if args.server or args.database_url:
        raise ConfigurationError("--dry-run needs --path (it works on a copy of the store directory)")
    if not Path(args.path).is_dir():
        raise MemoryNotFoundError(f"no store at {args.path!r}")
    with tempfile.TemporaryDirectory(prefix="hindsight-dry-run-") as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(args.path, copy, ignore=shutil.ignore_patterns("*.lock"))
        copied = argparse.Namespace(**{**vars(args), "path": str(copy), "server": None, "database_url": None})
        with open_store(copied) as store:
            result = _lifecycle(args, store).maintain(now=now, review=args.review)
    if not args.json:
        print("dry run: nothing was changed; this is what maintain would do:")
    return _print_maintain(args, result)


def _print_maintain(args: argparse.Namespace, result: Any) -> int:
    if args.json:
        emit_json(result)
        return 0
    print(f"decay:   {result.decay.decayed} of {result.decay.examined} units lowered ({result.decay.periods} periods)")
    print(f"archive: {len(result.archive.archived)} of {result.archive.examined} active units archived")
    print(f"merge:   {result.merge.removed} units folded into {len(result.merge.merged)}")
    if result.review is not None:
        _print_review(result.review)
    return 0


def _print_review(result: Any) -> None:
    if result.skipped:
        print(f"review:  skipped ({result.skipped}; {result.runs} runs in the window)")
        return
    how = "model" if result.used_model else "rules"
    print(f"review:  {result.runs} runs, {len(result.created)} new pattern(s) by {how}")
    for u in result.created:
        print(f"  {u.memory_id}  {clip(u.content, 80)}")


def review(args: argparse.Namespace) -> int:
    """``hindsight review``: distil cross-task patterns from recent runs."""
    now = parse_now(args.now)
    check_future(args, now)
    with open_store(args) as store:
        lc = _lifecycle(args, store)
        if args.if_due:
            result = lc.review_if_due(every_days=args.window_days, now=now)
        else:
            result = lc.review(window_days=args.window_days, now=now)
    if args.json:
        emit_json(result)
    else:
        _print_review(result)
    return 0


def report(args: argparse.Namespace) -> int:
    """``hindsight report``: memories recalled often but never followed by success, and more."""
    with open_view(args) as view:
        now = parse_now(args.now) or datetime.now(UTC)
        try:
            since = now - timedelta(days=args.days) if args.days else None
        except OverflowError as e:
            raise ConfigurationError(f"--days {args.days} reaches before the year 1: use fewer days") from e
        rep = _lifecycle(args, view.store).usage_report(since=since, now=now, min_shown=args.min_shown)
    if args.json:
        emit_json(rep)
        return 0
    print(f"{rep.runs} runs in namespace {one_line(rep.namespace)}")
    sections: list[tuple[str, list[str], list[tuple[Any, ...]]]] = [
        (
            f"often recalled, never followed by success (shown >= {args.min_shown})",
            ["memory_id", "shown", "fail", "unknown", "sim", "conf", "content"],
            [
                (m.memory_id, m.shown, m.failures, m.unknown, f"{m.mean_similarity:.2f}",
                 "-" if m.confidence is None else f"{m.confidence:.2f}", clip(m.content, 40))
                for m in rep.never_successful
            ],
        ),
        (
            "most recalled memories (used: the agent followed it; aside: the agent said it does not apply)",
            ["memory_id", "shown", "used", "aside", "ok", "fail", "sim", "status", "content"],
            [(m.memory_id, m.shown, m.used, m.set_aside, m.successes, m.failures, f"{m.mean_similarity:.2f}",
              m.status, clip(m.content, 40)) for m in rep.memories[:10]],
        ),
        (
            "set aside by the agent (neither credited nor debited by those runs)",
            ["memory_id", "served", "content", "newest reason"],
            [(m.memory_id, f"served {m.shown} times, set aside by the agent {m.set_aside} times",
              clip(m.content, 30), clip(m.set_aside_reason, 60))
             for m in sorted((m for m in rep.memories if m.set_aside), key=lambda m: (-m.set_aside, m.memory_id))[:20]],
        ),
        (
            "low-similarity recalls",
            ["run_id", "memory_id", "rank", "sim", "task"],
            [(x.run_id, x.memory_id, x.rank, f"{x.similarity:.2f}", clip(x.task, 30))
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
        print(table(headers, rows) if rows else "  (none)")
    return 0


def import_(args: argparse.Namespace) -> int:
    """``hindsight import FILE``: memories (and journal records, from ``export --journal``) exactly as exported."""
    # The whole file is read and checked before the store is opened: a file that cannot be imported creates no store.
    if args.file == "-":
        units, runs = read_backup(sys.stdin)
    else:
        try:
            fh = open(args.file, encoding="utf-8")  # noqa: SIM115 - closed below, errors mapped first
        except FileNotFoundError as e:
            raise MemoryNotFoundError(f"no such file: {args.file}") from e
        except IsADirectoryError as e:
            raise InvalidMemoryError(f"{args.file} is a directory, not a JSONL file (see 'hindsight export')") from e
        except PermissionError as e:
            raise InvalidMemoryError(f"{args.file} cannot be read: permission denied") from e
        with fh:
            try:
                units, runs = read_backup(fh)
            except UnicodeDecodeError as e:
                raise InvalidMemoryError(f"{args.file} is not UTF-8 text ({e.reason} at byte {e.start})") from e
    with open_store(args) as store:
        result = import_units(
            store, units, runs=runs, namespace=args.namespace, progress=Progress(), replace=args.replace
        )
    if args.json:
        emit_json(result)
    else:
        counts = ", ".join(f"{one_line(k)}: {v}" for k, v in result.namespaces.items())
        print(f"imported {result.imported} memories {counts}")
        if result.runs or result.runs_unchanged:
            print(f"journaled {result.runs} runs ({result.runs_unchanged} already there)")
        if result.refused:
            print(f"refused {result.refused} memories whose content carries no information (e.g. 'ok', '好的')")
    return 0


def forget(args: argparse.Namespace) -> int:
    """``hindsight forget ID...`` (or ``--all``): hard-delete; as a principal, its own memories and their copies."""
    principal = principal_of(args)
    if principal is not None:
        if args.all:
            raise ConfigurationError("forget --all is an operator command: run it without --principal")
        principal.check("write", args.namespace or principal.namespace)
        if args.namespace not in (None, principal.namespace):
            raise ConfigurationError("as a principal, forget works on its own namespace: leave --namespace out")
    with open_view(args) as view:
        if view.scoped is not None:
            if not args.memory_id:
                raise ConfigurationError("give the ids of the memories to forget")
            deleted = sum(view.scoped.forget(memory_id) for memory_id in dict.fromkeys(args.memory_id))
        elif args.all:
            if not args.namespace or not args.yes:
                raise ConfigurationError("forget --all needs an explicit --namespace and --yes")
            deleted = view.store.forget(namespace=args.namespace)
        elif args.memory_id:
            deleted = view.store.forget(list(args.memory_id))
            if deleted == 0:
                raise MemoryNotFoundError(f"no memory {args.memory_id[0]!r} in namespace {view.namespace!r}")
        else:
            raise ConfigurationError("give memory ids, or --all with --namespace and --yes")
    if args.json:
        emit_json({"deleted": deleted})
    else:
        print(f"forgot {deleted} memories")
    return 0


def restore(args: argparse.Namespace) -> int:
    """``hindsight restore ID...``: bring archived memories back."""
    with open_store(args) as store:
        restored = store.restore(list(args.memory_id))
    if not restored:
        raise MemoryNotFoundError(f"no archived memory among {', '.join(args.memory_id)}")
    print(f"restored {len(restored)} memories")
    return 0


def reembed(args: argparse.Namespace) -> int:
    """``hindsight reembed --to NAME``: re-embed every memory (every namespace unless ``--namespace`` is given)."""
    args.embeddings = _reembed_target(args.to)
    with open_store(args) as store:
        report = store.reembed(
            namespaces=None if args.namespace is None else [args.namespace],
            batch_size=args.batch_size,
            progress=Progress(),
        )
    if args.json:
        print(json.dumps({**asdict(report), "units": report.units}, ensure_ascii=False, indent=2))
        return 0
    for ns, role, n in report.migrated:
        print(f"{ns}/{role}: {n} unit(s) re-embedded")
    for ns, role in report.unchanged:
        print(f"{ns}/{role}: already on {report.embedder}")
    if report.carried:
        print(f"{report.carried} unit(s) written by other processes during the copy were carried over")
    print(f"done: {report.units} unit(s) on {report.embedder} ({report.embedded} embedded by this run)")
    return 0


def _reembed_target(name: str) -> Embeddings:
    """The embedder ``--to NAME`` names."""
    if name == "minilm":
        return LocalEmbeddings()
    return MultilingualEmbeddings() if name == "multilingual" else ScriptRoutedEmbeddings()


def add_reembed_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``hindsight reembed`` options."""
    parser.add_argument(
        "--to",
        choices=["default", "multilingual", "minilm"],
        default="default",
        help="new embedder: default (MiniLM + Universal Sentence Encoder routed by script), multilingual "
        "(Universal Sentence Encoder multilingual v3 alone) or minilm (all-MiniLM-L6-v2 alone)",
    )
    parser.add_argument("--batch-size", type=int, default=64, help="texts per embedding call")
