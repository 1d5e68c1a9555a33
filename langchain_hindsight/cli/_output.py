r"""What the ``hindsight`` commands print, and the argument types they parse (standard library only).

Text from the store is shown with control, escape and invisible characters
escaped (``\x1b`` → ``\u001b``), so a stored memory cannot drive the operator's
terminal.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from langchain_hindsight.errors import ConfigurationError

__all__ = [
    "CONTENT_COLS",
    "Progress",
    "check_future",
    "clip",
    "days",
    "emit_json",
    "parse_now",
    "positive_int",
    "safe",
    "table",
    "when",
]

CONTENT_COLS = 60


def safe(text: str) -> str:
    r"""``text`` with control, escape and invisible format characters shown as ``\uXXXX`` (newlines kept)."""
    return "".join(
        c if c == "\n" or unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co") else f"\\u{ord(c):04x}" for c in text
    )


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` made safe and folded to one line (at most ``limit`` characters)."""
    folded = safe(" ".join(str(text).split()))
    return folded if limit is None else folded[:limit]


def positive_int(text: str) -> int:
    """Parse a whole number in [1, 1000000]."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if not 1 <= value <= 1_000_000:
        raise argparse.ArgumentTypeError(f"expected a whole number in [1, 1000000], got {text!r}")
    return value


def query(text: str) -> str:
    """A search query with text: a blank one (``''``, spaces) is a usage error, never a "no match"."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "the query is empty: give the task to search for, e.g. '清洗 data.csv' or 'clean data.csv'"
        )
    return text


def days(text: str) -> float:
    """Parse a number of days in (0, 36500]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of days, got {text!r}") from None
    if not 0 < value <= 36_500:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"expected a number of days in (0, 36500], got {text!r}")
    return value


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def clip(text: str, cols: int = CONTENT_COLS) -> str:
    """One safe line of at most ``cols`` terminal columns (CJK characters count two)."""
    text = safe(" ".join(str(text).split()))
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


def _cell(value: Any) -> str:
    return safe(str(value)).replace("\n", "\\n")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    r"""A plain-text table aligned for CJK and Latin text; a cell is one safe line (a newline shows as ``\n``)."""
    cells = [[str(h) for h in headers], *[["" if v is None else _cell(v) for v in row] for row in rows]]
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


def emit_json(value: Any) -> None:
    """Print ``value`` as indented JSON (dataclasses and pydantic models included), control characters escaped."""
    text = json.dumps(_jsonable(value), ensure_ascii=False, indent=2)  # C0 controls are escaped by JSON
    print("".join(c if unicodedata.category(c) not in ("Cc", "Cf") or c == "\n" else f"\\u{ord(c):04x}" for c in text))


class Progress:
    """Progress of a long operation on stderr: counts, percentage and an estimate of the time left.

    Called as ``progress(stage, done, total)`` by the library's long operations (maintain,
    reembed, import, export). One line per stage: rewritten in place on a terminal, and on
    anything else (a log file, CI) printed at most every 10 % (or, with no total, each time the
    count doubles) so the output stays readable; a
    stage's line is finished exactly once, when it completes or the next stage starts, so no
    blank lines appear between stages.

    Args:
        stream: Where to write (default ``sys.stderr``).
        clock: Seconds, monotonic (for tests).
    """

    def __init__(self, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self._clock = clock
        self._stage: str | None = None
        self._started = 0.0
        self._open = False  # a line of the current stage is on screen, not yet ended
        self._shown_tenth = -1

    @property
    def stream(self) -> TextIO:
        """The output stream."""
        return self._stream if self._stream is not None else sys.stderr

    def __call__(self, stage: str, done: int, total: int) -> None:
        out = self.stream
        if stage != self._stage:
            self._end_line()
            self._stage, self._started, self._shown_tenth = stage, self._clock(), -1
        finished = bool(total) and done >= total
        tty = out.isatty()
        # without a terminal: a line per tenth of the total, or (no total known) each time the count doubles
        step = (10 * done // total) if total else max(done, 1).bit_length()
        if not tty and not finished and step == self._shown_tenth:
            return
        self._shown_tenth = step
        text = self._text(stage, done, total)
        if tty:
            print(f"\r{text}\x1b[K", end="", file=out, flush=True)
            self._open = True
        else:
            print(text, file=out, flush=True)
        if finished:
            self._end_line()
            self._stage = None

    def _text(self, stage: str, done: int, total: int) -> str:
        elapsed = self._clock() - self._started
        if not total:
            return f"{stage}: {done}"
        text = f"{stage}: {done}/{total} ({100 * done // total}%)"
        if done >= total:
            return f"{text} in {_duration(elapsed)}"
        if done and elapsed >= 1.0:
            text += f", about {_duration(elapsed * (total - done) / done)} left"
        return text

    def _end_line(self) -> None:
        if self._open:
            print(file=self.stream, flush=True)
            self._open = False


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def when(value: datetime) -> str:
    """A timestamp to the minute."""
    return value.strftime("%Y-%m-%d %H:%M")


def parse_now(text: str | None) -> datetime | None:
    """``--now``: an ISO-8601 time (UTC when it names no zone)."""
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


def check_future(args: argparse.Namespace, now: datetime | None) -> None:
    """A ``--now`` in the future changes memories for good: it needs ``--dry-run`` or ``--yes``."""
    future = now is not None and now > datetime.now(UTC) + timedelta(minutes=5)
    if future and not (getattr(args, "dry_run", False) or getattr(args, "yes", False)):
        raise ConfigurationError(
            "--now is in the future: that decays and archives memories for good; "
            "add --dry-run to see what would change, or --yes to apply it"
        )
