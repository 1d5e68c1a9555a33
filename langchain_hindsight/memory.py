"""``HindsightMemory``: the ``[相关经验]`` block for classic LangChain chains and ``AgentExecutor``.

Needs the optional extra ``langchain-classic`` (``pip install "langchain-hindsight[classic]"``),
where ``BaseMemory`` lives since LangChain 1.0 (deprecated there, removal in 2.0).
New code should prefer :class:`~langchain_hindsight.middleware.HindsightMiddleware`.
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict, Field, PrivateAttr

from langchain_hindsight._loop import ErrorPolicy, HindsightLoop, Served, new_run_id
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.prompts import Locale
from langchain_hindsight.store import MemoryStore
from langchain_hindsight.types import Outcome, Step, Trajectory

try:
    from langchain_classic.base_memory import BaseMemory
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "HindsightMemory needs the optional 'langchain-classic' package: pip install \"langchain-hindsight[classic]\""
    ) from e

__all__ = ["HindsightMemory"]


def _intermediate_steps(outputs: Mapping[str, Any]) -> list[Step]:
    """Steps from an ``AgentExecutor``'s ``intermediate_steps`` (``return_intermediate_steps=True``)."""
    steps: list[Step] = []
    for item in outputs.get("intermediate_steps") or []:
        if not isinstance(item, tuple | list) or len(item) != 2:
            continue
        action, observation = item
        tool = getattr(action, "tool", None)
        tool_input = getattr(action, "tool_input", None)
        args = dict(tool_input) if isinstance(tool_input, Mapping) else {"input": tool_input}
        steps.append(Step(type="tool_call", tool_name=tool, tool_args=args, content=str(tool_input)))
        steps.append(Step(type="tool_result", tool_name=tool, content=str(observation)))
    return steps


class HindsightMemory(BaseMemory):  # type: ignore[misc]  # BaseMemory is deprecated-decorated
    r"""Classic-chain memory whose variable is the ``[相关经验]`` block for the current input.

    ``load_memory_variables`` recalls for the task input and returns
    ``{"experience": block}`` (``""`` when nothing is relevant), to be placed in
    the user part of your prompt; ``save_context`` records that the task
    completed (success for the served memories, seed §4.5) and reflects on it.
    Report failures with ``Hindsight.feedback`` or :meth:`record_outcome`.

    Example:
        .. code-block:: python

            from langchain_core.prompts import PromptTemplate
            from langchain_hindsight import HindsightMemory, MemoryStore

            memory = HindsightMemory(store=MemoryStore("./memory_db"))
            prompt = PromptTemplate.from_template("{experience}\n\n[当前任务]\n{input}")
            memory.load_memory_variables({"input": "清洗 sales.csv"})  # {"experience": "[相关经验] ..."}

    Attributes:
        store: The memory store.
        memory_key: Name of the prompt variable (``"experience"``).
        input_key: Input holding the task; default: the only input that is not a
            memory variable, else ``"input"``.
        output_key: Output holding the answer; default ``"output"`` or the only output.
        k: Experiences recalled.
        task_type: Task type to prefer in recall and label reflections.
        namespace: Namespace; ``None`` uses the store's default.
        locale: ``"zh"`` or ``"en"``.
        max_lines: At most this many block lines.
        retriever: Custom recall component.
        reflector: ``Reflector`` or ``BackgroundReflector``; default rule-based.
        journal: Optional ``RunJournal``.
        reflect: ``False`` never reflects.
        on_error: ``"log"`` (default) or ``"raise"``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: MemoryStore
    memory_key: str = "experience"
    input_key: str | None = None
    output_key: str | None = None
    k: int = 5
    task_type: str | None = None
    namespace: str | None = None
    locale: Locale = "zh"
    max_lines: int = 8
    retriever: Any = None
    reflector: Any = None
    journal: Any = None
    reflect: bool = True
    on_error: ErrorPolicy = "log"
    max_pending: int = Field(default=256, ge=1)

    _loop: HindsightLoop = PrivateAttr()
    _pending: OrderedDict[str, Served] = PrivateAttr(default_factory=OrderedDict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, **data: Any) -> None:
        with warnings.catch_warnings():  # the user chose the classic API on purpose
            warnings.simplefilter("ignore", DeprecationWarning)
            super().__init__(**data)

    def model_post_init(self, __context: Any) -> None:
        """Build the shared hindsight loop."""
        self._loop = HindsightLoop(
            self.store,
            retriever=self.retriever,
            reflector=self.reflector,
            journal=self.journal,
            k=self.k,
            task_type=self.task_type,
            locale=self.locale,
            max_lines=self.max_lines,
            reflect=self.reflect,
            on_error=self.on_error,
        )

    @property
    def memory_variables(self) -> list[str]:
        """``[memory_key]``."""
        return [self.memory_key]

    # ------------------------------------------------------------------ helpers
    def _task(self, inputs: Mapping[str, Any]) -> str:
        if self.input_key is not None:
            if self.input_key not in inputs:
                raise ConfigurationError(f"inputs have no key {self.input_key!r} (input_key)")
            return str(inputs[self.input_key])
        keys = [k for k in inputs if k != self.memory_key and k != "stop"]
        if len(keys) == 1:
            return str(inputs[keys[0]])
        if "input" in inputs:
            return str(inputs["input"])
        raise ConfigurationError(f"cannot tell which input is the task among {sorted(keys)}; set input_key")

    def _answer(self, outputs: Mapping[str, Any]) -> str:
        if self.output_key is not None:
            return str(outputs.get(self.output_key) or "")
        if "output" in outputs:
            return str(outputs["output"] or "")
        texts = [v for k, v in outputs.items() if isinstance(v, str) and k != "intermediate_steps"]
        return texts[0] if len(texts) == 1 else ""

    def _remember(self, served: Served) -> None:
        with self._lock:
            self._pending[served.task] = served
            self._pending.move_to_end(served.task)
            while len(self._pending) > self.max_pending:
                self._pending.popitem(last=False)

    def _take(self, task: str) -> Served | None:
        with self._lock:
            return self._pending.pop(task, None)

    def _trajectory(self, served: Served, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> Trajectory:
        answer = self._answer(outputs)
        steps = _intermediate_steps(outputs)
        if answer:
            steps.append(Step(type="final_answer", content=answer))
        return Trajectory(
            run_id=served.run_id,
            task=served.task,
            steps=steps,
            outcome="success" if answer else "unknown",
            final_answer=answer or None,
            namespace=served.namespace,
            task_type=self.task_type,
        )

    def _served_for(self, task: str) -> Served:
        return self._take(task) or Served(
            run_id=new_run_id(), task=task, namespace=self._loop.namespace(self.namespace)
        )

    # ------------------------------------------------------------------ BaseMemory
    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """``{memory_key: block}`` for the task in ``inputs`` (recalled on every call)."""
        served = self._loop.serve(self._task(inputs), namespace=self.namespace)
        self._remember(served)
        return {self.memory_key: served.block}

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Async :meth:`load_memory_variables`."""
        served = await self._loop.aserve(self._task(inputs), namespace=self.namespace)
        self._remember(served)
        return {self.memory_key: served.block}

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """The task completed: credit the served memories and reflect on the run."""
        served = self._served_for(self._task(inputs))
        self._loop.finish(served, self._trajectory(served, inputs, outputs))

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Async :meth:`save_context`."""
        served = self._served_for(self._task(inputs))
        await self._loop.afinish(served, self._trajectory(served, inputs, outputs))

    def record_outcome(self, inputs: dict[str, Any], outcome: Outcome) -> None:
        """Report how a task ended when the chain failed (no ``save_context``), e.g. after an exception."""
        served = self._served_for(self._task(inputs))
        trajectory = Trajectory(
            run_id=served.run_id,
            task=served.task,
            outcome=outcome,
            namespace=served.namespace,
            task_type=self.task_type,
        )
        self._loop.finish(served, trajectory)

    def clear(self) -> None:
        """Forget pending tasks (stored memories are untouched: use the store to delete them)."""
        with self._lock:
            self._pending.clear()
