"""HindsightMemory in real classic chains (LLMChain, AgentExecutor) with fake models."""

from __future__ import annotations

import asyncio
import warnings

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.prompts import ChatPromptTemplate, PromptTemplate
from langchain_core.tools import tool

from langchain_hindsight import HindsightMemory, MemoryStore, MemoryUnit
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.testing import call, scripted_model
from tests.fakes import Prompts

BLOCK = "[相关经验]"
LESSON = "读取 ERP 导出的销售 CSV 时，read_csv 需要指定 encoding='gbk'"

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def lesson(store: MemoryStore) -> MemoryUnit:
    return store.add(MemoryUnit(task_type="data_cleaning", content=LESSON)).unit


def test_memory_variables_and_block(store: MemoryStore, lesson: MemoryUnit) -> None:
    memory = HindsightMemory(store=store, reflect=False)
    assert memory.memory_variables == ["experience"]
    block = memory.load_memory_variables({"input": "清洗 ERP 导出的销售 CSV"})["experience"]
    assert block.startswith(BLOCK)
    assert lesson.content in block
    custom = HindsightMemory(store=store, memory_key="hindsight", reflect=False)
    assert list(custom.load_memory_variables({"input": "x"})) == ["hindsight"]


def test_llmchain_prompt_gets_the_block_once_and_save_context_credits(store: MemoryStore, lesson: MemoryUnit) -> None:
    from langchain_classic.chains import LLMChain

    memory = HindsightMemory(store=store, reflect=False)
    prompts = Prompts()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chain = LLMChain(
            llm=FakeListChatModel(responses=["按第1条经验读取：共 6 行"]),  # it used the lesson: credited
            prompt=PromptTemplate.from_template("{experience}\n\n[当前任务]\n{input}"),
            memory=memory,
        )
    out = chain.invoke({"input": "清洗 ERP 导出的销售 CSV"}, config={"callbacks": [prompts]})
    assert out["text"] == "按第1条经验读取：共 6 行"
    assert [t.count(BLOCK) for t in prompts.texts] == [1]
    after = store.get(lesson.memory_id)
    assert after.access_count == 1
    assert after.confidence == pytest.approx(lesson.score_confidence + 0.05)


def test_agent_executor_with_memory_learns_from_intermediate_steps(store: MemoryStore) -> None:
    from langchain_classic.agents import AgentExecutor, create_tool_calling_agent

    @tool
    def read_csv(path: str, encoding: str = "utf-8") -> str:
        """Read a CSV file."""
        return f"6 rows ({encoding})"

    memory = HindsightMemory(store=store, input_key="input")
    model = scripted_model(call("read_csv", path="a.csv", encoding="gbk"), "6 rows")
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You read files."), ("human", "{experience}\n{input}"), ("placeholder", "{agent_scratchpad}")]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        executor = AgentExecutor(
            agent=create_tool_calling_agent(model, [read_csv], prompt),
            tools=[read_csv],
            memory=memory,
            return_intermediate_steps=True,
        )
    out = executor.invoke({"input": "清洗 a.csv"})
    assert out["output"] == "6 rows"
    trajectory = memory._trajectory(memory._served_for("清洗 a.csv"), {"input": "清洗 a.csv"}, out)
    assert [s.type for s in trajectory.steps] == ["tool_call", "tool_result", "final_answer"]
    assert trajectory.steps[0].tool_args == {"path": "a.csv", "encoding": "gbk"}


def test_async_load_and_save(store: MemoryStore, lesson: MemoryUnit) -> None:
    memory = HindsightMemory(store=store, reflect=False)

    async def main() -> str:
        variables = await memory.aload_memory_variables({"input": "清洗 ERP 导出的销售 CSV"})
        await memory.asave_context({"input": "清洗 ERP 导出的销售 CSV"}, {"output": "done"})
        return str(variables["experience"])

    assert asyncio.run(main()).count(BLOCK) == 1
    assert store.get(lesson.memory_id).access_count == 1


def test_record_outcome_failure_without_evidence_of_use_debits_nothing(store: MemoryStore, lesson: MemoryUnit) -> None:
    """The chain failed before it said or did anything: nothing shows it used the lesson (issue 33: no debit)."""
    memory = HindsightMemory(store=store, reflect=False)
    memory.load_memory_variables({"input": "清洗 ERP 导出的销售 CSV"})
    memory.record_outcome({"input": "清洗 ERP 导出的销售 CSV"}, "failure")
    assert store.get(lesson.memory_id).confidence == pytest.approx(lesson.score_confidence)
    assert store.get(lesson.memory_id).access_count == 1  # it was shown


def test_ambiguous_inputs_need_input_key(store: MemoryStore) -> None:
    memory = HindsightMemory(store=store, reflect=False)
    with pytest.raises(ConfigurationError, match="input_key"):
        memory.load_memory_variables({"question": "a", "context": "b"})
