"""Defences against memory poisoning: recalled memories are data, never instructions.

``render_safe`` flattens a memory's text to one plain line (seed pitfall 2: no
Markdown) and neutralises anything that imitates our prompt structure;
``looks_like_instruction`` flags content that tries to steer the agent.
"""

from __future__ import annotations

import re

__all__ = ["looks_like_instruction", "render_safe"]

_MARKDOWN = re.compile(r"(\*\*|__|`{1,3}|^#{1,6}\s*|^\s*[-*+]\s+|^\s*>\s*)", re.MULTILINE)
_STRUCTURE = re.compile(
    r"\[(?:相关经验|当前任务|Relevant experience|Current task)\]|</?(?:system|user|assistant|tool)>"
    r"|\b(?:system|assistant|user)\s*:",
    re.IGNORECASE,
)
_INSTRUCTION = re.compile(
    r"ignore (?:all |any )?(?:previous|prior|above|earlier) (?:instructions|entries|memories)"
    r"|disregard (?:the )?(?:previous|above|system)"
    r"|supersedes? (?:all )?(?:earlier|previous|prior) (?:entries|memories|instructions)"
    r"|you must (?:always|now)|from now on"
    r"|忽略(?:之前|以上|上面|前面)|无视(?:之前|以上)|从现在开始|必须始终",
    re.IGNORECASE,
)


def render_safe(text: str) -> str:
    """``text`` as one plain line that cannot pose as prompt structure."""
    flat = _MARKDOWN.sub("", text)
    flat = _STRUCTURE.sub(
        lambda m: m.group(0).replace("[", "(").replace("]", ")").replace("<", "‹").replace(">", "›").replace(":", "："),
        flat,
    )
    return " ".join(flat.split())


def looks_like_instruction(text: str) -> bool:
    """True when ``text`` carries instruction-like or structure-imitating content."""
    return bool(_INSTRUCTION.search(text) or _STRUCTURE.search(text))
