"""The Hindsight facade: one-liners and feedback() against real agents and the real store."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from langchain_hindsight import Hindsight, MemoryStore, MemoryUnit
from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.errors import ConfigurationError, RunNotFoundError
from langchain_hindsight.session import _verdict
from langchain_hindsight.testing import ReactiveToolModel
from langchain_hindsight.types import MemoryContext
from tests.fakes import WEEKLY_REPORT_LESSON as LESSON
from tests.fakes import query_sales
from tests.fakes import weekly_report_policy as _respond


@pytest.fixture
def hs(tmp_path: Path, embeddings: LocalEmbeddings) -> Any:
    with Hindsight(tmp_path / "db", embeddings=embeddings, task_type="weekly_report") as bundle:
        yield bundle


def _invoke(agent: Any, text: str, **config: Any) -> str:
    run_id = str(uuid.uuid4())
    agent.invoke({"messages": [HumanMessage(text)]}, config={"run_id": run_id, **config})
    return run_id


NATURAL_WEEK = MemoryContext(parameters={"start": "2024-06-03"})
"""The lesson's prescription as the agent's retry passes it: the run used it, so its outcome credits it (issue 33)."""


def test_middleware_run_then_user_correction(hs: Hindsight, monkeypatch: pytest.MonkeyPatch) -> None:
    # the flow, not the contradiction rules (test_claims): the correction contradicts the lesson
    monkeypatch.setattr(_verdict, "relation", lambda claim, memory: "contradicts" if memory == LESSON else "unsure")
    unit = hs.store.add(MemoryUnit(task_type="weekly_report", content=LESSON, context=NATURAL_WEEK)).unit
    agent = create_agent(ReactiveToolModel(respond=_respond), tools=[query_sales], middleware=[hs.middleware()])
    run_id = _invoke(agent, "生成本周的销售周报")
    record = hs.journal.get(run_id)
    assert record.served_ids == [unit.memory_id]
    assert record.outcome == "success"
    assert record.produced  # the error→fix rule learned from the failed first call
    credited = hs.store.get(unit.memory_id).score_confidence
    assert credited == pytest.approx(unit.score_confidence + 0.05)

    result = hs.feedback(run_id, success=False, comment="不对，周报只统计本周一到周日的数据")
    assert [u.memory_id for u in result.updated] == [unit.memory_id]
    # the run's success credit is taken back; the correction (this week) contradicts the lesson (last week), so
    # it supersedes it, halving it once, not compounded on the credit (issue 20: only what it contradicts)
    assert hs.store.get(unit.memory_id).score_confidence == pytest.approx(unit.score_confidence * 0.5)
    assert hs.store.get(unit.memory_id).status == "superseded"
    assert hs.journal.get(run_id).credit is None
    assert len(result.created) == 1
    created = result.created[0]
    assert created.source == "user_feedback"
    assert created.score_confidence >= 0.85
    assert "本周一到周日" in created.content
    assert result.run.feedback[-1].rejected is True
    assert created.memory_id in hs.journal.get(run_id).produced
    assert created.supersedes == unit.memory_id
    assert [u.memory_id for u in hs.store.history(created.memory_id)] == [created.memory_id, unit.memory_id]
    hs.undo_feedback(run_id)  # and the user's undo puts it all back
    assert hs.store.get(unit.memory_id).score_confidence == pytest.approx(credited)
    assert hs.store.get(unit.memory_id).status == "active"
    assert hs.store.get(created.memory_id).status == "archived"


def test_feedback_success_does_not_double_count(hs: Hindsight) -> None:
    unit = hs.store.add(MemoryUnit(task_type="weekly_report", content=LESSON, context=NATURAL_WEEK)).unit
    agent = create_agent(ReactiveToolModel(respond=_respond), tools=[query_sales], middleware=[hs.middleware()])
    run_id = _invoke(agent, "生成本周的销售周报")
    before = hs.store.get(unit.memory_id).score_confidence
    result = hs.feedback(run_id, success=True, comment="很好")
    assert result.updated == []
    assert result.created == []
    assert hs.store.get(unit.memory_id).score_confidence == before
    assert result.run.feedback[-1].success is True
    again = hs.feedback(run_id, success=True)  # repeated confirmations never credit again
    assert again.updated == []
    assert hs.store.get(unit.memory_id).score_confidence == before
    assert hs.journal.get(run_id).credit == {unit.memory_id: pytest.approx(0.05)}


def test_feedback_errors(hs: Hindsight) -> None:
    with pytest.raises(RunNotFoundError):
        hs.feedback("no-such-run", success=True)
    with pytest.raises(ConfigurationError):
        hs.feedback("no-such-run")


def test_callbacks_capture_and_reflect_any_runnable(hs: Hindsight) -> None:
    agent = create_agent(ReactiveToolModel(respond=_respond), tools=[query_sales])  # no middleware
    run_id = _invoke(agent, "生成本周的销售周报", callbacks=hs.callbacks)
    record = hs.journal.get(run_id)
    assert record.outcome == "success"
    assert record.produced
    assert any("2024-06-03" in u.content for u in hs.store.get_many(record.produced))


def test_middleware_and_callbacks_together_reflect_once(hs: Hindsight) -> None:
    agent = create_agent(ReactiveToolModel(respond=_respond), tools=[query_sales], middleware=[hs.middleware()])
    run_id = _invoke(agent, "生成本周的销售周报", callbacks=hs.callbacks)
    assert len(hs.journal.get(run_id).produced) == 1
    assert hs.store.count() == 1


def test_background_reflection_and_close_release_the_directory(tmp_path: Path, embeddings: LocalEmbeddings) -> None:
    hs = Hindsight(tmp_path / "db", embeddings=embeddings, background=True)
    agent = create_agent(ReactiveToolModel(respond=_respond), tools=[query_sales], middleware=[hs.middleware()])
    run_id = _invoke(agent, "生成本周的销售周报")
    assert hs.flush(timeout=60)
    assert hs.journal.get(run_id).produced
    hs.close()
    with MemoryStore(tmp_path / "db", embeddings=embeddings) as reopened:  # the lock was released
        assert reopened.count() == 1


def test_wrap_and_recall(hs: Hindsight) -> None:
    hs.store.add(MemoryUnit(task_type="weekly_report", content=LESSON))
    app = hs.wrap(create_agent(ReactiveToolModel(respond=_respond), tools=[query_sales]))
    run_id = _invoke(app, "生成本周的销售周报")
    assert hs.journal.get(run_id).served_ids
    recalled = hs.recall("生成本周的销售周报")
    assert LESSON in [r.memory.content for r in recalled]
    assert all(set(r.breakdown) >= {"similarity", "confidence"} for r in recalled)


DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("name", ["demo.md", "adapters.md"])  # docs/demo.md, docs/adapters.md
@pytest.mark.integration
def test_readme_examples_run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import re
    import sys
    import types
    import warnings

    text = (DOCS / name).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert blocks
    monkeypatch.chdir(tmp_path)
    module = types.ModuleType(f"readme_{name.removesuffix('.md')}")  # typing resolves hints through sys.modules
    monkeypatch.setitem(sys.modules, module.__name__, module)
    import contextlib
    import io

    printed = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(printed):
        warnings.simplefilter("ignore", DeprecationWarning)
        for block in blocks:
            exec(compile(block, f"docs/{name}", "exec"), module.__dict__)
    # a comment "# → TEXT" says the example prints TEXT (as in the README's runnable blocks)
    claims = [c.strip() for block in blocks for c in re.findall(r"# → (.*)$", block, re.M)]
    assert [c for c in claims if c not in printed.getvalue()] == []
    assert name != "adapters.md" or len(claims) >= 8
