"""MemoryStore: persistence, dedup/conflicts, feedback, locking, validation (issue: foundation).

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/store/test_store.py``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage

from langchain_hindsight import ConfigurationError, MemoryNotFoundError, MemoryStore, MemoryUnit, StoreLockedError
from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.errors import InvalidMemoryError, StoreClosedError, StoreError
from langchain_hindsight.store import ConfidencePolicy
from langchain_hindsight.writes import LLMWriteJudge
from tests.fakes import ReactiveToolModel, Turn, call
from tests.unit_tests.store.store_backends import chroma_store_factory, store_factory  # noqa: F401 - fixtures

CSV_LESSON = "使用pandas读取CSV时，如果文件包含中文，需要指定encoding='utf-8-sig'，否则会出现乱码。"


class CountingEmbeddings(Embeddings):
    """A real embedder that counts how often it is asked to embed documents."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.document_calls: list[int] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.document_calls.append(len(texts))
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def _unit(content: str = CSV_LESSON, **kwargs: object) -> MemoryUnit:
    kwargs.setdefault("task_type", "data_cleaning")
    return MemoryUnit(content=content, **kwargs)  # type: ignore[arg-type]


def test_add_normalises_task_type_and_fills_defaults(store: MemoryStore) -> None:
    stored = store.add(_unit(task_type="清洗数据")).unit
    assert stored.task_type == "data_cleaning"
    assert stored.status == "active"
    assert stored.confidence == pytest.approx(0.65)  # agent inference starts in 0.6-0.7
    assert store.get(stored.memory_id) == stored


def test_initial_confidence_by_source_and_policy(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store(policy=ConfidencePolicy(initial={"agent_inference": 0.6, "user_feedback": 0.92}))
    inferred = store.add(_unit("Call the weather API with units=metric for Celsius.", task_type="api_call")).unit
    told = store.add(_unit("The weekly report goes to the team lead, not the director.", source="user_feedback")).unit
    explicit = store.add(_unit("Use csv.Sniffer to detect the delimiter first.", confidence=0.72)).unit
    assert inferred.confidence == pytest.approx(0.6)
    assert told.confidence == pytest.approx(0.92)
    assert explicit.confidence == pytest.approx(0.72)


def test_every_field_round_trips_through_a_fresh_process(
    make_chroma_store: Callable[..., MemoryStore], tmp_path: Path
) -> None:
    store = make_chroma_store("persist")
    created = datetime(2025, 1, 15, 10, 30, 0, 123456, tzinfo=UTC)
    unit = _unit(
        task_description="清洗包含中文和英文的CSV文件",
        context={
            "tools_used": ["pandas.read_csv"],
            "parameters": {"encoding": "utf-8-sig", "nested": {"a": [1, 2.5, None]}},
            "input_sample": "姓名,年龄,城市\n张三,25,北京",
            "output_sample": "ok",
        },
        confidence=0.85,
        created_at=created,
        last_accessed_at=created + timedelta(days=5, microseconds=7),
        access_count=3,
        tags=["csv", "encoding", "chinese", "pandas"],
        kind="experience",
        run_id="run-1",
    )
    stored = store.add(unit).unit
    expected = {u.memory_id: u.to_dict() for u in store.list_units()}
    store.close()
    script = textwrap.dedent(
        f"""
        import json, sys
        from langchain_hindsight import MemoryStore
        from langchain_hindsight.embeddings.local import LocalEmbeddings
        with MemoryStore({str(tmp_path / "persist")!r}, embeddings=LocalEmbeddings()) as s:
            print(json.dumps({{u.memory_id: u.to_dict() for u in s.list_units()}}))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    reopened = json.loads(out.stdout.strip().splitlines()[-1])
    assert reopened == expected
    assert reopened[stored.memory_id]["created_at"] == "2025-01-15T10:30:00.123456Z"


def test_get_missing_raises_typed_error(store: MemoryStore) -> None:
    with pytest.raises(MemoryNotFoundError, match="mem_nope"):
        store.get("mem_nope")
    assert isinstance(MemoryNotFoundError("x"), KeyError)


def test_add_many_embeds_once_and_aligns_results(
    make_store: Callable[..., MemoryStore], embeddings: Embeddings
) -> None:
    counting = CountingEmbeddings(embeddings)
    store = make_store(embeddings=counting)
    units = [
        _unit("Weekly report: summarise only the last 7 days of tickets.", task_type="weekly_report"),
        _unit("Monthly report: include the month-over-month revenue chart.", task_type="monthly_report"),
        _unit("Retry the flaky geocoding API up to 3 times with backoff.", task_type="api_call"),
    ]
    stored = [r.unit for r in store.add_many(units)]
    assert counting.document_calls == [3]
    assert [u.memory_id for u in stored] == [u.memory_id for u in units]
    assert store.count() == 3


def test_client_injection_uses_the_same_code_path(embeddings: Embeddings) -> None:
    import chromadb

    client = chromadb.EphemeralClient()
    with MemoryStore(client=client, embeddings=embeddings) as store:
        stored = store.add(_unit()).unit
        assert store.get(stored.memory_id).content == CSV_LESSON
    # The store does not close a client it was given.
    assert client.heartbeat() > 0


@pytest.mark.integration  # loads the real model through torch (HuggingFaceEmbeddings) where the extra is installed
def test_any_langchain_embeddings_is_accepted(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers", reason="HuggingFaceEmbeddings loads models with the torch extra")
    from langchain_huggingface import HuggingFaceEmbeddings

    from langchain_hindsight.embeddings.models import default_model_path

    hf = HuggingFaceEmbeddings(model_name=default_model_path(), encode_kwargs={"normalize_embeddings": True})
    with MemoryStore(tmp_path / "hf", embeddings=hf) as store:
        store.add(_unit())
        (hit, similarity, _), *_ = store.search("读取中文CSV乱码", k=1)
        assert hit.content == CSV_LESSON
        assert 0.0 < similarity <= 1.0


def test_similar_different_content_keeps_both_without_a_judge(store: MemoryStore) -> None:
    # Advice for other cases (Windows / macOS exports), 0.88 similar: no contradiction, so no supersede on cosine.
    # (The same case with another encoding is a contradiction the rule judge supersedes: test_write_semantics.)
    old = store.add(
        _unit(
            "When reading a Chinese CSV exported from Windows, pass encoding='gbk' to avoid garbled text.",
            confidence=0.8,
        )
    )
    new = store.add(
        _unit("When reading a Chinese CSV exported from macOS, pass encoding='utf-8-sig' to avoid garbled text.")
    )
    assert (old.action, new.action) == ("added", "added")
    assert new.related_ids == (old.memory_id,)  # similar, named, but not superseded on cosine alone
    assert new.unit.supersedes is None
    assert {u.status for u in store.get_many([old.memory_id, new.memory_id])} == {"active"}


def test_conflict_judged_by_a_model_supersedes_and_keeps_history(make_store: Callable[..., MemoryStore]) -> None:
    def respond(messages: list[BaseMessage]) -> Turn:
        shown = re.findall(r"id=(mem_\w+)", str(messages[-1].content))
        return call("JudgeOutput", decision="conflict", target_id=shown[0], reason="same subject, other encoding")

    store = make_store(judge=LLMWriteJudge(ReactiveToolModel(respond=respond), locale="en"))
    old = store.add(
        _unit("When reading a Chinese CSV with pandas, pass encoding='gbk' to avoid garbled text.", confidence=0.8)
    ).unit
    result = store.add(
        _unit("When reading a Chinese CSV with pandas, pass encoding='utf-8-sig' to avoid garbled text.")
    )
    new = result.unit
    assert (result.action, result.related_ids) == ("superseded", (old.memory_id,))
    # the judge's reason, and what the undo needs (the old confidence)
    assert (
        result.reason == f"same subject, other encoding ({old.memory_id}: confidence 0.80 -> 0.40, kept as superseded)"
    )
    assert new.supersedes == old.memory_id
    demoted = store.get(old.memory_id)
    assert demoted.status == "superseded"
    assert demoted.confidence == pytest.approx(0.4)
    assert [u.memory_id for u in store.history(old.memory_id)] == [new.memory_id, old.memory_id]
    assert [u.memory_id for u in store.history(new.memory_id)] == [new.memory_id, old.memory_id]
    assert [u.memory_id for u, _, _ in store.search("Chinese CSV encoding", k=5)] == [new.memory_id]


def test_identical_content_merges_instead_of_duplicating(store: MemoryStore) -> None:
    first = store.add(_unit(confidence=0.7, access_count=2, tags=["csv"])).unit
    result = store.add(_unit("  " + CSV_LESSON + " ", confidence=0.85, access_count=3, tags=["encoding"]))
    second = result.unit
    assert (result.action, result.related_ids) == ("merged", (first.memory_id,))
    assert second.memory_id == first.memory_id
    # Learned again: evidence 2, and confidence grows from the higher (0.85) by a quarter of the gap to the
    # source's ceiling (agent_inference: 0.9), so a lesson learned twice outranks one learned once.
    assert second.evidence == 2
    assert second.confidence == pytest.approx(0.85 + (0.9 - 0.85) * 0.25)
    assert second.access_count == 5
    assert second.tags == ["csv", "encoding"]
    assert len(second.merged_from) == 1
    assert store.count() == 1


def test_merge_keeps_the_more_trusted_source(store: MemoryStore) -> None:
    told = store.add(_unit(source="user_feedback")).unit
    again = store.add(_unit(source="tool_output")).unit
    assert again.memory_id == told.memory_id
    assert again.source == "user_feedback"


def test_duplicates_inside_one_batch_merge(store: MemoryStore) -> None:
    stored = [r.unit for r in store.add_many([_unit(confidence=0.6), _unit(confidence=0.9)])]
    assert stored[0].memory_id == stored[1].memory_id
    assert store.count() == 1
    assert store.get(stored[0].memory_id).confidence == pytest.approx(0.9)


def test_conflicts_stay_within_a_task_type(store: MemoryStore) -> None:
    weekly = store.add(
        _unit("The report covers the last 7 days and goes to the team lead.", task_type="weekly_report")
    ).unit
    monthly = store.add(
        _unit("The report covers the last 30 days and goes to the team lead.", task_type="monthly_report")
    ).unit
    assert monthly.supersedes is None
    assert store.get(weekly.memory_id).status == "active"


def test_thresholds_can_be_switched_off(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store(conflict_threshold=None, merge_threshold=None)
    a = store.add(_unit("When reading a Chinese CSV with pandas, pass encoding='gbk' to avoid garbled text.")).unit
    b = store.add(
        _unit("When reading a Chinese CSV with pandas, pass encoding='utf-8-sig' to avoid garbled text.")
    ).unit
    c = store.add(
        _unit("When reading a Chinese CSV with pandas, pass encoding='utf-8-sig' to avoid garbled text.")
    ).unit
    assert b.supersedes is None
    assert store.get(a.memory_id).status == "active"
    assert c.memory_id == b.memory_id  # identical content still merges


def test_dedupe_false_stores_as_given(store: MemoryStore) -> None:
    store.add_many([_unit(), _unit()], dedupe=False)
    assert store.count() == 2


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"conflict_threshold": 1.5}, "conflict_threshold"),
        ({"merge_threshold": 0.0}, "merge_threshold"),
        ({"conflict_threshold": 0.9, "merge_threshold": 0.8}, "merge_threshold"),
        ({"conflict_scope": "global"}, "conflict_scope"),
        ({"namespace": ""}, "namespace"),
    ],
)
def test_bad_options_raise_configuration_error(
    tmp_path: Path, embeddings: Embeddings, kwargs: dict[str, object], match: str
) -> None:
    with pytest.raises(ConfigurationError, match=match):
        MemoryStore(tmp_path / "bad", embeddings=embeddings, **kwargs)  # type: ignore[arg-type]


def test_feedback_follows_the_seed_policy(store: MemoryStore) -> None:
    unit = store.add(_unit(confidence=0.7, last_accessed_at=datetime(2025, 1, 1, tzinfo=UTC))).unit
    now = datetime(2025, 2, 1, tzinfo=UTC)
    (after,) = store.record_feedback([unit.memory_id], success=True, now=now)
    assert after.confidence == pytest.approx(0.75)
    assert after.access_count == 1
    assert after.last_accessed_at == now
    (after,) = store.record_feedback(unit.memory_id, success=False, now=now)
    assert after.confidence == pytest.approx(0.65)
    assert after.access_count == 2
    (after,) = store.record_feedback([unit.memory_id], rejected=True, now=now)
    assert after.confidence == pytest.approx(0.325)
    assert store.get(unit.memory_id).confidence == pytest.approx(0.325)


def test_feedback_cap_and_floor(store: MemoryStore) -> None:
    high = store.add(_unit(confidence=0.93)).unit
    low = store.add(
        _unit("Retry the flaky geocoding API up to 3 times with backoff.", task_type="api_call", confidence=0.15)
    ).unit
    for _ in range(3):
        store.record_feedback([high.memory_id], success=True)
        store.record_feedback([low.memory_id], success=False)
    assert store.get(high.memory_id).confidence == pytest.approx(0.95)
    assert store.get(low.memory_id).confidence == pytest.approx(0.1)


def test_feedback_skips_unknown_ids_with_a_warning(store: MemoryStore, caplog: pytest.LogCaptureFixture) -> None:
    unit = store.add(_unit()).unit
    updated = store.record_feedback([unit.memory_id, "mem_gone"], success=True)
    assert [u.memory_id for u in updated] == [unit.memory_id]
    assert "mem_gone" in caplog.text


def test_metadata_updates_never_reembed(make_store: Callable[..., MemoryStore], embeddings: Embeddings) -> None:
    counting = CountingEmbeddings(embeddings)
    store = make_store(embeddings=counting)
    unit = store.add(_unit()).unit
    calls = len(counting.document_calls)
    store.record_feedback([unit.memory_id], success=True)
    store.update(unit.memory_id, tags=["csv", "bom"], confidence=0.9)
    assert len(counting.document_calls) == calls
    changed = store.update(unit.memory_id, content="Open Chinese CSV files with encoding='utf-8-sig'.")
    assert len(counting.document_calls) == calls + 1
    (hit, _, _), *_ = store.search("Chinese CSV utf-8-sig", k=1)
    assert hit.memory_id == unit.memory_id
    assert hit.content == changed.content


def test_list_filters_and_count(store: MemoryStore) -> None:
    store.add(_unit("Weekly report: summarise only the last 7 days of tickets.", task_type="weekly_report"))
    store.add(_unit("Monthly report: include the month-over-month revenue chart.", task_type="monthly_report"))
    store.add(_unit("User prefers Python over Java.", task_type="general", kind="fact", source="user_feedback"))
    assert store.count() == 3
    assert [u.task_type for u in store.list_units(task_type="周报")] == ["weekly_report"]
    assert [u.kind for u in store.list_units(kind="fact")] == ["fact"]
    assert len(store.list_units(source="agent_inference")) == 2
    assert len(store.list_units(limit=1)) == 1
    assert store.count(status="active") == 3
    assert store.count(status="superseded") == 0


def test_namespaces_are_separate(store: MemoryStore) -> None:
    alice = store.add(_unit(), namespace="alice").unit
    store.add(_unit("Retry the flaky geocoding API up to 3 times.", task_type="api_call"), namespace="bob@example.com")
    assert alice.namespace == "alice"
    assert store.namespaces() == ["alice", "bob@example.com"]
    assert store.count(namespace="alice") == 1
    with pytest.raises(MemoryNotFoundError):
        store.get(alice.memory_id, namespace="bob@example.com")
    assert store.search("CSV encoding", namespace="bob@example.com", k=5)[0][0].namespace == "bob@example.com"


def test_forget_by_id_and_by_namespace(store: MemoryStore) -> None:
    a = store.add(_unit()).unit
    b = store.add(_unit("Retry the flaky geocoding API up to 3 times.", task_type="api_call")).unit
    store.add(_unit(), namespace="other")
    assert store.forget(a.memory_id) == 1
    assert store.get_many([a.memory_id, b.memory_id]) == [store.get(b.memory_id)]
    assert store.lexical_search("CSV 乱码", k=5) == []
    with pytest.raises(ConfigurationError):
        store.forget()
    assert store.forget(namespace="other") == 1
    assert "other" not in store.namespaces()


def test_archive_and_restore(store: MemoryStore) -> None:
    unit = store.add(_unit()).unit
    (archived,) = store.archive([unit.memory_id])
    assert archived.status == "archived"
    assert store.search("CSV 编码 乱码", k=5) == []
    assert store.get(unit.memory_id).status == "archived"
    assert store.count() == 1
    (restored,) = store.restore([unit.memory_id])
    assert restored.status == "active"
    assert [u.memory_id for u, _, _ in store.search("CSV 编码 乱码", k=5)] == [unit.memory_id]


def test_failed_calls_alter_nothing(store: MemoryStore) -> None:
    unit = store.add(_unit()).unit
    before = store.get(unit.memory_id)
    with pytest.raises(InvalidMemoryError, match="confidence"):
        store.update(unit.memory_id, confidence=3)
    with pytest.raises(ConfigurationError, match="memory_id"):
        store.update(unit.memory_id, memory_id="mem_other")
    with pytest.raises(ConfigurationError, match="MemoryUnit"):
        store.add({"content": "not a unit"})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="MemoryUnit"):
        store.add_many([unit, "nope"])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="ids"):
        store.record_feedback([1, 2], success=True)  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="success"):
        store.record_feedback([unit.memory_id], success="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="k must"):
        store.search("x", k=0)
    with pytest.raises(ConfigurationError, match="namespace"):
        store.get(unit.memory_id, namespace=" padded ")
    assert store.get(unit.memory_id) == before
    assert store.count() == 1


def test_closed_store_refuses_use(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    store.close()
    store.close()  # idempotent
    with pytest.raises(StoreClosedError):
        store.add(_unit())


def test_second_store_on_one_directory_is_refused(
    make_chroma_store: Callable[..., MemoryStore], tmp_path: Path
) -> None:
    first = make_chroma_store("locked")
    with pytest.raises(StoreLockedError, match="chroma run"):
        MemoryStore(tmp_path / "locked", embeddings=LocalEmbeddings())
    first.close()
    again = make_chroma_store("locked")
    assert again.count() == 0


def test_second_process_is_refused_with_a_clear_error(
    make_chroma_store: Callable[..., MemoryStore], tmp_path: Path
) -> None:
    store = make_chroma_store("shared")
    store.add(_unit())
    script = textwrap.dedent(
        f"""
        from langchain_hindsight import MemoryStore, StoreLockedError
        from langchain_hindsight.embeddings.local import LocalEmbeddings
        try:
            MemoryStore({str(tmp_path / "shared")!r}, embeddings=LocalEmbeddings())
        except StoreLockedError as e:
            print("REFUSED:", e)
        else:
            print("OPENED")
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    assert "REFUSED:" in out.stdout
    assert "HttpClient" in out.stdout
    assert store.count() == 1


def test_backend_failures_surface_as_store_error(tmp_path: Path, embeddings: Embeddings) -> None:
    from tests.server import running_chroma_server

    with running_chroma_server(tmp_path / "server") as server:
        store = MemoryStore(client=server.client(), embeddings=embeddings)
        stored = store.add(_unit()).unit
        assert store.get(stored.memory_id).content == CSV_LESSON
        server.stop()  # the server goes away under a live store
        with pytest.raises(StoreError, match="add_many failed in the storage backend") as info:
            store.add(_unit("Retry the flaky geocoding API up to 3 times.", task_type="api_call"))
        assert info.value.__cause__ is not None
        with pytest.raises(StoreError):
            store.count()
        with pytest.raises(StoreError):
            store.record_feedback([stored.memory_id], success=True)
