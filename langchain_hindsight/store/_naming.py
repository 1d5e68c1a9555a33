"""How the store names its collections: one per namespace and role, tagged with the namespace (standard library only).

Each namespace has one collection per role, named from the namespace (:func:`collection_name`: a slug and a
digest, so two namespaces never share a name) and tagged with it in the collection's metadata, which opening
checks (``_collections.open_collection``). ``hindsight reembed`` writes into a side collection (:data:`REEMBED_SUFFIX`).

Kept apart from ``_collections`` so the CLI's quick path (``hindsight stats``) can name a namespace's collections
without importing the store.
"""

from __future__ import annotations

import hashlib
import re
from typing import Literal

__all__ = [
    "ALL_ROLES",
    "NAMESPACE_KEY",
    "REEMBED_COMPLETE",
    "REEMBED_OF",
    "REEMBED_SUFFIX",
    "ROLES",
    "ROLE_KEY",
    "Role",
    "collection_name",
]

Role = Literal["memories", "archive", "journal"]
ROLES: tuple[Role, ...] = ("memories", "archive")
"""Collections that hold memory units (the journal holds run records, see ``journal.py``)."""
ALL_ROLES: tuple[Role, ...] = ("memories", "archive", "journal")
_PREFIXES: dict[str, str] = {"memories": "hs", "archive": "hsarc", "journal": "hsjrn"}
NAMESPACE_KEY = "hindsight_namespace"
"""Collection metadata key: the namespace the collection belongs to (checked on open)."""
ROLE_KEY = "hindsight_role"
"""Collection metadata key: the collection's role (one of :data:`ALL_ROLES` for a namespace's collections)."""
REEMBED_SUFFIX = "-reembed"
"""Suffix of the side collection ``hindsight reembed`` writes into (canonical names end in a hex digest)."""
REEMBED_OF = "hindsight_reembed_of"
"""Side collection metadata key: the role of the collection it will replace."""
REEMBED_COMPLETE = "hindsight_reembed_complete"
"""Side collection metadata key: true once the copy was verified against the original."""


def collection_name(namespace: str, role: Role) -> str:
    """The Chroma collection name of ``namespace``'s ``role`` collection (slug + digest, collision-safe)."""
    slug = re.sub(r"[^a-z0-9]+", "-", namespace.lower()).strip("-")[:32] or "ns"
    digest = hashlib.sha256(namespace.encode()).hexdigest()[:12]
    return f"{_PREFIXES[role]}-{slug}-{digest}"
