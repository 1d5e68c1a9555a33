"""The recall engine: the retriever's computation without the LangChain retriever stack, shared by every caller."""

from __future__ import annotations

import ast
import logging
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from langchain_hindsight import ConfigurationError, HindsightRetriever, MemoryStore, MemoryUnit, ScoringWeights
from langchain_hindsight.recall import FusionWeights
from langchain_hindsight.recall.engine import RecallResult, RecallSettings, recall, resolve_task
from langchain_hindsight.taxonomy import TaskTypeVocabulary
from langchain_hindsight.types import ScoredMemory

NOW = datetime(2026, 11, 1, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "langchain_hindsight"


OWN_LESSONS = [
    ("data_cleaning", 0.9, "用pandas读取含中文的CSV时要指定encoding='utf-8-sig'，否则表头会乱码。"),
    ("data_cleaning", 0.5, "清洗销售数据前先去掉重复的订单号，再按日期排序。"),
    ("file_operation", 0.7, "Windows打包的zip文件名是GBK编码，解压时要用gbk解码。"),
    ("api_call", 0.8, "Retry HTTP 429 responses with exponential backoff, at most five times."),
    ("data_cleaning", 0.6, "The CRM export uses semicolons: read the CSV with sep=';' and decimal=','."),
]
TEAM_LESSONS = [
    ("data_cleaning", 0.7, "团队约定：CSV导出统一用UTF-8编码，读取前先检查BOM。"),
    ("api_call", 0.6, "Slack chat.postMessage needs the channel ID, not the channel name."),
]


@pytest.fixture
def two_namespaces(make_fake_store: Callable[..., MemoryStore]) -> MemoryStore:
    store = make_fake_store()
    for namespace, lessons in (("default", OWN_LESSONS), ("team", TEAM_LESSONS)):
        store.add_many(
            [
                MemoryUnit(task_type=t, confidence=c, content=text, created_at=NOW, last_accessed_at=NOW)
                for t, c, text in lessons
            ],
            namespace=namespace,
            dedupe=False,
        )
    return store


def _rows(memories: Sequence[ScoredMemory]) -> list[tuple[object, ...]]:
    return [
        (m.memory.memory_id, m.memory.namespace, m.score, m.similarity, dict(m.breakdown), m.query_task_type)
        for m in memories
    ]


# ---------------------------------------------------------------- one implementation
@pytest.mark.parametrize("query", ["读取CSV 编码", "read the CSV export", "重复订单 清洗数据"])
def test_the_retriever_is_the_engine_with_its_fields_as_settings(two_namespaces: MemoryStore, query: str) -> None:
    retriever = HindsightRetriever(
        store=two_namespaces,
        k=3,
        task_type="data_cleaning",
        extra_namespaces=("team",),
        weights=ScoringWeights(task_type=0.4),
        min_score=0.05,
        min_relevance=0.05,
        fusion="convex",
        fusion_alpha=0.6,
        candidate_multiplier=2,
    )
    settings = RecallSettings(
        k=3,
        task_type="data_cleaning",
        extra_namespaces=("team",),
        weights=ScoringWeights(task_type=0.4),
        min_score=0.05,
        min_relevance=0.05,
        fusion="convex",
        fusion_weights=FusionWeights(alpha=0.6),
        explicit_fusion=frozenset({"fusion_alpha"}),
        candidate_multiplier=2,
    )
    expected = retriever.recall_result(query, now=NOW)
    got = recall(two_namespaces, settings, query, now=NOW).result
    assert expected.memories  # something to compare
    assert _rows(got.memories) == _rows(expected.memories)
    assert (
        (got.task_type, got.task_type_source)
        == (expected.task_type, expected.task_type_source)
        == (
            "data_cleaning",
            "fixed",
        )
    )
    # the options matter: the defaults rank differently, so a field the retriever failed to pass would show
    assert _rows(recall(two_namespaces, RecallSettings(), query, now=NOW).result.memories) != _rows(expected.memories)


def test_the_result_type_is_the_one_the_retriever_exports(two_namespaces: MemoryStore) -> None:
    result = recall(two_namespaces, RecallSettings(), "读取CSV", now=NOW).result
    assert isinstance(result, RecallResult)


def test_an_extra_namespace_adds_its_candidates_and_the_searched_one_wins_ties(two_namespaces: MemoryStore) -> None:
    def run(*extra: str) -> list[tuple[object, ...]]:
        settings = RecallSettings(k=10, min_relevance=None, extra_namespaces=extra)
        return _rows(recall(two_namespaces, settings, "CSV 编码 UTF-8", now=NOW).result.memories)

    assert {row[1] for row in run()} == {"default"}
    assert {row[1] for row in run("team")} == {"default", "team"}
    assert run("team", "default", "team") == run("team")  # the searched namespace and repeats add nothing


# ---------------------------------------------------------------- the engine's own contract
class _Counting:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def embed_query(self, text: str) -> list[float]:
        self.calls.append(text)
        return [1.0, 0.0]


class _Source:
    """The smallest recall source: the protocol, no store (one candidate, found by both arms)."""

    def __init__(self) -> None:
        self.embeddings = _Counting()
        self.vocabulary = TaskTypeVocabulary()
        self.unit = MemoryUnit(task_type="weekly_report", content="周报的数据范围取上周一到周日。", created_at=NOW)

    def namespace_or_default(self, namespace: str | None) -> str:
        return namespace or "default"

    def hybrid_search(
        self, query: str, vector: Sequence[float], *, k: int = 10, namespace: str | None = None, normalize: bool = False
    ) -> tuple[dict[str, tuple[MemoryUnit, float]], dict[str, float]]:
        return {self.unit.memory_id: (self.unit, 0.9)}, {self.unit.memory_id: 0.8}


def test_any_source_with_the_recall_surface_will_do() -> None:
    source = _Source()
    recalled = recall(source, RecallSettings(), "生成本周的销售周报\ud800", now=NOW)
    assert source.embeddings.calls == ["生成本周的销售周报?"]  # cleaned (no lone surrogate), embedded once
    assert [m.memory.memory_id for m in recalled.result.memories] == [source.unit.memory_id]
    assert (recalled.result.task_type, recalled.result.task_type_source) == ("weekly_report", "inferred")
    assert (recalled.query, recalled.namespace, recalled.at, recalled.searched) == (
        "生成本周的销售周报?",
        "default",
        NOW,
        True,
    )


def test_a_blank_query_searches_nothing_but_still_resolves_the_task_type() -> None:
    source = _Source()
    recalled = recall(source, RecallSettings(task_type="weekly_report"), "   ", now=NOW)
    assert recalled.searched is False
    assert source.embeddings.calls == []
    assert recalled.result == RecallResult([], "weekly_report", "fixed")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0}, "k must be a positive int, got 0"),
        ({"k": True}, "k must be a positive int, got True"),
        ({"now": datetime(2026, 1, 1)}, "now must be timezone-aware"),
    ],
)
def test_bad_arguments_are_configuration_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        recall(_Source(), RecallSettings(), "写周报", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="query must be a string, got int"):
        recall(_Source(), RecallSettings(), 42)  # type: ignore[arg-type]


def _failing(text: str, labels: Sequence[str]) -> str | None:
    raise TimeoutError("model down")


def test_a_failing_classifier_calls_the_hook_inside_the_except_block() -> None:
    seen: list[BaseException | None] = []
    got = resolve_task(
        _Source(),
        RecallSettings(classifier=_failing),
        "写一首关于秋天的诗",
        on_classifier_error=lambda: seen.append(sys.exc_info()[1]),
    )
    assert got == ("general", "inferred")  # the rules' answer stands
    assert len(seen) == 1
    assert isinstance(seen[0], TimeoutError)


def test_without_a_hook_a_failing_classifier_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="langchain_hindsight.recall.engine"):
        recalled = recall(_Source(), RecallSettings(classifier=_failing), "tell me a joke", now=NOW)
    assert recalled.result.task_type == "general"
    assert [r.levelno for r in caplog.records if "classifier failed" in r.getMessage()] == [logging.WARNING]


def test_a_classifier_answer_counts_only_as_a_label_of_the_vocabulary() -> None:
    def answers(text: str, labels: Sequence[str]) -> str | None:
        return "类型：monthly_report" if "汇报" in text else "poetry"

    settings = RecallSettings(classifier=answers)
    assert resolve_task(_Source(), settings, "把上一阶段的经营情况整理成汇报") == ("monthly_report", "model")
    assert resolve_task(_Source(), settings, "write me a poem") == ("general", "inferred")
    assert resolve_task(_Source(), settings, "write me a poem", "Weekly_Report") == ("weekly_report", "fixed")


# ---------------------------------------------------------------- what importing it costs
def _module_imports(module: str) -> set[str]:
    """The modules ``module`` imports when it is imported: module-level statements, ``TYPE_CHECKING`` excluded."""
    path = PACKAGE.joinpath(*module.split(".")[1:])
    source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
            elif isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(node.orelse)
                for handler in getattr(node, "handlers", ()):
                    visit(handler.body)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)

    visit(ast.parse(source.read_text(encoding="utf-8")).body)
    return found


def _closure(module: str) -> set[str]:
    """Every module ``module`` imports, following our own modules (and their packages) transitively."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for imported in _module_imports(name):
            parts = imported.split(".")
            for i in range(1, len(parts) + 1):
                prefix = ".".join(parts[:i])
                path = PACKAGE.joinpath(*parts[1:i])
                if parts[0] == "langchain_hindsight" and (path.with_suffix(".py").exists() or path.is_dir()):
                    todo.append(prefix)
                else:
                    seen.add(prefix)
    return seen


def test_the_engine_imports_neither_the_retriever_nor_the_chat_model_stack() -> None:
    imported = _closure("langchain_hindsight.recall.engine")
    banned = (
        "langchain_core.retrievers",
        "langchain_core.language_models",
        "chromadb",
        "langchain_hindsight.recall.retriever",
        "langchain_hindsight.store.memory_store",
        "langchain_hindsight._safety",  # nor compiles the poisoning defences' patterns
    )
    assert sorted(m for m in imported if m.startswith(banned)) == []
    assert "langchain_hindsight.recall.engine" in imported  # the walk does follow our imports


def test_the_engine_does_not_import_the_store() -> None:
    assert not any(m.startswith("langchain_hindsight.store") for m in _closure("langchain_hindsight.recall.engine"))
