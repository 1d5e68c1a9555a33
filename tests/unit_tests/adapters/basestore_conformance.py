"""A conformance suite for LangGraph's ``BaseStore`` semantics: the same operations on a reference and a subject.

LangGraph ships no standard tests for its ``BaseStore`` (``langchain-tests``' ``BaseStore*Tests`` cover
langchain-core's key-value store, another interface). This suite runs each scenario — a fixed sequence of
puts, gets, searches, deletes, batches and namespace listings — on a reference store (LangGraph's own
``InMemoryStore``) and on the store under test, through the sync methods and through the async ones, and
compares what they observed. Each scenario observes only what LangGraph's contract fixes:

- ``get``: the namespace, key and value of an item (exactly: values are JSON), or ``None``;
- a search without a query: *which* items match (sorted; the order of a listing is the store's own:
  ``InMemoryStore`` lists in insertion order, ``PostgresStore`` newest first), how many each page holds,
  and that pages do not overlap;
- a search with a query: the best item for a query with one clear answer, which items a search that
  may return everything returns, and that pages partition the results; scores never increase down a page;
- ``list_namespaces``: the exact list (both sort it);
- errors: the exception type for invalid namespaces and TTLs;
- timestamps: ``created_at <= updated_at``, and ``updated_at`` never goes back on an update.

Where ``InMemoryStore`` has a quirk no durable store shares, the scenario avoids it and the quirk is named
(:data:`REFERENCE_QUIRKS`); the subject's own behaviour there is tested by the subject's tests.

Usage: ``await run_scenario(scenario, store, use_async=...)`` returns the observations; compare two stores'.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchItem

__all__ = ["REFERENCE_QUIRKS", "SCENARIOS", "Driver", "run_scenario"]

REFERENCE_QUIRKS = {
    "namespace kept after delete": "InMemoryStore lists a namespace after its last item is deleted, and after a get "
    "in a namespace that never held one (its dict of namespaces is a defaultdict); PostgresStore lists only "
    "namespaces that hold an item.",
    "created_at reset on update": "InMemoryStore gives an updated item a new created_at; PostgresStore keeps the "
    "first put's.",
    "comparison on a missing field": "InMemoryStore raises TypeError for {'$gt': ...} on an item without the "
    "field; PostgresStore matches nothing.",
}
"""What the reference does that a durable store does not; the scenarios stay clear of it."""


class Driver:
    """One store driven through its sync or its async methods, recording observations."""

    def __init__(self, store: BaseStore, *, use_async: bool) -> None:
        self.store = store
        self.use_async = use_async
        self.seen: list[Any] = []

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self.use_async:
            method: Callable[..., Awaitable[Any]] = getattr(self.store, f"a{name}")
            return await method(*args, **kwargs)
        return getattr(self.store, name)(*args, **kwargs)

    async def put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any] | None, **kw: Any) -> None:
        """``put`` (``value=None`` deletes, as LangGraph's ``PutOp`` does)."""
        if value is None:
            await self._call("delete", namespace, key)
        else:
            await self._call("put", namespace, key, value, **kw)

    async def get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        """``get``, observed."""
        item = await self._call("get", namespace, key)
        if item is not None:
            check_times(item)
        self.seen.append(("get", namespace, key, view(item)))
        return item

    async def search(self, prefix: tuple[str, ...], **kw: Any) -> list[SearchItem]:
        """``search``; the caller observes what the contract fixes (see the module docstring)."""
        items: list[SearchItem] = await self._call("search", prefix, **kw)
        for item in items:
            check_times(item)
        return items

    async def list_namespaces(self, **kw: Any) -> None:
        """``list_namespaces``, observed exactly."""
        self.seen.append(("namespaces", kw, await self._call("list_namespaces", **kw)))

    async def batch(self, ops: list[Any]) -> None:
        """``batch``/``abatch``, observed (items as views)."""
        results = await self.store.abatch(ops) if self.use_async else self.store.batch(ops)
        self.seen.append(("batch", [view(r) for r in results]))

    async def raises(self, name: str, *args: Any, **kw: Any) -> None:
        """Observe the type of the exception a call raises (``None`` if it raises none)."""
        try:
            await self._call(name, *args, **kw)
        except Exception as e:  # the type is the observation
            self.seen.append(("raises", name, type(e).__name__))
            return
        self.seen.append(("raises", name, None))

    def observe(self, *what: Any) -> None:
        """Record an observation the scenario computed."""
        self.seen.append(what)


def view(result: Any) -> Any:
    """What the contract fixes of a result: an item's namespace, key and value."""
    if isinstance(result, Item):
        return (tuple(result.namespace), result.key, result.value)
    if isinstance(result, list):
        return [view(r) for r in result]
    return result


def check_times(item: Item) -> None:
    """Timestamps are aware and ``created_at <= updated_at``."""
    assert item.created_at.tzinfo is not None
    assert item.updated_at.tzinfo is not None
    assert item.created_at <= item.updated_at


def keys(items: list[SearchItem]) -> list[tuple[tuple[str, ...], str]]:
    """The items' (namespace, key), sorted (a listing's order is the store's own)."""
    return sorted((tuple(i.namespace), i.key) for i in items)


async def pages(d: Driver, prefix: tuple[str, ...], size: int, **kw: Any) -> None:
    """Observe a paginated search: the page sizes, that pages are disjoint, and what they hold together."""
    seen: list[SearchItem] = []
    sizes = []
    offset = 0
    while True:
        page = await d.search(prefix, limit=size, offset=offset, **kw)
        sizes.append(len(page))
        seen.extend(page)
        if len(page) < size:
            break
        offset += size
    assert len({(tuple(i.namespace), i.key) for i in seen}) == len(seen), "pages overlap"
    d.observe("pages", kw.get("query"), sizes, keys(seen))


# ---------------------------------------------------------------------- scenarios
Scenario = Callable[[Driver], Awaitable[None]]
"""A scenario: drives one store and records what it observed."""

NS = ("memories", "alice")
EDITOR = {"content": "Alice prefers dark mode in the code editor", "topic": "editor", "stars": 3}
REPORT = {"content": "The weekly sales report goes out every Friday afternoon", "topic": "report", "stars": 5}
CSV = {"content": "Bank CSV exports are encoded in GBK, not UTF-8", "topic": "data", "stars": 1}


async def round_trip(d: Driver) -> None:
    """Arbitrary JSON values come back exactly; a missing key is ``None``."""
    values: dict[str, dict[str, Any]] = {
        "plain": {"content": "Alice prefers dark mode in the code editor"},
        "nested": {
            "content": {"name": "Alice", "age": 61, "recent": ["started Go", "moved to Berlin"]},
            "preferences": {"editor": {"theme": "dark", "font_size": 13.5}, "languages": ["go", "python"]},
            "active": True,
            "manager": None,
        },
        "zh": {"content": "客户甲公司希望通过邮件联系，不要打电话。", "优先级": 1, "标签": ["客户", "联系方式"]},
        "no_content": {"title": "Quarterly revenue summary for the board", "pages": 12, "ratio": 0.25},
        "odd key / with spaces": {"content": "Keys are arbitrary strings chosen by the caller"},
    }
    for key, value in values.items():
        await d.put(NS, key, value)
    for key in values:
        await d.get(NS, key)
    await d.get(NS, "missing")
    await d.put(("用户", "张三"), "偏好", {"content": "张三喜欢用中文写周报"})
    await d.get(("用户", "张三"), "偏好")


async def update(d: Driver) -> None:
    """A put on an existing key replaces its value; the item is listed once; ``updated_at`` moves forward."""
    await d.put(NS, "pref", EDITOR)
    first = await d.get(NS, "pref")
    await d.put(NS, "pref", {**EDITOR, "content": "Alice now prefers light mode in the code editor", "stars": 4})
    second = await d.get(NS, "pref")
    assert first is not None
    assert second is not None
    assert second.updated_at >= first.updated_at
    listed = await d.search(NS)
    d.observe("listed", [view(i) for i in listed])


async def delete(d: Driver) -> None:
    """A delete removes the item from get and search; deleting a missing key is no error."""
    await d.put(NS, "a", EDITOR)
    await d.put(NS, "b", REPORT)
    await d.put(NS, "a", None)
    await d.get(NS, "a")
    d.observe("after delete", keys(await d.search(NS)))
    await d.raises("delete", NS, "never-there")
    await d.put(NS, "a", CSV)  # a deleted key can be put again
    await d.get(NS, "a")


async def batches(d: Driver) -> None:
    """In a batch every read sees the store as before the batch; of several puts on one key the last wins."""
    await d.batch([PutOp(NS, "k", EDITOR), GetOp(NS, "k")])
    await d.batch([PutOp(NS, "k", REPORT), PutOp(NS, "k", CSV), GetOp(NS, "k"), PutOp(NS, "j", REPORT)])
    await d.get(NS, "k")
    await d.get(NS, "j")
    await d.batch([PutOp(NS, "j", None), GetOp(NS, "j")])
    await d.get(NS, "j")


async def filters(d: Driver) -> None:
    """Exact, nested and list matches and the six comparison operators."""
    await d.put(NS, "editor", {**EDITOR, "meta": {"lang": "en", "v": 2}, "labels": ["ui", "pref"]})
    await d.put(NS, "report", {**REPORT, "meta": {"lang": "zh", "v": 1}, "labels": ["work"]})
    await d.put(NS, "csv", {**CSV, "meta": {"lang": "en", "v": 1}, "labels": ["work", "data"]})
    for flt in (
        {"topic": "editor"},
        {"topic": "nothing"},
        {"stars": {"$gt": 1}},
        {"stars": {"$gte": 3, "$lt": 5}},
        {"stars": {"$lte": 3}},
        {"stars": {"$ne": 5}},
        {"stars": {"$eq": 5}},
        {"meta": {"lang": "en"}},
        {"meta": {"lang": "en", "v": 1}},
        {"labels": ["work", "data"]},
        {"labels": ["work"]},
        {"topic": "report", "stars": 5},
        {"absent": "x"},
    ):
        d.observe("filter", flt, keys(await d.search(NS, filter=flt)))


async def prefixes(d: Driver) -> None:
    """A search covers every namespace under its prefix, and only those."""
    await d.put(("docs", "a"), "1", EDITOR)
    await d.put(("docs", "b"), "2", REPORT)
    await d.put(("docs", "a", "deep"), "3", CSV)
    await d.put(("other",), "4", REPORT)
    for prefix in ((), ("docs",), ("docs", "a"), ("docs", "a", "deep"), ("doc",), ("other",)):
        d.observe("prefix", prefix, keys(await d.search(prefix)))


async def pagination(d: Driver) -> None:
    """``limit``/``offset`` without a query: pages partition the listing (with and without a filter)."""
    topics = ["editor", "report", "data"]
    for i in range(8):
        await d.put(NS, f"k{i}", {"content": f"Lesson number {i} about the {topics[i % 3]} workflow", "i": i})
    await pages(d, NS, 3)
    await pages(d, NS, 2, filter={"i": {"$gte": 3}})
    d.observe("limit 0", keys(await d.search(NS, limit=0)))
    d.observe("past the end", keys(await d.search(NS, offset=20)))


async def namespaces(d: Driver) -> None:
    """``list_namespaces`` with prefix, suffix, wildcards, ``max_depth``, ``limit`` and ``offset``."""
    for ns in (("a", "b", "v1"), ("a", "c", "v1"), ("a", "c", "v2"), ("b",), ("b", "x", "v1"), ("c", "d")):
        await d.put(ns, "k", EDITOR)
    await d.list_namespaces()
    await d.list_namespaces(prefix=("a",))
    await d.list_namespaces(prefix=("a", "c"))
    await d.list_namespaces(suffix=("v1",))
    await d.list_namespaces(prefix=("a", "*"), suffix=("v1",))
    await d.list_namespaces(prefix=("*", "c"))
    await d.list_namespaces(max_depth=1)
    await d.list_namespaces(max_depth=2)
    await d.list_namespaces(prefix=("a",), max_depth=2)
    await d.list_namespaces(limit=2, offset=1)
    await d.list_namespaces(prefix=("zzz",))


async def query_search(d: Driver) -> None:
    """A query ranks the item that answers it first; pages partition the ranking; scores never increase."""
    await d.put(NS, "editor", EDITOR)
    await d.put(NS, "report", REPORT)
    await d.put(NS, "csv", CSV)
    await d.put(("memories", "bob"), "bob-csv", {"content": "Bob reads bank CSV files with the GBK codec", "stars": 2})
    for query in ("which encoding do bank CSV exports use", "dark mode code editor", "weekly sales report Friday"):
        found = await d.search(NS, query=query, limit=1)
        d.observe("best", query, view(found))
        everything = await d.search(NS, query=query, limit=10)
        scores = [i.score for i in everything]
        assert all(isinstance(s, float) for s in scores)
        assert scores == sorted(scores, reverse=True)
        d.observe("all", query, keys(everything))
    await pages(d, NS, 2, query="bank CSV encoding")
    d.observe("filtered", keys(await d.search(("memories",), query="bank CSV encoding", filter={"stars": {"$lte": 2}})))
    d.observe("across", view(await d.search(("memories",), query="Bob GBK codec bank CSV", limit=1)))


async def invalid(d: Driver) -> None:
    """Invalid namespaces are refused with LangGraph's ``InvalidNamespaceError``; TTLs with ``NotImplementedError``."""
    await d.raises("put", ("a.b",), "k", EDITOR)
    await d.raises("put", (), "k", EDITOR)
    await d.raises("put", ("langgraph", "x"), "k", EDITOR)
    await d.raises("put", ("a", ""), "k", EDITOR)
    await d.raises("get", ("a.b",), "k")
    await d.raises("search", ("a.b",))
    await d.raises("list_namespaces", prefix=("a.b",))
    await d.raises("put", NS, "k", EDITOR, ttl=5)
    d.observe("nothing written", keys(await d.search(())))


SCENARIOS: dict[str, Scenario] = {
    "round_trip": round_trip,
    "update": update,
    "delete": delete,
    "batches": batches,
    "filters": filters,
    "prefixes": prefixes,
    "pagination": pagination,
    "namespaces": namespaces,
    "query_search": query_search,
    "invalid": invalid,
}
"""Every scenario, by name."""


async def run_scenario(
    scenario: Callable[[Driver], Awaitable[None]], store: BaseStore, *, use_async: bool
) -> list[Any]:
    """Run ``scenario`` on ``store`` and return what it observed."""
    driver = Driver(store, use_async=use_async)
    await scenario(driver)
    return driver.seen
