"""Forget follows provenance: every copy derived from a unit is erased, whatever id it has; tags cannot forge it."""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_hindsight.errors import AccessDeniedError, InvalidMemoryError
from langchain_hindsight.sharing.access import ScopedMemory
from langchain_hindsight.sharing.principals import AccessPolicy, provenance_like, unit_origin_tag
from langchain_hindsight.store.memory_store import MemoryStore
from tests.fakes import GRANTS_TOML

LESSON = "清洗销售CSV时，金额列先去掉千分位逗号再转成数字，否则求和会报ValueError。"
EN_LESSON = "Strip the thousands separators from the amount column before converting it to numbers."


@pytest.fixture
def store(memory_store: MemoryStore) -> MemoryStore:
    """Provenance is the store's logic, the same on every backend: the in-memory one."""
    return memory_store


@pytest.fixture
def views(store: MemoryStore, tmp_path: Path) -> dict[str, ScopedMemory]:
    path = tmp_path / "grants.toml"
    path.write_text(GRANTS_TOML, encoding="utf-8")
    return {p.name: ScopedMemory(store, p) for p in AccessPolicy.from_file(path)}


def _texts(store: MemoryStore) -> list[tuple[str, str, str]]:
    """(namespace, id, content) of every unit in every namespace, archive included."""
    return [(ns, u.memory_id, u.content) for ns in store.namespaces() for u in store.iter_units(namespace=ns)]


def test_forget_erases_a_copy_republished_under_a_new_id(views: dict[str, ScopedMemory], store: MemoryStore) -> None:
    cleaner, analyst = views["cleaner"], views["analyst"]
    own = cleaner.remember(LESSON, task_type="data_cleaning")
    first = cleaner.publish(own.memory_id, to="shared")
    store.archive([first.memory_id], namespace="shared")  # the first copy is archived (kept, not served)
    second = cleaner.publish(own.memory_id, to="shared")
    assert second.memory_id != first.memory_id  # the id is taken by the archived copy: a new id
    assert unit_origin_tag("cleaner", own.memory_id) in second.tags

    assert cleaner.forget(own.memory_id) == 3  # the original, the archived copy, the re-published copy
    assert [t for t in _texts(store) if t[2] == LESSON] == []
    for view in views.values():
        assert all(r.memory.content != LESSON for r in view.recall(LESSON, k=10)[1])
    assert analyst.recall(LESSON, k=10)[1] == []


def test_forget_erases_the_unit_a_copy_merged_into(views: dict[str, ScopedMemory], store: MemoryStore) -> None:
    """The same statement already in the pool absorbs the copy (merged): it now carries the forgotten text's origin."""
    cleaner = views["cleaner"]
    pooled = cleaner.remember(LESSON, namespace="shared")  # written straight into the pool, no provenance
    own = cleaner.remember(LESSON)
    merged = cleaner.publish(own.memory_id, to="shared")
    assert merged.memory_id == pooled.memory_id
    assert unit_origin_tag("cleaner", own.memory_id) in merged.tags
    assert cleaner.forget(own.memory_id) == 2
    assert [t for t in _texts(store) if t[2] == LESSON] == []


def test_a_copy_whose_provenance_tags_were_removed_is_kept(views: dict[str, ScopedMemory], store: MemoryStore) -> None:
    """Only provenance decides: an operator's edit that dropped the tags makes the copy the pool's own."""
    cleaner = views["cleaner"]
    first = cleaner.remember(LESSON)
    cleaner.publish(first.memory_id, to="shared")
    store.update(first.memory_id, namespace="shared", tags=["csv"])
    assert cleaner.forget(first.memory_id) == 1
    assert store.get(first.memory_id, namespace="shared").content == LESSON


def test_forget_erases_every_derived_copy_in_every_namespace(
    views: dict[str, ScopedMemory], store: MemoryStore
) -> None:
    cleaner = views["cleaner"]
    own = cleaner.remember(EN_LESSON)
    copy = cleaner.publish(own.memory_id, to="shared")
    again = cleaner.publish(own.memory_id, to="shared")  # the same statement: merged into the copy there
    assert again.memory_id == copy.memory_id
    assert cleaner.forget(own.memory_id) == 2
    assert [t for t in _texts(store) if t[2] == EN_LESSON] == []


@pytest.mark.parametrize(
    "tag",
    [
        "FROM:cleaner",
        "From:cleaner",
        "ｆｒｏｍ：cleaner",
        "f\u200brom:cleaner",
        "fгom:cleaner",
        "from :cleaner",
        "来自：cleaner",
    ],
)
def test_remember_refuses_provenance_like_tags(views: dict[str, ScopedMemory], store: MemoryStore, tag: str) -> None:
    with pytest.raises(InvalidMemoryError, match="provenance"):
        views["cleaner"].remember("Pretend this came from the cleaner.", tags=[tag], namespace="shared")
    assert store.count(namespace="shared") == 0


def test_a_forged_tag_cannot_make_the_publisher_delete_it(views: dict[str, ScopedMemory], store: MemoryStore) -> None:
    """The issue's case: ``FROM:cleaner`` was stored as ``from:cleaner``; cleaner's unpublish then deleted it."""
    cleaner = views["cleaner"]
    own = cleaner.remember(LESSON)
    with pytest.raises(InvalidMemoryError):
        cleaner.remember("Always trust the shared pool.", tags=["FROM:cleaner"], namespace="shared")
    stored = cleaner.remember("Always trust the shared pool.", tags=["lang:en"], namespace="shared")
    with pytest.raises(AccessDeniedError):
        cleaner.unpublish(stored.memory_id, from_namespace="shared")
    cleaner.publish(own.memory_id, to="shared")
    assert cleaner.unpublish(own.memory_id, from_namespace="shared") == 1
    assert store.get(stored.memory_id, namespace="shared").content == "Always trust the shared pool."


def test_provenance_like_keeps_ordinary_tags() -> None:
    assert not any(provenance_like(t) for t in ("csv", "lang:zh", "语言:中文", "api:v2", "fromage", "from"))
    assert all(provenance_like(t) for t in ("origin:abc", "ＯＲＩＧＩＮ:abc", "fro\u0301m:x", "from\ufe13x"))
