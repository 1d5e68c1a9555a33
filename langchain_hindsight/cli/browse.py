"""Commands that read stored memories and runs: ``show``, ``history``, ``stats``, ``runs``, ``explain``, ``export``.

Each works on the operator's whole store, or with ``--principal`` through that
principal's grants (see :mod:`langchain_hindsight.cli._store`). None of them
embeds: no model is loaded (``search``, which embeds, is in its own module).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from langchain_hindsight.cli._diff import word_diff, wrap
from langchain_hindsight.cli._output import Progress, clip, emit_json, safe, table, when
from langchain_hindsight.cli._stats import print_stats
from langchain_hindsight.cli._store import open_view
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.store.transfer import export_runs, export_units

if TYPE_CHECKING:
    from langchain_hindsight.runs import RunRecord
    from langchain_hindsight.types import MemoryUnit

__all__ = ["explain", "export", "history", "runs", "show", "stats"]

logger = logging.getLogger(__name__)


def show(args: argparse.Namespace) -> int:
    """``hindsight show ID...``: every field of each memory."""
    with open_view(args) as view:
        units = [view.get(i, explicit=args.namespace is not None) for i in args.memory_id]
    if args.json:
        emit_json(units if len(units) > 1 else units[0])
        return 0
    for unit in units:
        data = unit.to_dict()
        width = max(map(len, data))
        for key, value in data.items():
            text = json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else value
            print(f"{key:<{width}}  {safe(str(text))}")
        print()
    return 0


def history(args: argparse.Namespace) -> int:
    """``hindsight history ID``: the supersede chain through a memory, newest first."""
    with open_view(args) as view:
        if view.scoped is None:
            chain = view.store.history(args.memory_id)
        else:
            chain = view.scoped.history(args.memory_id, namespace=view.namespace)
    if args.json:
        emit_json(chain)
        return 0
    print(history_text(chain, shutil.get_terminal_size((100, 24)).columns))
    return 0


def history_text(chain: Sequence[MemoryUnit], width: int) -> str:
    """The chain as ``hindsight history`` prints it: a table of the versions, then each version whole.

    The oldest version is printed as it is; each newer one as a word-level diff against the
    version it replaced (``[-removed-]{+added+}``, :func:`~langchain_hindsight.cli._diff.word_diff`),
    wrapped at ``width`` columns and never cut.
    """
    rows = [(u.memory_id, u.status, f"{u.score_confidence:.2f}", when(u.created_at)) for u in chain]
    out = [table(["memory_id (newest first)", "status", "conf", "created"], rows), ""]
    oldest_first = list(reversed(chain))
    for n, unit in enumerate(oldest_first):
        content = safe(unit.content)
        if n == 0:
            out.append(f"{unit.memory_id} ({unit.status}, the first version):")
            out.extend(wrap(content, width))
        else:
            before = oldest_first[n - 1]
            out.append(f"{unit.memory_id} ({unit.status}), changed from {before.memory_id}:")
            out.extend(wrap(word_diff(safe(before.content), content), width))
    return "\n".join(out)


def stats(args: argparse.Namespace) -> int:
    """``hindsight stats``, counted by the store (:meth:`MemoryStore.statistics`); the quick path: ``_stats``."""
    with open_view(args) as view:
        out = {ns: view.store.statistics(namespace=ns) for ns in view.namespaces(args.all)}
    print_stats(out, as_json=args.json)
    return 0


def _outcome(record: RunRecord) -> str:
    """How the run ended, and the user's verdict in force when it says otherwise (``success (user: failure)``)."""
    judged = record.judged_outcome
    return record.outcome if judged == record.outcome else f"{record.outcome} (user: {judged})"


def runs(args: argparse.Namespace) -> int:
    """``hindsight runs``: recent journalled runs and reviews."""
    with open_view(args) as view:
        records = RunJournal(view.store).list_runs(limit=args.limit, kind=None, namespace=view.namespace)
    if args.json:
        emit_json(records)
        return 0
    rows = [
        (r.run_id, r.kind, when(r.started_at), r.task_type or "", _outcome(r), len(r.served), len(r.produced),
         clip(r.task, 40))
        for r in records
    ]  # fmt: skip
    headers = ["run_id", "kind", "started", "task_type", "outcome", "served", "produced", "task"]
    print(table(headers, rows) if rows else "no runs")
    return 0


def explain(args: argparse.Namespace) -> int:
    """``hindsight explain RUN``: which memories shaped a run, and why they were ranked so."""
    from langchain_hindsight.recall.explain import explain_run  # this command's alone (show, runs never need it)

    with open_view(args) as view:
        if view.scoped is None:
            ex = explain_run(RunJournal(view.store), args.run_id)
        else:
            ex = view.scoped.explain(args.run_id, namespace=view.namespace)
    if args.json:
        emit_json(ex)
        return 0
    r = ex.record
    print(safe(f"run {r.run_id} [{r.namespace}] {_outcome(r)}, started {when(r.started_at)}"))
    print(f"task ({r.task_type or '?'}): {clip(r.task, 100)}")
    rows = []
    for m in ex.memories:
        s = m.served
        factors = ", ".join(f"{name} {value:.3f}" for name, value in m.factors)
        now = f"{m.unit.score_confidence:.2f}" if m.unit else "-"
        text = clip(m.unit.content, 40) if m.unit else ""
        rows.append((s.rank, s.memory_id, f"{s.score:.3f}", f"{s.similarity:.3f}", factors, m.status, now, text))
    if rows:
        print("memories shown (rank order; factors largest first):")
        print(table(["#", "memory_id", "score", "sim", "factors", "status", "conf now", "content"], rows))
    else:
        print("no memories were shown to this run")
    if r.withheld:
        print(safe(f"set aside by the relevance check (not shown): {', '.join(r.withheld)}"))
    for memory_id, unit in ex.produced:
        print(safe(f"produced {memory_id}: {clip(unit.content, 80) if unit else '(no longer exists)'}"))
    for f in r.feedback:
        print(safe(f"feedback {when(f.at)} success={f.success} rejected={f.rejected}: {f.text}"))
    return 0


def _export_target(output: str) -> Path:
    """The ``-o`` file, checked before the store is opened (see :func:`check_output_file`).

    Raises:
        ConfigurationError: it is a directory or not a regular file, or its directory does not exist.
    """
    target = Path(output)
    if target.is_dir() and not target.is_symlink():
        raise ConfigurationError(f"-o {output!r} is a directory: give the name of a file to write")
    check_output_file(target, f"-o {output!r}")
    if not target.absolute().parent.is_dir():
        raise ConfigurationError(f"-o {output!r}: the directory {str(target.absolute().parent)!r} does not exist")
    return target


def check_output_file(target: Path, what: str) -> None:
    """The rule for every file the CLI writes: a new name, or an existing *regular* file (not a link to one).

    A symlink (to anything), a FIFO, a socket or a device node (``/dev/full``, ``/dev/null``) is
    refused: the CLI writes a file by renaming a complete temporary file over the name, which would
    replace the link or the node itself and report success while nothing reached what it named.

    Raises:
        ConfigurationError: ``target`` exists and is not a regular file (a usage error, exit 2).
    """
    try:
        mode = target.lstat().st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise ConfigurationError(f"{what}: cannot inspect the file: {e.strerror}") from e
    if stat.S_ISLNK(mode):
        raise ConfigurationError(f"{what} is a symbolic link: give the path of a regular file (links are not followed)")
    if not stat.S_ISREG(mode):
        kind = (
            "a FIFO" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a directory" if stat.S_ISDIR(mode)
            else "not a regular file"
        )  # fmt: skip
        raise ConfigurationError(f"{what} is {kind}: the CLI writes regular files only")


def _write_replacing(target: Path, write: Callable[[IO[str]], tuple[int, int]]) -> tuple[int, int]:
    """Run ``write`` into a temporary file next to ``target``, renamed over it only once complete.

    An export that fails half-way (the store, the disk) leaves the previous file as it was and no
    temporary file: a nightly ``export -o backup.jsonl`` never replaces a good backup with a truncated one.
    An existing file keeps its permissions; a new one is readable by its owner only (it holds every memory).
    ``target`` is checked again just before the rename (:func:`check_output_file`): a link or node
    put in its place meanwhile is refused, never replaced.
    """
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.absolute().parent)
    part = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            counts = write(fh)
        check_output_file(target, f"-o {str(target)!r}")
        if target.exists():
            shutil.copymode(target, part)
        os.replace(part, target)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return counts


def export(args: argparse.Namespace) -> int:
    """``hindsight export``: memories as JSONL (every field); ``--all``: of every namespace the view may read."""
    target = None if args.output in (None, "-") else _export_target(args.output)
    with open_view(args) as view:
        namespaces = view.namespaces(args.all)

        def write(out: IO[str]) -> tuple[int, int]:
            count = export_units(view.store, out, namespaces=namespaces, progress=Progress())
            return count, export_runs(view.store, out, namespaces=namespaces) if args.journal else 0

        if target is None:
            count, runs = write(sys.stdout)
        else:
            count, runs = _write_replacing(target, write)
    records = f" and {runs} journal record{'' if runs == 1 else 's'}" if args.journal else ""
    print(f"exported {count} {'memory' if count == 1 else 'memories'}{records}", file=sys.stderr)
    return 0
