"""``ScopedRetriever``: a :class:`HindsightRetriever` that reads what one principal may read.

It recalls the principal's own namespace plus every namespace its grants let it
read, in one call (one query embedding, all candidates ranked together); each
result's unit (and each ``Document``'s ``metadata["namespace"]``) says where it
came from. A call that names a namespace the principal may not read raises
:class:`~langchain_hindsight.errors.AccessDeniedError` before anything is read.

Example:
    .. code-block:: python

        retriever = ScopedRetriever(store=store, principal=policy.principal("analyst"), k=3)
        docs = retriever.invoke("汇总销售CSV的金额")   # analyst's own memories and the shared pool's
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.recall.engine import RECALL_OPTIONS, RecallResult
from langchain_hindsight.recall.retriever import HindsightRetriever
from langchain_hindsight.sharing.principals import Principal

__all__ = ["ScopedRetriever"]


@refuse_unknown_keywords(also=RECALL_OPTIONS)  # before its own checks: a misspelt principal= is named as such
class ScopedRetriever(HindsightRetriever):
    """Recall for one principal: its own namespace and every readable one, in one call.

    Attributes:
        principal: Whose grants apply. ``namespace`` is always the principal's own
            and ``extra_namespaces`` every namespace it may read, own first (both are
            set from the principal; giving other values is a :class:`ConfigurationError`).

    Other attributes as :class:`HindsightRetriever`.
    """

    principal: Principal

    def __init__(self, **data: Any) -> None:
        principal = data.get("principal")
        if not isinstance(principal, Principal):
            raise ConfigurationError(f"principal must be a Principal, got {type(principal).__name__}")
        own, readable = principal.namespace, principal.readable
        if data.get("namespace") not in (None, own):
            raise ConfigurationError(f"a ScopedRetriever reads from its principal's namespace {own!r}")
        if "extra_namespaces" in data and tuple(data["extra_namespaces"]) != readable:
            raise ConfigurationError("a ScopedRetriever's extra namespaces are its principal's grants")
        super().__init__(**{**data, "namespace": own, "extra_namespaces": readable})

    def recall_result(
        self,
        query: str,
        *,
        k: int | None = None,
        task_type: str | None = None,
        namespace: str | None = None,
        now: datetime | None = None,
    ) -> RecallResult:
        """:meth:`HindsightRetriever.recall_result` over every namespace the principal may read.

        ``namespace`` (optional) must be one the principal may read; it is searched
        first (it wins for a memory found in several), the other readable ones with it.

        Raises:
            AccessDeniedError: ``namespace`` is not readable by the principal.
        """
        if namespace is not None:
            self.principal.check("read", namespace)
        return super().recall_result(query, k=k, task_type=task_type, namespace=namespace, now=now)
