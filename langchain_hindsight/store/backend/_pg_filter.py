"""Chroma ``where`` / ``where_document`` filters as SQL over the Postgres backend's ``metadata`` and ``document``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SqlFilter"]

_TYPE = {bool: "boolean", int: "number", float: "number", str: "string"}
_ORDER_OPS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


class SqlFilter:
    """Chroma ``where`` / ``where_document`` filters compiled to SQL over ``metadata``/``document``.

    Semantics follow :func:`~langchain_hindsight.store.backend.inmemory.matches`: a missing field never
    matches (not even ``$ne``), orderings compare values of the same kind only.
    """

    def __init__(self, psycopg: Any) -> None:
        self.psycopg = psycopg
        self.params: list[Any] = []

    def where(self, where: Mapping[str, Any] | None) -> str:
        if not where:
            return "TRUE"
        parts: list[str] = []
        for key, cond in where.items():
            if key in ("$and", "$or"):
                inner = [self.where(c) for c in cond]
                joiner = " AND " if key == "$and" else " OR "
                parts.append("(" + joiner.join(inner) + ")" if inner else ("TRUE" if key == "$and" else "FALSE"))
                continue
            if key.startswith("$"):
                raise ValueError(f"unsupported where operator {key!r}")
            ops = cond if isinstance(cond, Mapping) else {"$eq": cond}
            for op, operand in ops.items():
                parts.append(self._field(key, op, operand))
        return "(" + " AND ".join(parts) + ")" if parts else "TRUE"

    def _field(self, key: str, op: str, operand: Any) -> str:
        jsonb = self.psycopg.types.json.Jsonb
        if op == "$eq":
            self.params.append(jsonb({key: operand}))
            return "metadata @> %s"
        if op == "$ne":
            self.params += [key, key, jsonb(operand)]
            return "(metadata ? %s::text AND metadata -> %s::text <> %s)"
        if op in _ORDER_OPS:
            kind = _TYPE.get(type(operand))
            if kind is None:
                raise ValueError(f"unsupported operand {operand!r} for {op}")
            self.params += [key, kind, key, jsonb(operand)]
            return f"(jsonb_typeof(metadata -> %s::text) = %s AND metadata -> %s::text {_ORDER_OPS[op]} %s)"
        if op in ("$in", "$nin"):
            values = [jsonb(v) for v in operand]
            if op == "$in":
                self.params += [key, values]
                return "(metadata -> %s::text = ANY(%s::jsonb[]))"
            self.params += [key, key, values]
            return "(metadata ? %s::text AND NOT (metadata -> %s::text = ANY(%s::jsonb[])))"
        raise ValueError(f"unsupported where operator {op!r}")

    def document(self, where: Mapping[str, Any] | None) -> str:
        if not where:
            return "TRUE"
        parts: list[str] = []
        for key, cond in where.items():
            if key in ("$and", "$or"):
                inner = [self.document(c) for c in cond]
                joiner = " AND " if key == "$and" else " OR "
                parts.append("(" + joiner.join(inner) + ")" if inner else ("TRUE" if key == "$and" else "FALSE"))
            elif key in ("$contains", "$not_contains"):
                self.params.append(str(cond))
                parts.append(f"strpos(coalesce(document, ''), %s) {'>' if key == '$contains' else '='} 0")
            else:
                raise ValueError(f"unsupported where_document operator {key!r}")
        return "(" + " AND ".join(parts) + ")"
