"""The size of the ``[相关经验]`` block and how a memory line is cut (for :mod:`~langchain_hindsight.recall.injection`).

Three bounds, all options of :class:`~langchain_hindsight.session.config.SessionConfig` (and so of
``Hindsight(...)`` and every adapter): ``max_lines`` memory lines, ``max_line_chars`` characters of one
memory's text, and optionally ``max_block_chars`` characters of the whole block. The bounds are in
characters, not tokens: a character count is the same for every model, and a Chinese character is
about one token for the common tokenizers (an English word about four to five characters).

A cut line never hides the cut: the text ends with the templates' ``line_ellipsis`` and
``truncation_notice``, which names the command that prints the whole memory
(``…（已截断，完整内容：hindsight show <memory_id>）``). The id (and the namespace, for a memory
outside ``default``) is printed only when it is a plain token that :func:`~langchain_hindsight._safety.render_safe`
leaves as it is, so it can neither open prompt structure nor break the command; otherwise the
notice names no command (``truncation_notice_no_id``).
"""

from __future__ import annotations

import re

from langchain_hindsight._safety import render_safe
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.prompts import PromptTemplates

__all__ = [
    "DEFAULT_MAX_LINE_CHARS",
    "MIN_BLOCK_CHARS",
    "MIN_LINE_CHARS",
    "check_block_size",
    "clip_line",
    "truncation_notice",
]

DEFAULT_MAX_LINE_CHARS = 300
"""At most 300 characters of one memory's text per line (the truncation notice comes on top)."""
MIN_LINE_CHARS = 20
"""The smallest ``max_line_chars``: a shorter cut says nothing."""
MIN_BLOCK_CHARS = 200
"""The smallest ``max_block_chars``: room for the header, one cut line with its notice, and the data notice."""
_SAFE_TOKEN = re.compile(r"[A-Za-z0-9_\-.:@]{1,256}")
"""An id or namespace that can be printed inside a shell command as is."""


def check_block_size(*, max_lines: object, max_line_chars: object, max_block_chars: object) -> None:
    """Validate the block's size options (see :func:`~langchain_hindsight.recall.injection.format_experiences`).

    Raises:
        ConfigurationError: naming the option and the accepted values.

    Example:
        >>> check_block_size(max_lines=8, max_line_chars=300, max_block_chars=None)
        >>> check_block_size(max_lines=8, max_line_chars=5, max_block_chars=None)
        Traceback (most recent call last):
        ...
        langchain_hindsight.errors.ConfigurationError: max_line_chars must be an int >= 20, got 5
    """
    if isinstance(max_lines, bool) or not isinstance(max_lines, int) or max_lines < 1:
        raise ConfigurationError(f"max_lines must be a positive int, got {max_lines!r}")
    if isinstance(max_line_chars, bool) or not isinstance(max_line_chars, int) or max_line_chars < MIN_LINE_CHARS:
        raise ConfigurationError(f"max_line_chars must be an int >= {MIN_LINE_CHARS}, got {max_line_chars!r}")
    if max_block_chars is not None and (
        isinstance(max_block_chars, bool) or not isinstance(max_block_chars, int) or max_block_chars < MIN_BLOCK_CHARS
    ):
        raise ConfigurationError(
            f"max_block_chars must be None or an int >= {MIN_BLOCK_CHARS}, got {max_block_chars!r}"
        )


def _plain(token: str | None) -> bool:
    return token is not None and _SAFE_TOKEN.fullmatch(token) is not None and render_safe(token) == token


def truncation_notice(t: PromptTemplates, memory_id: str | None, namespace: str | None) -> str:
    """What follows a cut memory text: the notice, naming the command that prints the whole memory when it can.

    Example:
        >>> from langchain_hindsight.prompts import EN, ZH
        >>> truncation_notice(ZH, "mem_42", "default")
        '（已截断，完整内容：hindsight show mem_42）'
        >>> truncation_notice(EN, "mem_42", "user-7")
        ' (truncated; full text: hindsight show mem_42 --namespace user-7)'
        >>> truncation_notice(EN, "user:system", None)  # would read like a chat turn: no command
        ' (truncated)'
    """
    if memory_id is None or not _plain(memory_id):
        return t.truncation_notice_no_id
    if namespace and namespace != "default" and _plain(namespace):
        command = t.show_command_namespace.format(memory_id=memory_id, namespace=namespace)
    else:
        command = t.show_command.format(memory_id=memory_id)
    return t.truncation_notice.format(command=command)


def clip_line(
    text: str,
    limit: int,
    t: PromptTemplates,
    *,
    memory_id: str | None,
    namespace: str | None,
    short: bool = False,
) -> str:
    """``text`` (already rendered safe) cut to ``limit`` characters with the ellipsis and the truncation notice.

    A text within ``limit`` comes back unchanged. ``short``: the notice that names no
    command (when even a minimal line with the command overflows the block).

    Example:
        >>> from langchain_hindsight.prompts import ZH
        >>> clip_line("周报的数据范围取上周一到周日的自然周", 10, ZH, memory_id="mem_42", namespace=None)
        '周报的数据范围取上…（已截断，完整内容：hindsight show mem_42）'
        >>> clip_line("短文本", 10, ZH, memory_id="mem_42", namespace=None)
        '短文本'
    """
    if len(text) <= limit:
        return text
    tail = t.truncation_notice_no_id if short else truncation_notice(t, memory_id, namespace)
    return text[: max(1, limit - len(t.line_ellipsis))].rstrip() + t.line_ellipsis + tail
