"""One construction path: one sentinel, one settings object, ``min_relevance`` in three hops.

``Hindsight(min_relevance=x)`` builds exactly one :class:`RecallSettings` (hop 1); the retriever holds
that very object (hop 2); the recall engine hands its ``min_relevance`` to the ranking (hop 3).
No module marks "not given" with the string ``"default"``: the marker is :data:`UNSET`.
"""

from __future__ import annotations

import ast
import asyncio
import copy
import dataclasses
import importlib
import inspect
import pickle
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import langchain_hindsight
from langchain_hindsight import Hindsight, HindsightRetriever, MemoryStore, MemoryUnit
from langchain_hindsight._checks import check_int, check_number
from langchain_hindsight._unset import UNSET, Unset
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.lifecycle.policy import LifecyclePolicy
from langchain_hindsight.prompts import PromptTemplates, ReviewTemplates
from langchain_hindsight.recall import engine, retriever
from langchain_hindsight.recall.engine import RecallSettings
from langchain_hindsight.recall.explain import explain_run
from langchain_hindsight.recall.scoring import TERMS
from langchain_hindsight.session.config import SessionConfig
from langchain_hindsight.types import Trajectory
from langchain_hindsight.writes import MERGE_THRESHOLD
from tests.fakes import NgramEmbeddings, closing_factory

LESSON = "周报的数据范围取上周一到周日的自然周，不要用本月一号到今天。"
TASK = "生成本周的销售周报"


@pytest.fixture
def hs_factory(tmp_path: Path, fake_embeddings: NgramEmbeddings) -> Iterator[Any]:
    yield from closing_factory(
        lambda i, **options: Hindsight(tmp_path / f"db{i}", embeddings=fake_embeddings, **options)
    )


# ---------------------------------------------------------------------------- min_relevance: three hops
def test_min_relevance_goes_hindsight_settings_retriever_ranking(
    hs_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[RecallSettings] = []
    original_post_init = RecallSettings.__post_init__

    def counting(self: RecallSettings) -> None:
        original_post_init(self)
        built.append(self)

    monkeypatch.setattr(RecallSettings, "__post_init__", counting)
    hs = hs_factory(min_relevance=0.42, task_type="weekly_report")
    # hop 1: exactly one settings object is built, carrying the value
    assert len(built) == 1
    (settings,) = built
    assert settings.min_relevance == pytest.approx(0.42)
    # hop 2: the retriever holds that very object; the session keeps no copy of the floor
    assert hs.retriever.settings is settings
    assert hs.session.retriever is hs.retriever
    assert isinstance(hs.config.min_relevance, Unset)
    assert "min_relevance" not in type(hs.retriever).model_fields  # one settings field, not loose ones

    # hop 3: the engine receives the same object and passes its floor to the ranking
    seen: dict[str, Any] = {}
    real_recall, real_rank = engine.recall, engine.__dict__["rank_candidates"]

    def spy_recall(source: Any, settings_arg: RecallSettings, *args: Any, **kwargs: Any) -> Any:
        seen["settings"] = settings_arg
        return real_recall(source, settings_arg, *args, **kwargs)

    def spy_rank(*args: Any, **kwargs: Any) -> Any:
        seen["floor"] = kwargs["min_relevance"]
        return real_rank(*args, **kwargs)

    monkeypatch.setattr(retriever, "engine_recall", spy_recall)
    monkeypatch.setattr(engine, "rank_candidates", spy_rank)
    hs.store.add(MemoryUnit(task_type="weekly_report", content=LESSON))
    hs.recall(TASK)
    assert seen["settings"] is settings
    assert seen["floor"] == pytest.approx(0.42)


def test_min_relevance_is_honoured_by_recall(hs_factory: Any) -> None:
    open_floor = hs_factory(min_relevance=None, task_type="weekly_report")
    open_floor.store.add(MemoryUnit(task_type="weekly_report", content=LESSON))
    found = open_floor.recall(TASK)
    assert [m.memory.content for m in found] == [LESSON]
    best = found[0].similarity
    assert best < 1.0
    strict = hs_factory(min_relevance=min(1.0, best + 0.01), task_type="weekly_report")
    strict.store.add(MemoryUnit(task_type="weekly_report", content=LESSON))
    assert strict.recall(TASK) == []  # the same memory, now below the floor the caller asked for


def test_min_relevance_from_the_environment_takes_the_same_route(
    hs_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HINDSIGHT_MIN_RELEVANCE", "0.3")
    hs = hs_factory()
    assert hs.retriever.settings.min_relevance == pytest.approx(0.3)
    assert hs_factory(min_relevance="auto").retriever.settings.min_relevance == "auto"  # an argument wins


def test_defaults_come_from_their_owner(hs_factory: Any) -> None:
    hs = hs_factory()
    assert hs.retriever.settings == RecallSettings()  # nothing given: recall's own defaults
    assert hs.k == SessionConfig.default("k") == RecallSettings().k
    assert hs.config.locale == SessionConfig.default("locale")  # None: the frame follows the memories
    assert hs.store.namespace == inspect.signature(MemoryStore).parameters["namespace"].default


def test_the_old_default_string_is_refused(fake_store: MemoryStore) -> None:
    with pytest.raises(ConfigurationError, match="min_relevance"):
        SessionConfig(store=fake_store, min_relevance="default")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- the retriever's one settings object
def test_retriever_packs_its_keyword_options_into_one_settings_object(fake_store: MemoryStore) -> None:
    r = HindsightRetriever(store=fake_store, k=3, min_relevance=0.2, fusion_alpha=0.6, extra_namespaces=["b"])
    assert r.settings.k == 3
    assert r.k == 3
    assert r.settings.min_relevance == pytest.approx(0.2)
    assert r.settings.fusion_weights.alpha == pytest.approx(0.6)
    assert r.settings.explicit_fusion == {"fusion_alpha"}
    assert r.settings.extra_namespaces == ("b",)
    given = RecallSettings(k=7)
    assert HindsightRetriever(store=fake_store, settings=given).settings is given
    assert HindsightRetriever(store=fake_store, settings=given, k=2).settings.k == 2  # an option on top


def test_assigning_an_option_replaces_the_settings_checked(fake_store: MemoryStore) -> None:
    r = HindsightRetriever(store=fake_store)
    before = r.settings
    r.k = 4
    assert r.settings is not before
    assert r.settings.k == 4
    with pytest.raises(ConfigurationError, match="k must be a positive int"):
        r.k = 0
    with pytest.raises(ConfigurationError, match="min_relevance"):
        r.min_relevance = 1.5
    assert r.settings.k == 4  # a refused change changes nothing
    assert r.settings.min_relevance == "auto"


@pytest.mark.parametrize(
    "options",
    [
        {"k": 0},
        {"k": True},
        {"candidate_multiplier": 0},
        {"min_relevance": "default"},
        {"min_relevance": 2.0},
        {"fusion": "max"},
        {"fusion_alpha": 1.5},
    ],
)
def test_bad_recall_options_are_typed_errors(fake_store: MemoryStore, options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        HindsightRetriever(store=fake_store, **options)


# ---------------------------------------------------------------------------- the sentinel
def _default_sentinels(source: str) -> list[int]:
    """Lines where the string ``"default"`` marks "not given": compared against, or a ``Literal`` member."""

    def is_default(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant) and node.value == "default":
            return True
        return isinstance(node, ast.Tuple | ast.List | ast.Set) and any(is_default(e) for e in node.elts)

    lines = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Compare) and any(is_default(n) for n in [node.left, *node.comparators])) or (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name | ast.Attribute)
            and (node.value.id if isinstance(node.value, ast.Name) else node.value.attr) == "Literal"
            and is_default(node.slice)
        ):
            lines.append(node.lineno)
    return lines


def test_the_detector_finds_a_string_sentinel() -> None:
    assert _default_sentinels('x: Literal["default", "auto"] = "default"\nif x == "default":\n    pass\n') == [1, 2]
    assert _default_sentinels('if ns not in ("default", own):\n    pass\n') == [1]
    assert _default_sentinels('namespace: str = "default"\n') == []  # a value, not a marker


def test_no_module_uses_the_string_default_as_a_sentinel() -> None:
    package = Path(langchain_hindsight.__file__).parent
    found = {
        str(path.relative_to(package)): lines
        for path in sorted(package.rglob("*.py"))
        if (lines := _default_sentinels(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_unset_is_one_falsy_object_that_survives_copies() -> None:
    assert not UNSET
    assert repr(UNSET) == "UNSET"
    assert copy.copy(UNSET) is UNSET
    assert copy.deepcopy(UNSET) is UNSET
    assert pickle.loads(pickle.dumps(UNSET)) is UNSET


# ---------------------------------------------------------------------------- the one validator helper
@pytest.mark.parametrize(
    ("value", "low", "high", "message"),
    [
        (True, 1, None, "n must be a positive int, got True"),
        (0, 1, None, "n must be a positive int, got 0"),
        (1.0, 1, None, "n must be a positive int, got 1.0"),
        (-1, 0, None, "n must be an int >= 0, got -1"),
        (11, 1, 10, "n must be an int from 1 to 10, got 11"),
    ],
)
def test_check_int_refuses_with_a_typed_error(value: object, low: int, high: int | None, message: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        check_int("n", value, low, high)
    assert str(caught.value) == message


def test_check_int_and_check_number_accept() -> None:
    assert check_int("n", 3) == 3
    assert check_int("n", 10, 1, 10) == 10
    assert check_number("x", 1, 0.0, 1.0) == 1.0
    with pytest.raises(ConfigurationError):
        check_number("x", float("nan"))
    with pytest.raises(ConfigurationError):
        check_number("x", 0.0, 0.0, 1.0, open_low=True)


# ---------------------------------------------------------------------------- carry-overs
def _fields_read(cls: type) -> dict[str, int]:
    """How many times the package's source reads each dataclass field as ``.name``."""
    package = Path(langchain_hindsight.__file__).parent
    source = "\n".join(p.read_text(encoding="utf-8") for p in package.rglob("*.py"))
    return {f.name: len(re.findall(rf"\.{f.name}\b", source)) for f in dataclasses.fields(cls)}


def test_every_template_field_is_read_somewhere() -> None:
    """A template nobody renders is dead text a translator keeps up to date for nothing (``review_prompt`` was)."""
    for cls in (PromptTemplates, ReviewTemplates):
        unread = [name for name, n in _fields_read(cls).items() if n == 0]
        assert unread == [], cls.__name__
    assert "review_prompt" not in {f.name for f in dataclasses.fields(PromptTemplates)}


def test_one_merge_threshold_with_one_owner() -> None:
    store_default = inspect.signature(MemoryStore).parameters["merge_threshold"].default
    assert store_default is MERGE_THRESHOLD
    assert LifecyclePolicy().merge_threshold is MERGE_THRESHOLD
    assert pytest.approx(0.95) == MERGE_THRESHOLD  # the value both paths had: golden outputs unchanged


def test_delete_is_a_deprecated_alias_of_forget(fake_store: MemoryStore) -> None:
    kept = fake_store.add(MemoryUnit(task_type="weekly_report", content=LESSON)).unit
    gone = fake_store.add(MemoryUnit(task_type="data_cleaning", content="读取含中文的CSV时指定encoding='utf-8-sig'。"))
    with warnings.catch_warnings(record=True) as caught:  # pytest.warns would re-emit chromadb's own warnings
        warnings.simplefilter("always")
        assert fake_store.delete(gone.unit.memory_id) == 1
    ours = [w for w in caught if issubclass(w.category, DeprecationWarning) and "MemoryStore.forget" in str(w.message)]
    assert len(ours) == 1
    assert ours[0].filename == __file__  # attributed to the caller's line
    assert fake_store.get_many([gone.unit.memory_id, kept.memory_id]) == [fake_store.get(kept.memory_id)]


def test_legacy_root_names_warn_and_still_resolve() -> None:
    for name, module in langchain_hindsight._ALSO_IMPORTABLE.items():
        with pytest.warns(DeprecationWarning, match=rf"import it from langchain_hindsight\.{re.escape(module)}"):
            value = getattr(langchain_hindsight, name)
        assert value is getattr(importlib.import_module(f"langchain_hindsight.{module}"), name)


def test_pinned_root_names_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for name in langchain_hindsight.__all__:
            getattr(langchain_hindsight, name)


def test_explain_lives_in_recall_and_every_entry_point_answers(hs_factory: Any) -> None:
    assert not hasattr(RunJournal, "explain")  # the store journals runs; recall explains its scores
    hs = hs_factory(task_type="weekly_report", min_relevance=None)
    unit = hs.store.add(MemoryUnit(task_type="weekly_report", content=LESSON)).unit
    served = hs.session.serve(TASK)
    hs.session.finish(served, Trajectory(run_id=served.run_id, task=TASK, outcome="success", final_answer="ok"))
    explanation = hs.explain(served.run_id)
    assert explanation == explain_run(hs.journal, served.run_id)
    (first,) = explanation.memories
    assert first.served.memory_id == unit.memory_id
    assert [name for name, _ in first.factors] == sorted(TERMS, key=lambda t: first.served.breakdown[t], reverse=True)
    assert asyncio.run(hs.aexplain(served.run_id)) == explanation
