"""Chroma ``where`` / ``where_document`` filters as SQL over the Postgres backend's ``metadata`` and ``document``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["SqlFilter"]

_TYPE = {bool: "boolean", int: "number", float: "number", str: "string"}
_ORDER_OPS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


class SqlFilter:
    """Chroma ``where`` / ``where_document`` filters compiled to SQL over ``metadata``/``document``.

    Semantics follow :func:`~langchain_hindsight.store.backend.inmemory.matches`: a missing field never
    matches (not even ``$ne``), orderings compare values of the same kind only. Each call appends its
    parameters to :attr:`params`, in the order of the SQL it returns.

    Raises:
        ValueError: an operator or operand Chroma's filters do not have.
    """

    def __init__(self, psycopg: Any) -> None:
        self.jsonb = psycopg.types.json.Jsonb
        self.params: list[Any] = []

    def where(self, where: Mapping[str, Any] | None) -> str:
        """``where`` (a metadata filter) as a boolean SQL expression."""
        return self._compile(where, self._field)

    def document(self, where: Mapping[str, Any] | None) -> str:
        """``where_document`` (``$contains`` / ``$not_contains``) as a boolean SQL expression."""
        return self._compile(where, self._contains)

    def _compile(self, where: Mapping[str, Any] | None, leaf: Callable[[str, Any], list[str]]) -> str:
        parts: list[str] = []
        for key, cond in (where or {}).items():
            if key == "$and" and leaf == self._field and (merged := _equalities(cond)) is not None:
                # one containment for the whole conjunction: the metadata index finds its few rows at once
                self.params.append(self.jsonb(merged))
                parts.append("metadata @> %s")
            elif key in ("$and", "$or"):
                inner = [self._compile(c, leaf) for c in cond]
                joiner = " AND " if key == "$and" else " OR "
                parts.append("(" + joiner.join(inner) + ")" if inner else ("TRUE" if key == "$and" else "FALSE"))
            else:
                parts += leaf(key, cond)
        return "(" + " AND ".join(parts) + ")" if parts else "TRUE"

    def _contains(self, key: str, text: Any) -> list[str]:
        if key not in ("$contains", "$not_contains"):
            raise ValueError(f"unsupported where_document operator {key!r}")
        self.params.append(str(text))
        return [f"strpos(coalesce(document, ''), %s) {'>' if key == '$contains' else '='} 0"]

    def _field(self, key: str, cond: Any) -> list[str]:
        if key.startswith("$"):
            raise ValueError(f"unsupported where operator {key!r}")
        ops = cond if isinstance(cond, Mapping) else {"$eq": cond}
        return [self._op(key, op, operand) for op, operand in ops.items()]

    def _op(self, key: str, op: str, operand: Any) -> str:
        jsonb = self.jsonb
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


def _equalities(conditions: Any) -> dict[str, Any] | None:
    """An ``$and`` of single-field equalities on distinct fields as one mapping, else ``None``."""
    merged: dict[str, Any] = {}
    for cond in conditions:
        if not isinstance(cond, Mapping) or len(cond) != 1:
            return None
        ((key, value),) = cond.items()
        if isinstance(value, Mapping) or key.startswith("$") or key in merged:
            return None
        merged[key] = value
    return merged or None
