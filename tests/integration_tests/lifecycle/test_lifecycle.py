"""Lifecycle: decay, archive, merge pass, periodic review, usage report — all with an injected clock.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/lifecycle/test_lifecycle.py``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from langchain_hindsight.errors import ReflectionError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.lifecycle.maintenance import Lifecycle
from langchain_hindsight.lifecycle.policy import LifecyclePolicy
from langchain_hindsight.recall.scoring import score_memory
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _unit_vector(seed: str, dim: int = 16) -> list[float]:
    raw = [b - 127.5 for b in hashlib.sha256(seed.encode()).digest()[:dim]]
    norm = math.sqrt(sum(x * x for x in raw))
    return [x / norm for x in raw]


def _blend(a: list[float], b: list[float], weight: float) -> list[float]:
    mixed = [x * (1 - weight) + y * weight for x, y in zip(a, b, strict=True)]
    norm = math.sqrt(sum(x * x for x in mixed))
    return [x / norm for x in mixed]


class ControlledEmbeddings(Embeddings):
    """Vectors chosen per text (unknown texts get a hash-seeded random unit vector)."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vectors.get(text) or _unit_vector(text)


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


# ----------------------------------------------------------------------------- decay
def test_decay_matches_the_seed_example_and_is_idempotent(store: MemoryStore) -> None:
    u = store.add(MemoryUnit(content="Six months idle", confidence=0.8, created_at=T0, last_accessed_at=T0)).unit
    lc = Lifecycle(store)
    six_months = T0 + timedelta(days=181)
    first = lc.decay(now=six_months)
    assert (first.decayed, first.periods) == (1, 6)
    after = store.get(u.memory_id)
    assert after.confidence == pytest.approx(0.8 * 0.9**6, abs=1e-6)
    assert round(after.score_confidence, 2) == 0.43  # seed §3.4
    assert after.decayed_through == T0 + timedelta(days=180)

    second = lc.decay(now=six_months)  # same day again: nothing more
    assert second.decayed == 0
    assert store.get(u.memory_id).confidence == after.confidence


def test_daily_decay_equals_one_decay_at_the_end(make_store: Callable[..., MemoryStore]) -> None:
    daily, once = make_store("daily"), make_store("once")
    for s in (daily, once):
        s.add(MemoryUnit(memory_id="m", content="idle memory", confidence=0.7, created_at=T0, last_accessed_at=T0))
    for day in range(1, 100):
        Lifecycle(daily).decay(now=T0 + timedelta(days=day))
    Lifecycle(once).decay(now=T0 + timedelta(days=99))
    assert daily.get("m").confidence == once.get("m").confidence == pytest.approx(0.7 * 0.9**3, abs=1e-6)


def test_access_restarts_the_idle_clock(store: MemoryStore) -> None:
    u = store.add(MemoryUnit(content="used again", confidence=0.7, created_at=T0, last_accessed_at=T0)).unit
    lc = Lifecycle(store)
    lc.decay(now=T0 + timedelta(days=31))  # one period: 0.63
    store.record_feedback([u.memory_id], success=True, now=T0 + timedelta(days=40))  # 0.68, accessed day 40
    assert lc.decay(now=T0 + timedelta(days=65)).decayed == 0  # only 25 idle days since the access
    lc.decay(now=T0 + timedelta(days=71))  # 31 idle days: one more period
    assert store.get(u.memory_id).confidence == pytest.approx(round(0.7 * 0.9 + 0.05, 6) * 0.9, abs=1e-6)


def test_decay_respects_its_floor_and_namespace(store: MemoryStore) -> None:
    store.add(
        MemoryUnit(memory_id="a", content="alice", confidence=0.5, created_at=T0, last_accessed_at=T0),
        namespace="alice",
    )
    store.add(MemoryUnit(memory_id="b", content="bob", confidence=0.5, created_at=T0, last_accessed_at=T0))
    Lifecycle(store, policy=LifecyclePolicy(decay_floor=0.4)).decay(now=T0 + timedelta(days=365), namespace="alice")
    assert store.get("a", namespace="alice").confidence == pytest.approx(0.4)
    assert store.get("b").confidence == pytest.approx(0.5)  # other namespace untouched


# ----------------------------------------------------------------------------- archive
def test_archive_moves_only_low_and_idle_units_and_restore_brings_them_back(store: MemoryStore) -> None:
    now = T0 + timedelta(days=100)
    stale = store.add(
        MemoryUnit(
            content="stale and doubtful csv trick",
            confidence=0.25,
            created_at=T0,
            last_accessed_at=now - timedelta(days=61),
        )
    ).unit
    recent = store.add(
        MemoryUnit(
            content="doubtful but recently used",
            confidence=0.25,
            created_at=T0,
            last_accessed_at=now - timedelta(days=59),
        )
    ).unit
    trusted = store.add(
        MemoryUnit(content="old but trusted weekly report format", confidence=0.35, created_at=T0, last_accessed_at=T0)
    ).unit
    report = Lifecycle(store).archive_stale(now=now)
    assert report.archived == [stale.memory_id]
    assert store.get(stale.memory_id).status == "archived"
    assert {u.memory_id for u, _, _ in store.search("doubtful csv trick", k=5)} == {recent.memory_id, trusted.memory_id}
    store.restore([stale.memory_id])
    assert store.get(stale.memory_id).status == "active"


def test_archive_thresholds_are_configurable(store: MemoryStore) -> None:
    u = store.add(MemoryUnit(content="a stale lesson", confidence=0.45, created_at=T0, last_accessed_at=T0)).unit
    policy = LifecyclePolicy(archive_below=0.5, archive_idle_days=10)
    assert Lifecycle(store, policy=policy).archive_stale(now=T0 + timedelta(days=11)).archived == [u.memory_id]


# ----------------------------------------------------------------------------- merge
A_TEXT = "Read GBK CSVs with encoding='gbk'."


B_TEXT = "read GBK CSVs with  encoding='gbk'"  # the same statement: case, whitespace, punctuation


C_TEXT = "Read GBK CSVs，with encoding=“gbk”。"  # the same statement with full-width punctuation


D_TEXT = "Weekly reports cover seven days."


E_TEXT = "READ GBK CSVs with encoding='gbk'."  # the same statement, another task type


F_TEXT = "Read GBK CSV files with encoding='gb18030'."  # ~0.99 similar, a different statement


def _merge_store(make_store: Callable[..., MemoryStore]) -> tuple[MemoryStore, dict[str, list[float]]]:
    base = _unit_vector("csv encoding")
    other = _unit_vector("something else")
    vectors = {
        A_TEXT: base,
        B_TEXT: _blend(base, other, 0.05),  # ~0.99 similar to A
        C_TEXT: _blend(base, other, 0.12),
        D_TEXT: _unit_vector("weekly"),
        E_TEXT: base,  # same vector, other task type
        F_TEXT: _blend(base, other, 0.02),
    }
    store = make_store(embeddings=ControlledEmbeddings(vectors))
    return store, vectors


def test_merge_folds_true_duplicates_into_the_most_confident(make_store: Callable[..., MemoryStore]) -> None:
    store, vectors = _merge_store(make_store)
    a, b, c, d, e, f = (
        MemoryUnit(
            memory_id="a",
            task_type="data_cleaning",
            content=A_TEXT,
            confidence=0.6,
            access_count=2,
            tags=["csv"],
            created_at=T0,
            last_accessed_at=T0,
        ),
        MemoryUnit(
            memory_id="b",
            task_type="data_cleaning",
            content=B_TEXT,
            confidence=0.8,
            access_count=3,
            tags=["gbk"],
            source="user_feedback",
            created_at=T0,
            last_accessed_at=T0 + timedelta(days=3),
        ),
        MemoryUnit(
            memory_id="c",
            task_type="data_cleaning",
            content=C_TEXT,
            confidence=0.5,
            access_count=1,
            created_at=T0 + timedelta(days=5),
            last_accessed_at=T0,
        ),
        MemoryUnit(memory_id="d", task_type="data_cleaning", content=D_TEXT),
        MemoryUnit(memory_id="e", task_type="monthly_report", content=E_TEXT),
        MemoryUnit(memory_id="f", task_type="data_cleaning", content=F_TEXT, confidence=0.9),
    )
    store.add_many([a, b, c, d, e, f], dedupe=False)  # bulk import: duplicates really stored
    sim_bc = _cos(vectors[b.content], vectors[c.content])
    sim_ab, sim_ac = _cos(vectors[a.content], vectors[b.content]), _cos(vectors[a.content], vectors[c.content])
    assert sim_ab >= 0.95
    assert sim_bc >= 0.95
    assert sim_ac >= 0.95
    assert _cos(vectors[F_TEXT], vectors[B_TEXT]) >= 0.99

    report = Lifecycle(store).merge_duplicates()
    assert report.merged == {"b": ["a", "c"]}
    assert report.removed == 2
    keeper = store.get("b")
    assert keeper.confidence == 0.8
    assert keeper.access_count == 6
    assert set(keeper.tags) == {"csv", "gbk"}
    assert keeper.merged_from == ["a", "c"]
    assert keeper.last_accessed_at == T0 + timedelta(days=3)
    assert keeper.created_at == T0 + timedelta(days=5)  # the newest time, for recency
    assert keeper.source == "user_feedback"
    assert keeper.evidence == 1  # a and c are less trusted than b: they corroborate nothing
    # The folded units are archived whole (not served), not deleted, so the fold can be undone (Lifecycle.unmerge).
    assert [u.status for u in store.get_many(["a", "c"])] == ["archived", "archived"]
    assert "folded and archived" in report.reasons["b"]
    # e: another task type; f: more confident and ~0.99 similar, but a different statement: never folded.
    assert {u.memory_id for u in store.list_units(status="active")} == {
        "b",
        "d",
        "e",
        "f",
    }  # the folded ones are archived
    assert store.get("f").content == F_TEXT
    assert Lifecycle(store).merge_duplicates().merged == {}  # nothing left to merge


def test_merge_never_folds_different_chinese_statements(make_store: Callable[..., MemoryStore]) -> None:
    base = _unit_vector("客户")
    texts = ["客户甲公司希望通过邮件联系。", "客户乙公司希望通过电话联系。", "客户甲公司每月订购300箱。"]
    # Every pair at cosine 1.0, as a Chinese-blind embedder gives them.
    store = make_store(embeddings=ControlledEmbeddings(dict.fromkeys([*texts, "客户甲公司希望通过邮件联系"], base)))
    store.add_many([MemoryUnit(memory_id=f"u{i}", content=t) for i, t in enumerate(texts)], dedupe=False)
    store.add(MemoryUnit(memory_id="dup", content="客户甲公司希望通过邮件联系"), dedupe=False)
    report = Lifecycle(store).merge_duplicates()
    assert report.merged == {"u0": ["dup"]}  # only the true duplicate (no final 。) folds, into the older unit
    assert sorted(u.content for u in store.list_units(status="active")) == sorted(texts)


def test_merge_does_not_chain_through_intermediaries(make_store: Callable[..., MemoryStore]) -> None:
    e1 = _unit_vector("x")
    raw = _unit_vector("y")
    e2 = [y - _cos(raw, e1) * x for x, y in zip(e1, raw, strict=True)]
    e2 = [v / math.sqrt(_cos(e2, e2)) for v in e2]  # orthonormal to e1

    def at(degrees: float) -> list[float]:
        a = math.radians(degrees)
        return [math.cos(a) * x + math.sin(a) * y for x, y in zip(e1, e2, strict=True)]

    p, mid, q = at(15), at(0), at(-15)  # p~mid and q~mid (cos 15° = 0.966), but p !~ q (cos 30° = 0.866)
    vectors = {"Use GBK.": p, "use gbk": mid, "USE  GBK!": q}  # one statement, three spellings
    assert _cos(p, mid) >= 0.95
    assert _cos(q, mid) >= 0.95
    assert _cos(p, q) < 0.95
    store = make_store(embeddings=ControlledEmbeddings(vectors))
    store.add_many(
        [
            MemoryUnit(memory_id=i, content=t, confidence=c)
            for i, t, c in (("p", "Use GBK.", 0.9), ("m", "use gbk", 0.5), ("q", "USE  GBK!", 0.8))
        ],
        dedupe=False,
    )
    report = Lifecycle(store).merge_duplicates()
    # p (most confident) absorbs m; q is not similar enough to p, so it stays.
    assert report.merged == {"p": ["m"]}
    assert {u.memory_id for u in store.list_units(status="active")} == {"p", "q"}


def test_interrupted_merge_does_not_count_accesses_twice(make_store: Callable[..., MemoryStore]) -> None:
    store, _ = _merge_store(make_store)
    keeper = MemoryUnit(
        memory_id="k", task_type="data_cleaning", content=A_TEXT, confidence=0.9, access_count=5, merged_from=["z"]
    )  # already folded z, whose delete never happened
    leftover = MemoryUnit(memory_id="z", task_type="data_cleaning", content=B_TEXT, confidence=0.4, access_count=2)
    store.add_many([keeper, leftover], dedupe=False)
    Lifecycle(store).merge_duplicates()
    assert store.get("k").access_count == 5
    assert store.get("k").evidence == 1  # nor its evidence
    assert store.get("z").status == "archived"  # archived, not deleted: the fold stays undoable


# ----------------------------------------------------------------------------- review
def _journal_runs(store: MemoryStore, journal: RunJournal, *, n: int, tagged: int, failures: int = 0) -> None:
    tagged_unit = store.add(
        MemoryUnit(
            task_type="data_cleaning",
            content="Fill missing values with the median.",
            tags=["missing-values"],
            created_at=T0,
            last_accessed_at=T0,
        )
    ).unit
    plain = store.add(
        MemoryUnit(
            task_type="data_cleaning", content="Drop duplicated rows by order id.", created_at=T0, last_accessed_at=T0
        )
    ).unit
    for i in range(n):
        unit = tagged_unit if i < tagged else plain
        served = [score_memory(unit, 0.8, task_type="data_cleaning", now=T0)]
        run = f"run-{i}"
        journal.start(
            run,
            task=f"清洗第{i}批销售数据",
            task_type="data_cleaning",
            served=served,
            now=T0 + timedelta(days=1, hours=i),
        )
        journal.finish(run, outcome="failure" if i < failures else "success", now=T0 + timedelta(days=1, hours=i))


def test_rule_review_finds_the_seed_pattern_once(store: MemoryStore) -> None:
    journal = RunJournal(store)
    _journal_runs(store, journal, n=5, tagged=4)
    lc = Lifecycle(store, journal=journal)
    now = T0 + timedelta(days=3)
    report = lc.review(window_days=7, now=now)
    assert report.runs == 5
    assert not report.used_model
    [unit] = report.created
    assert unit.source == "review"
    assert unit.task_type == "data_cleaning"
    assert "最近5个data_cleaning任务中有4个都涉及“missing-values”" in unit.content
    assert journal.get(report.review_id or "", namespace=store.namespace).produced == [unit.memory_id]
    again = lc.review(window_days=7, now=now)
    assert again.created == []  # the same pattern is never stored twice
    assert len(store.list_units(source="review")) == 1


def test_rule_review_reports_failing_task_types_in_english(store: MemoryStore) -> None:
    journal = RunJournal(store)
    _journal_runs(store, journal, n=4, tagged=0, failures=3)
    report = Lifecycle(store, journal=journal, locale="en").review(now=T0 + timedelta(days=2))
    assert [u.content for u in report.created] == [
        "3 of the last 4 data_cleaning tasks failed: check the recorded experience first and add error handling "
        "to the key steps."
    ]


def test_review_skips_with_too_few_runs_and_when_not_due(store: MemoryStore) -> None:
    journal = RunJournal(store)
    lc = Lifecycle(store, journal=journal)
    assert lc.review(now=T0).skipped == "too few runs"
    _journal_runs(store, journal, n=5, tagged=5)
    first = lc.review_if_due(every_days=7, now=T0 + timedelta(days=2))
    assert first.skipped is None
    assert first.created
    assert lc.review_if_due(every_days=7, now=T0 + timedelta(days=5)).skipped == "not due"
    assert lc.review_if_due(every_days=7, now=T0 + timedelta(days=9)).skipped == "too few runs"  # window moved on


class CountingModel(GenericFakeChatModel):
    calls: int = 0

    def _generate(self, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        self.calls += 1
        return super()._generate(*args, **kwargs)  # type: ignore[arg-type]


def test_model_review_makes_one_call_and_stores_capped_units(store: MemoryStore) -> None:
    journal = RunJournal(store)
    _journal_runs(store, journal, n=6, tagged=3)
    answer = (
        '好的：```json\n{"experiences": [{"task_type": "清洗数据", "content": "近期的数据清洗任务都涉及缺失值，'
        '先统计每列缺失比例再决定填充方式。", "confidence": 0.9, "tags": ["missing-values"]}]}\n```'
    )
    model = CountingModel(messages=iter([AIMessage(content=answer)]))
    report = Lifecycle(store, journal=journal, model=model).review(now=T0 + timedelta(days=2))
    assert model.calls == 1
    assert report.used_model
    [unit] = report.created
    assert unit.task_type == "data_cleaning"
    assert unit.source == "review"
    assert unit.confidence == 0.75  # capped: a review is an inference over inferences


def test_model_review_keeps_the_complete_items_of_a_cut_off_answer(store: MemoryStore) -> None:
    """The review reads model JSON with the same salvager as reflection: a truncated list keeps its whole items."""
    journal = RunJournal(store)
    _journal_runs(store, journal, n=4, tagged=4)
    answer = (
        '[{"task_type": "data_cleaning", "content": "Profile missing values per column before choosing a fill."}, '
        '{"task_type": "data_cleaning", "content": "先统计每列缺失比例再决定填充方式'  # cut off at the token limit
    )
    model = GenericFakeChatModel(messages=iter([AIMessage(content=answer)]))
    report = Lifecycle(store, journal=journal, model=model).review(now=T0 + timedelta(days=2))
    assert [u.content for u in report.created] == ["Profile missing values per column before choosing a fill."]


def test_model_review_with_a_bad_answer_raises(store: MemoryStore) -> None:
    journal = RunJournal(store)
    _journal_runs(store, journal, n=3, tagged=3)
    model = GenericFakeChatModel(messages=iter([AIMessage(content="I found nothing of note.")]))
    with pytest.raises(ReflectionError, match="JSON"):
        Lifecycle(store, journal=journal, model=model).review(now=T0 + timedelta(days=2))


# ----------------------------------------------------------------------------- maintain + usage report
def test_maintain_runs_decay_archive_and_merge_in_order(make_store: Callable[..., MemoryStore]) -> None:
    store, _ = _merge_store(make_store)
    store.add_many(
        [
            MemoryUnit(memory_id="old", content="forgotten lore", confidence=0.32, created_at=T0, last_accessed_at=T0),
            MemoryUnit(memory_id="d1", task_type="data_cleaning", content=A_TEXT, confidence=0.9),
            MemoryUnit(memory_id="d2", task_type="data_cleaning", content=B_TEXT, confidence=0.7),
        ],
        dedupe=False,
    )
    now = T0 + timedelta(days=70)  # "old": two periods → 0.26 < 0.3, idle 70 days → archived
    report = Lifecycle(store).maintain(now=now)
    assert report.decay.decayed >= 1
    assert report.archive.archived == ["old"]
    assert report.merge.merged == {"d1": ["d2"]}
    again = Lifecycle(store).maintain(now=now)
    assert (again.decay.decayed, again.archive.archived, again.merge.removed) == (0, [], 0)


def test_usage_report_finds_memories_that_never_help(store: MemoryStore) -> None:
    journal = RunJournal(store)
    useless = store.add(MemoryUnit(task_type="weekly_report", content="Monthly report: cover the whole month.")).unit
    useful = store.add(MemoryUnit(task_type="weekly_report", content="Weekly report: Monday to Sunday only.")).unit
    old = store.add(MemoryUnit(task_type="general", content="The user prefers Java.", kind="fact")).unit
    new = store.add(
        MemoryUnit(task_type="general", content="The user prefers Python.", kind="fact", supersedes=old.memory_id),
        dedupe=False,
    ).unit
    for i in range(4):
        served = [score_memory(useless, 0.45, now=T0), score_memory(useful, 0.9, now=T0)]
        journal.start(f"w{i}", task="写周报", task_type="weekly_report", served=served, now=T0 + timedelta(hours=i))
        journal.finish(f"w{i}", outcome="failure" if i == 0 else "unknown", now=T0 + timedelta(hours=i))
    journal.start(
        "w-ok",
        task="写周报",
        task_type="weekly_report",
        served=[score_memory(useful, 0.9, now=T0)],
        now=T0 + timedelta(hours=5),
    )
    journal.finish("w-ok", outcome="success")

    report = Lifecycle(store, journal=journal).usage_report(now=T0 + timedelta(days=1))
    assert report.runs == 5
    assert [m.memory_id for m in report.never_successful] == [useless.memory_id]
    assert {r.memory_id for r in report.low_similarity} == {useless.memory_id}
    assert [new.memory_id, old.memory_id] in report.supersede_chains
    weekly = next(t for t in report.task_types if t.task_type == "weekly_report")
    assert (weekly.runs, weekly.successes, weekly.failures, weekly.memories) == (5, 1, 1, 2)
    df = report.to_dataframe("memories")
    assert list(df["memory_id"]) == [useful.memory_id, useless.memory_id]
    assert int(df.loc[df["memory_id"] == useful.memory_id, "shown"].iloc[0]) == 5


def test_usage_report_counts_a_run_by_the_users_verdict(store: MemoryStore) -> None:
    """A run the agent finished as a success and the user rejected is a failure for the review, and back on undo."""
    journal = RunJournal(store)
    rolling = store.add(MemoryUnit(task_type="weekly_report", content="周报的数据范围取最近7天滚动窗口。")).unit
    for i in range(3):
        journal.start(f"r{i}", task=f"生成第{i + 1}周的销售周报", task_type="weekly_report",
                      served=[score_memory(rolling, 0.8, now=T0)], now=T0 + timedelta(hours=i))  # fmt: skip
        journal.finish(f"r{i}", outcome="success", now=T0 + timedelta(hours=i))
        journal.add_feedback(f"r{i}", success=False, rejected=True, text="不对", now=T0 + timedelta(hours=i, minutes=5))
    journal.start("u", task="生成月报", task_type="weekly_report", served=[], now=T0 + timedelta(hours=4))
    journal.finish("u", outcome="unknown", now=T0 + timedelta(hours=4))
    journal.add_feedback("u", success=True, now=T0 + timedelta(hours=4, minutes=5))

    report = Lifecycle(store, journal=journal).usage_report(now=T0 + timedelta(days=1))
    (usage,) = report.memories
    assert (usage.shown, usage.successes, usage.failures) == (3, 0, 3)
    assert [m.memory_id for m in report.never_successful] == [rolling.memory_id]
    weekly = next(t for t in report.task_types if t.task_type == "weekly_report")
    assert (weekly.runs, weekly.successes, weekly.failures) == (4, 1, 3)

    # An undone verdict no longer counts: the run is judged by how it ended again.
    journal.add_undo("r0", 0, effects=[], credit=None, now=T0 + timedelta(hours=6))
    (usage,) = Lifecycle(store, journal=journal).usage_report(now=T0 + timedelta(days=1)).memories
    assert (usage.successes, usage.failures) == (1, 2)


# ----------------------------------------------------------------------------- README section
@pytest.mark.integration
def test_lifecycle_readme_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "lifecycle.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    assert len(blocks) == 5
    for block in blocks:
        exec(compile(block, "docs/lifecycle.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "1 0.43"
    assert out[1] == "True"
    # the merge section: five per-file lessons folded into one, then unmerged
    assert out[2] == "4 5"
    assert out[3] == "使用read_csv时，默认参数会失败，改为encoding='gbk'后成功（任务：统计 *.csv 的销售额）。"
    assert out[4] == "4 1"
    assert out[5] == "1 similarity active"
    assert out[6].startswith("[('similarity', 0.415)")
    assert out[7].startswith("最近5个data_cleaning任务中有5个都涉及“missing-values”")
    assert out[8] == "0 [] []"
