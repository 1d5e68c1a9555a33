"""Principals and grants: which agent may read and write which namespaces.

A *principal* is an agent identity. It owns one namespace (read and write) and may
hold grants on others: ``read`` (recall from it) and ``write`` (publish into it;
write implies read). Grants come from code (:class:`Principal`,
:meth:`AccessPolicy.from_mapping`) or a small TOML file (:meth:`AccessPolicy.from_file`)::

    [principals.cleaner]
    namespace = "cleaner"
    write = ["shared"]

    [principals.analyst]
    namespace = "analyst"
    read = ["shared"]

Example:
    >>> policy = AccessPolicy.from_mapping({"analyst": {"namespace": "analyst", "read": ["shared"]}})
    >>> p = policy.principal("analyst")
    >>> p.readable, p.can_write("shared")
    (('analyst', 'shared'), False)
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight._trust import MemorySource
from langchain_hindsight.errors import AccessDeniedError, ConfigurationError
from langchain_hindsight.types import MemoryUnit

__all__ = [
    "ORIGIN_TAG",
    "PUBLISHED_TAG",
    "AccessPolicy",
    "Operation",
    "Principal",
    "origin_tag",
    "provenance_like",
    "published_from",
    "resolve_principal",
    "unit_origin_tag",
]

PUBLISHED_TAG = "from:"
"""Tag prefix a published copy carries: ``from:<source namespace>``."""

ORIGIN_TAG = "origin:"
"""Tag prefix naming the unit a published copy was made from: ``origin:<digest of namespace and id>``."""

_TAG_MAX = 64
_PROVENANCE_HEADS = frozenset({"from", "origin", "来自", "來自", "出自", "源自"})
"""What a provenance-like tag starts with before its colon (en and zh), compared on a folded skeleton."""
_LOOKALIKE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC", "MODIFIER")
Operation = Literal["read", "write"]
_REMEMBER_SOURCES: frozenset[str] = frozenset({"agent_inference", "user_feedback", "manual", "tool_output"})


def origin_tag(namespace: str) -> str:
    """The tag a copy published from ``namespace`` carries.

    Tags are lower-case and at most 64 characters, so a namespace that does not
    fit as it is is named by a digest instead.

    Example:
        >>> origin_tag("cleaner")
        'from:cleaner'
    """
    tag = PUBLISHED_TAG + namespace
    if tag == tag.lower() and len(tag) <= _TAG_MAX and tag.strip() == tag:
        return tag
    return PUBLISHED_TAG + "#" + hashlib.sha256(namespace.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def unit_origin_tag(namespace: str, memory_id: str) -> str:
    """The tag every copy published from unit ``memory_id`` of ``namespace`` carries, whatever id the copy has.

    Example:
        >>> unit_origin_tag("cleaner", "mem_1") == unit_origin_tag("cleaner", "mem_1") != unit_origin_tag("x", "mem_1")
        True
    """
    key = f"{namespace}\x00{memory_id}".encode("utf-8", "surrogatepass")
    return ORIGIN_TAG + hashlib.sha256(key).hexdigest()[:32]


def published_from(unit: MemoryUnit, namespace: str) -> bool:
    """Whether ``unit`` is a copy published from ``namespace``."""
    return origin_tag(namespace) in unit.tags


def _colon(c: str) -> bool:
    return c == ":" or "COLON" in unicodedata.name(c, "") or c in "\u2236\u02d0\u02f8"  # ∶ ː ˸


def provenance_like(tag: str) -> bool:
    """Whether ``tag`` reads as a provenance tag (``from:…``, ``origin:…``, ``来自：…``) in any case or form.

    Compared on a skeleton: NFKC (full-width ``ＦＲＯＭ：``), combining marks,
    invisible and space characters dropped, case folded, any colon-like character
    (``:``, ``：``, ``∶``, ``꞉`` …) as the separator. A head before the colon
    written in a script that imitates Latin letters (Cyrillic ``fгom:``, Greek,
    mixed) is provenance-like too: only ``publish`` sets such tags.

    Example:
        >>> [provenance_like(t) for t in ("FROM:cleaner", "ｆｒｏｍ：cleaner", "f\u200brom:x", "fгom:x")]
        [True, True, True, True]
        >>> provenance_like("lang:zh"), provenance_like("语言:中文"), provenance_like("来自：cleaner")
        (False, False, True)
    """
    text = unicodedata.normalize("NFKC", str(tag))
    folded = "".join(
        c
        for c in unicodedata.normalize("NFD", text)
        if unicodedata.category(c) not in ("Mn", "Me", "Cf", "Cc", "Zs", "Zl", "Zp") and not c.isspace()
    ).casefold()
    cut = next((i for i, c in enumerate(folded) if _colon(c)), None)
    if cut is None:
        return False
    head = unicodedata.normalize("NFKC", folded[:cut])
    if head in _PROVENANCE_HEADS:
        return True
    letters = [c for c in head if c.isalpha()]
    if not letters or head.isascii():
        return False
    return all(unicodedata.name(c, "").startswith(_LOOKALIKE_SCRIPTS) for c in letters)


def _names(value: object, what: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ConfigurationError(f"{what} must be a list of namespace names, got {value!r}")
    names = list(value)
    if not all(isinstance(n, str) and n.strip() == n and n for n in names):
        raise ConfigurationError(f"{what} must hold non-empty namespace names, got {names!r}")
    return frozenset(names)


@refuse_unknown_keywords
@dataclass(frozen=True, slots=True)
class Principal:
    """An agent identity: its own namespace plus read/write grants on others.

    Attributes:
        name: The identity (e.g. ``"analyst"``), recorded in the journal.
        namespace: Its own namespace (always readable and writable).
        read: Namespaces it may recall from.
        write: Namespaces it may publish into (write implies read).
        trust: The source its lessons are stored with. ``"user_feedback"`` lets it
            relay a human's corrections at full trust; the default,
            ``"agent_inference"``, stores everything it says as an agent's inference.
    """

    name: str
    namespace: str
    read: frozenset[str] = field(default_factory=frozenset)
    write: frozenset[str] = field(default_factory=frozenset)
    trust: MemorySource = "agent_inference"

    def __post_init__(self) -> None:
        for what, value in (("name", self.name), ("namespace", self.namespace)):
            if not isinstance(value, str) or not value or value.strip() != value:
                raise ConfigurationError(f"principal {what} must be a non-empty string, got {value!r}")
        if self.trust not in _REMEMBER_SOURCES:
            raise ConfigurationError(f"trust must be one of {sorted(_REMEMBER_SOURCES)}, got {self.trust!r}")
        object.__setattr__(self, "read", _names(self.read, "read"))
        object.__setattr__(self, "write", _names(self.write, "write"))

    def can_read(self, namespace: str) -> bool:
        """Whether this principal may read ``namespace``."""
        return namespace == self.namespace or namespace in self.read or namespace in self.write

    def can_write(self, namespace: str) -> bool:
        """Whether this principal may write ``namespace``."""
        return namespace == self.namespace or namespace in self.write

    @property
    def readable(self) -> tuple[str, ...]:
        """Every namespace it may read: its own first, then the others sorted."""
        return (self.namespace, *sorted((self.read | self.write) - {self.namespace}))

    def check(self, operation: Operation, namespace: str) -> None:
        """Raise :class:`AccessDeniedError` unless ``operation`` on ``namespace`` is granted."""
        allowed = self.can_read(namespace) if operation == "read" else self.can_write(namespace)
        if not allowed:
            raise AccessDeniedError(f"principal {self.name!r} has no {operation} grant on namespace {namespace!r}")


@refuse_unknown_keywords
class AccessPolicy:
    """The principals of a deployment, by name (from code or a TOML file)."""

    def __init__(self, principals: Iterable[Principal]) -> None:
        self._principals: dict[str, Principal] = {}
        for p in principals:
            if not isinstance(p, Principal):
                raise ConfigurationError(f"principals must be Principal objects, got {type(p).__name__}")
            if p.name in self._principals:
                raise ConfigurationError(f"principal {p.name!r} is defined twice")
            self._principals[p.name] = p

    @classmethod
    def from_mapping(cls, data: Mapping[str, Mapping[str, Any]]) -> AccessPolicy:
        """Build from ``{name: {"namespace": ..., "read": [...], "write": [...]}}``."""
        if not isinstance(data, Mapping):
            raise ConfigurationError("the principals table must be a mapping of names to tables")
        principals = []
        for name, spec in data.items():
            if not isinstance(spec, Mapping):
                raise ConfigurationError(f"principal {name!r} must be a table")
            unknown = set(spec) - {"namespace", "read", "write", "trust"}
            if unknown:
                raise ConfigurationError(f"principal {name!r} has unknown keys {sorted(unknown)}")
            principals.append(
                Principal(
                    name=name,
                    namespace=spec.get("namespace", name),
                    read=_names(spec.get("read"), f"{name}.read"),
                    write=_names(spec.get("write"), f"{name}.write"),
                    trust=spec.get("trust", "agent_inference"),
                )
            )
        return cls(principals)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> AccessPolicy:
        """Load a TOML file with a ``[principals.NAME]`` table per principal.

        Raises:
            ConfigurationError: the file is missing, not TOML, or malformed.
        """
        import tomllib  # a grants file's alone: a command without --config never parses TOML

        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as e:  # the reason only ("No such file or directory"): the path is named once
            raise ConfigurationError(f"cannot read access config {str(path)!r}: {e.strerror or e}") from e
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise ConfigurationError(f"cannot read access config {str(path)!r}: {e}") from e
        except RecursionError as e:  # tomllib parses nested arrays and tables recursively
            raise ConfigurationError(f"cannot read access config {str(path)!r}: nested too deeply") from e
        return cls.from_mapping(data.get("principals", {}))

    def principal(self, name: str) -> Principal:
        """The principal called ``name``.

        Raises:
            ConfigurationError: no such principal.
        """
        try:
            return self._principals[name]
        except KeyError:
            raise ConfigurationError(
                f"unknown principal {name!r}; known: {', '.join(sorted(self._principals)) or 'none'}"
            ) from None

    def __iter__(self) -> Iterator[Principal]:
        return iter(self._principals.values())


def resolve_principal(
    principal: Principal | str, policy: AccessPolicy | str | os.PathLike[str] | None = None
) -> Principal:
    """The :class:`Principal` meant by ``principal``: itself, or a name looked up in ``policy``.

    Args:
        principal: A :class:`Principal`, or the name of one in ``policy``.
        policy: An :class:`AccessPolicy`, or the path of its TOML file; needed when
            ``principal`` is a name.

    Raises:
        ConfigurationError: a name without a policy, an unknown name, or an unreadable policy file.
    """
    if isinstance(principal, Principal):
        if policy is not None:
            raise ConfigurationError("give policy= only with a principal name, not with a Principal")
        return principal
    if not isinstance(principal, str):
        raise ConfigurationError(f"principal must be a Principal or a name, got {type(principal).__name__}")
    if policy is None:
        raise ConfigurationError(f"principal {principal!r} is a name: give policy= (an AccessPolicy or a TOML path)")
    if not isinstance(policy, AccessPolicy):
        if not isinstance(policy, str | os.PathLike):
            raise ConfigurationError(f"policy must be an AccessPolicy or a path, got {type(policy).__name__}")
        policy = AccessPolicy.from_file(policy)
    return policy.principal(principal)
