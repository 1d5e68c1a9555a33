"""Reflector (LLM + rules), write triggers and BackgroundReflector (issue 4, reflection).

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/reflection/test_reflection.py``.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from langchain_hindsight import ConfigurationError, MemoryStore, Reflector, Step, Trajectory, TrajectoryRecorder
from langchain_hindsight.errors import ReflectionError
from langchain_hindsight.reflection.background import BackgroundReflector
from langchain_hindsight.testing import call, scripted_model
from tests.unit_tests.reflection.test_reflection import SEED_JSON, _err, _ok, _run_encoding_agent, _traj


def test_rules_turn_a_real_encoding_error_and_fix_into_a_stored_experience(gbk_csv: Path, store: MemoryStore) -> None:
    recorder = TrajectoryRecorder()
    _run_encoding_agent(gbk_csv, recorder)
    traj = recorder.last_trajectory
    assert traj is not None
    assert [s.type for s in traj.steps] == ["tool_call", "error", "tool_call", "tool_result", "final_answer"]

    stored = Reflector(store=store).reflect(traj)
    assert len(stored) == 1
    unit = stored[0]
    assert unit.source == "tool_output"  # it embeds the tool's error message: tool-output trust
    assert unit.task_type == "data_cleaning"  # inferred from the task text "清洗…数据"
    assert "encoding='utf-8'" in unit.content
    assert "encoding='gbk'" in unit.content
    assert "UnicodeDecodeError" in unit.content
    assert "read_file" in unit.content
    assert unit.context.tools_used == ["read_file"]
    assert unit.context.parameters["encoding"] == "gbk"
    assert unit.context.parameters["failed_parameters"] == [{"encoding": "utf-8"}]
    assert unit.context.output_sample.startswith("姓名,城市")
    assert unit.run_id == traj.run_id
    assert store.get(unit.memory_id) == unit


def test_reflecting_the_same_lesson_twice_merges_instead_of_duplicating(gbk_csv: Path, store: MemoryStore) -> None:
    reflector = Reflector(store=store)
    for _ in range(2):
        recorder = TrajectoryRecorder()
        _run_encoding_agent(gbk_csv, recorder)
        assert recorder.last_trajectory is not None
        reflector.reflect(recorder.last_trajectory)
    units = store.list_units()
    assert len(units) == 1
    assert len(units[0].merged_from) == 1


def test_llm_json_in_the_seed_shape_is_stored_with_its_fields(gbk_csv: Path, store: MemoryStore) -> None:
    recorder = TrajectoryRecorder()
    _run_encoding_agent(gbk_csv, recorder)
    assert recorder.last_trajectory is not None
    model = scripted_model(json.dumps(SEED_JSON, ensure_ascii=False))
    stored = Reflector(store=store, model=model, rules=False).reflect(recorder.last_trajectory)
    assert len(stored) == 1
    unit = stored[0]
    assert unit.source == "agent_inference"
    assert unit.task_type == "data_cleaning"  # "data-clean" normalised onto the vocabulary
    assert unit.content == SEED_JSON["content"]
    assert unit.confidence == pytest.approx(0.8)
    assert unit.tags == ["csv", "encoding", "chinese", "pandas"]
    assert unit.context.tools_used == ["pandas.read_csv"]
    assert unit.context.parameters == {"encoding": "utf-8-sig"}
    assert unit.context.input_sample == "姓名,年龄,城市\n张三,25,北京"
    assert store.get(unit.memory_id).confidence == pytest.approx(0.8)


def test_structured_output_through_tool_calling(store: MemoryStore) -> None:
    model = scripted_model(call("ExtractionOutput", experiences=[{**SEED_JSON, "confidence": 0.99}]))
    stored = Reflector(store=store, model=model, rules=False).reflect(_traj([]))
    assert len(stored) == 1
    assert stored[0].confidence == pytest.approx(0.85)  # self-report is capped
    assert model.bound_tool_names == ["ExtractionOutput"]


@pytest.mark.parametrize("text", ["", "[]", "{}", '{"experiences": []}', '{"content": ""}', "空", "```json\n[]\n```"])
def test_nothing_worth_keeping_stores_nothing(text: str, store: MemoryStore, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert Reflector(store=store, model=scripted_model(text), rules=False).reflect(_traj([])) == []
    assert store.count() == 0
    assert not [r for r in caplog.records if r.name.startswith("langchain_hindsight")]


def test_garbage_stores_nothing_with_one_log_line(store: MemoryStore, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        out = Reflector(store=store, model=scripted_model("I think the agent did great!! {oops"), rules=False).reflect(
            _traj([])
        )
    assert out == []
    assert store.count() == 0
    lines = [r for r in caplog.records if r.name == "langchain_hindsight.reflection.reflector"]
    assert len(lines) == 1
    assert "not the expected JSON" in lines[0].getMessage()


def test_llm_and_rules_together_share_the_model_task_type(store: MemoryStore) -> None:
    steps = [
        Step(type="tool_call", tool_name="fetch", tool_args={"timeout": 1}),
        _err("fetch", {"timeout": 1}),
        Step(type="tool_call", tool_name="fetch", tool_args={"timeout": 30}),
        _ok("fetch", {"timeout": 30}),
    ]
    llm = {"task_type": "api_call", "content": "调用慢接口时把timeout设为30秒以上。", "confidence": 0.7}
    model = scripted_model(json.dumps(llm, ensure_ascii=False))
    units = Reflector(store=store, model=model).reflect(_traj(steps, task="do the thing"))
    assert [u.source for u in units] == ["agent_inference", "tool_output"]  # the rule unit quotes the tool's error
    assert {u.task_type for u in units} == {"api_call"}


class _FailingModel:
    pass


def test_model_errors_raise_typed_or_keep_rule_units(store: MemoryStore) -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    broken = GenericFakeChatModel(messages=iter([]))  # raises StopIteration -> a real error from the model call
    traj = _traj([Step(type="feedback", content="不对，应该用gbk读取")])
    with pytest.raises(ReflectionError):
        Reflector(store=store, model=broken).reflect(traj)
    assert store.count() == 0  # nothing half-written
    units = Reflector(store=store, model=GenericFakeChatModel(messages=iter([])), on_model_error="skip").reflect(traj)
    assert [u.source for u in units] == ["user_feedback"]


async def test_async_twins_match_sync(gbk_csv: Path, make_store: Callable[..., MemoryStore]) -> None:
    recorder = TrajectoryRecorder()
    _run_encoding_agent(gbk_csv, recorder)
    traj = recorder.last_trajectory
    assert traj is not None
    text = json.dumps(SEED_JSON, ensure_ascii=False)
    sync_units = Reflector(model=scripted_model(text)).extract(traj)
    async_units = await Reflector(model=scripted_model(text)).aextract(traj)
    assert [(u.content, u.source, u.task_type) for u in sync_units] == [
        (u.content, u.source, u.task_type) for u in async_units
    ]
    store = make_store("async")
    stored = await Reflector(store=store, model=scripted_model(text)).areflect(traj)
    assert len(stored) == 2
    assert store.count() == 2
    fb = await Reflector(store=store).arecord_user_feedback("No, you should use gbk.", task="read the csv")
    assert fb[0].source == "user_feedback"


def test_record_user_feedback_is_written_immediately_with_high_confidence(store: MemoryStore) -> None:
    reflector = Reflector(store=store, locale="en")
    stored = reflector.record_user_feedback("No, you should read it with encoding='gbk'.", task="read the CSV")
    assert len(stored) == 1
    assert stored[0].source == "user_feedback"
    assert stored[0].confidence == pytest.approx(0.9)
    assert stored[0].content == "User correction (task: read the CSV): you should read it with encoding='gbk'."
    assert store.get(stored[0].memory_id) == stored[0]
    assert reflector.record_user_feedback("thanks!") == []
    with pytest.raises(ConfigurationError):
        reflector.record_user_feedback("  ")


def test_invalid_options(store: MemoryStore) -> None:
    with pytest.raises(ConfigurationError):
        Reflector(rules=False)
    with pytest.raises(ConfigurationError):
        Reflector(extraction_prompt="no placeholder")
    with pytest.raises(ConfigurationError):
        Reflector(extraction_prompt="{trajectory} {other}")
    with pytest.raises(ConfigurationError):
        Reflector(confidence_band=(0.9, 0.5))
    with pytest.raises(ConfigurationError):
        Reflector(model=_FailingModel())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        Reflector().reflect(_traj([]))  # no store to write to
    with pytest.raises(ConfigurationError):
        Reflector(store=store).extract("not a trajectory")  # type: ignore[arg-type]


class _SlowReflector:
    """A real Reflector wrapper that blocks until released (to observe queueing) and can fail."""

    def __init__(self, inner: Reflector, *, fail_on: str | None = None) -> None:
        self.inner = inner
        self.gate = threading.Event()
        self.fail_on = fail_on
        self.calls: list[str] = []

    def reflect(self, traj: Trajectory) -> list[Any]:
        self.gate.wait(10)
        self.calls.append(traj.run_id)
        if traj.task == self.fail_on:
            raise RuntimeError("reflection exploded")
        return self.inner.reflect(traj)


def test_background_reflection_from_the_recorder_trigger(gbk_csv: Path, store: MemoryStore) -> None:
    with BackgroundReflector(Reflector(store=store)) as background:
        recorder = TrajectoryRecorder(on_finish=background.submit)
        out = _run_encoding_agent(gbk_csv, recorder)
        assert out["messages"][-1].content == "文件有1行数据。"
        assert background.flush(timeout=30)
        assert recorder.finished_run_ids() == []  # released after reflection
    units = store.list_units()
    assert len(units) == 1
    assert "encoding='gbk'" in units[0].content


def test_background_dedupes_by_run_and_skips_non_triggers(store: MemoryStore) -> None:
    slow = _SlowReflector(Reflector(store=store))
    background = BackgroundReflector(slow, triggers=("failure",))  # type: ignore[arg-type]
    failed = _traj([], outcome="failure")
    first = background.submit(failed)
    assert background.submit(failed) is first  # one reflection per task
    skipped = background.submit(_traj([], outcome="success"))
    assert skipped.result(timeout=1) == []
    with_feedback = background.submit(_traj([Step(type="feedback", content="不对，应该先备份")], outcome="success"))
    slow.gate.set()
    assert background.flush(timeout=30)
    assert len(first.result()) == 1
    assert with_feedback.result()[0].source == "user_feedback"
    assert slow.calls == [failed.run_id, with_feedback.result()[0].run_id]
    background.close()


def test_background_full_queue_and_errors_never_raise(store: MemoryStore, caplog: pytest.LogCaptureFixture) -> None:
    slow = _SlowReflector(Reflector(store=store), fail_on="boom")
    background = BackgroundReflector(slow, max_queue=1)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING):
        running = background.submit(_traj([], outcome="failure", task="boom"))
        futures: list[Future[Any]] = [running]
        for i in range(3):
            futures.append(background.submit(_traj([], outcome="failure", task=f"t{i}")))
        slow.gate.set()
        assert background.flush(timeout=30)
    refused = [f for f in futures if isinstance(f.exception(), ReflectionError)]
    assert refused  # the bounded queue refused work instead of blocking the caller
    assert isinstance(running.exception(), RuntimeError)
    failures = [r for r in caplog.records if "background reflection of run" in r.getMessage()]
    assert len(failures) == 1
    background.close()
    after = background.submit(_traj([], outcome="failure"))
    assert isinstance(after.exception(), ReflectionError)


def test_close_finishes_queued_work(store: MemoryStore) -> None:
    slow = _SlowReflector(Reflector(store=store))
    background = BackgroundReflector(slow, max_queue=10)  # type: ignore[arg-type]
    futures = [background.submit(_traj([], outcome="failure", task=f"任务{i}")) for i in range(3)]
    slow.gate.set()
    background.close()
    assert all(f.done() and f.exception() is None for f in futures)
    assert store.count() == 3


def test_background_starts_no_thread_and_no_exit_hook_before_the_first_submit(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks: list[Callable[..., Any]] = []
    monkeypatch.setattr("langchain_hindsight.reflection.background.atexit.register", hooks.append)
    monkeypatch.setattr("langchain_hindsight.reflection.background.atexit.unregister", hooks.remove)
    before = {t.ident for t in threading.enumerate()}
    background = BackgroundReflector(Reflector(store=store), workers=2)
    assert not background.started
    assert {t.ident for t in threading.enumerate()} == before  # construction starts nothing
    assert hooks == []
    skipped = background.submit(_traj([], outcome="unknown"))  # not a trigger: nothing is queued
    assert skipped.result(timeout=1) == []
    assert not background.started
    done = background.submit(_traj([], outcome="failure", task="清洗 sales.csv"))
    assert background.started
    workers = [t for t in threading.enumerate() if t.name.startswith("hindsight-reflect-")]
    assert len(workers) == 2
    assert hooks == [background.close]  # interpreter exit finishes queued work
    assert len(done.result(timeout=30)) == 1
    background.close()
    assert hooks == []
    assert not any(t.is_alive() for t in workers)


def test_background_closed_before_use_never_starts(store: MemoryStore) -> None:
    background = BackgroundReflector(Reflector(store=store))
    background.close()
    refused = background.submit(_traj([], outcome="failure"))
    assert isinstance(refused.exception(), ReflectionError)
    assert not background.started


def test_background_invalid_options(store: MemoryStore) -> None:
    with pytest.raises(ConfigurationError):
        BackgroundReflector(Reflector(store=store), max_queue=0)
    with pytest.raises(ConfigurationError):
        BackgroundReflector(Reflector(store=store), triggers=("sometimes",))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        BackgroundReflector(object())  # type: ignore[arg-type]


@pytest.mark.integration
def test_readme_capture_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    import re

    doc = Path(__file__).resolve().parents[3] / "docs" / "capture.md"
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert len(blocks) == 3
    for block in blocks:
        exec(compile(block, str(doc), "exec"), {"__name__": "readme_example"})
    out = capsys.readouterr().out
    assert "success ['tool_call', 'error', 'tool_call', 'tool_result', 'final_answer']" in out
    assert "data_cleaning tool_output" in out
    assert "使用read_file时，encoding='utf-8'会失败（UnicodeDecodeError: 'utf-8' codec can't decode" in out
    assert "改为encoding='gbk'后成功（任务：" in out
    assert "data_cleaning 0.8 ['csv', 'encoding']" in out
    assert "\n[]\n" in out
    assert "user_feedback 0.9 weekly_report" in out
    assert "用户纠正（任务：生成周报）：周报只统计周一到周日的数据" in out
