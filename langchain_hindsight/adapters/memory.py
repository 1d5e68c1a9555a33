"""``HindsightMemory``: the ``[相关经验]`` block for classic LangChain chains and ``AgentExecutor``.

Needs the optional extra ``langchain-classic`` (``pip install "langchain-hindsight[classic]"``),
where ``BaseMemory`` lives since LangChain 1.0 (deprecated there, removal in 2.0).
New code should prefer :class:`~langchain_hindsight.adapters.middleware.HindsightMiddleware`.
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict, Field, PrivateAttr

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight.capture.messages import trajectory_from_intermediate_steps
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.session.config import SessionConfig, new_run_id
from langchain_hindsight.session.loop import HindsightSession
from langchain_hindsight.session.source import session_for
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import Outcome, Served, Trajectory

try:
    from langchain_classic.base_memory import BaseMemory
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "HindsightMemory needs the optional 'langchain-classic' package: pip install \"langchain-hindsight[classic]\""
    ) from e

__all__ = ["HindsightMemory"]


@refuse_unknown_keywords(also=SessionConfig.option_names() | {"store"})  # BaseMemory: extra="ignore"
class HindsightMemory(BaseMemory):  # type: ignore[misc]  # BaseMemory is deprecated-decorated
    r"""Classic-chain memory whose variable is the ``[相关经验]`` block for the current input.

    ``load_memory_variables`` recalls for the task input and returns
    ``{"experience": block}`` (``""`` when nothing is relevant), to be placed in
    the user part of your prompt; ``save_context`` records that the task
    completed (success for the served memories) and reflects on it.
    Report failures with ``Hindsight.feedback`` or :meth:`record_outcome`.

    Example:
        .. code-block:: python

            from langchain_core.prompts import PromptTemplate
            from langchain_hindsight import Hindsight, HindsightMemory

            hs = Hindsight(persist_directory="./memory_db")
            memory = HindsightMemory(hs)                      # = hs.memory()
            prompt = PromptTemplate.from_template("{experience}\n\n[当前任务]\n{input}")
            memory.load_memory_variables({"input": "清洗 sales.csv"})  # {"experience": "[相关经验] ..."}

    The first positional argument is a :class:`~langchain_hindsight.Hindsight`
    (recommended), its ``session``, or a :class:`~langchain_hindsight.MemoryStore`
    (also accepted as ``store=``); other keywords that are
    :class:`~langchain_hindsight.session.config.SessionConfig` options (``k``,
    ``task_type``, ``reflect``, ...) change them for this memory only.

    Attributes:
        memory_key: Name of the prompt variable (``"experience"``).
        input_key: Input holding the task; default: the only input that is not a
            memory variable, else ``"input"``.
        output_key: Output holding the answer; default ``"output"`` or the only output.
        namespace: Namespace; ``None`` uses the store's default.
        max_pending: Tasks remembered between load and save (oldest dropped beyond that).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory_key: str = "experience"
    input_key: str | None = None
    output_key: str | None = None
    namespace: str | None = None
    max_pending: int = Field(default=256, ge=1)

    _session: HindsightSession = PrivateAttr()
    _pending: OrderedDict[str, Served] = PrivateAttr(default_factory=OrderedDict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, hindsight: object = None, /, **data: Any) -> None:
        options = {k: data.pop(k) for k in list(data) if k in SessionConfig.option_names()}
        target = data.pop("store", None) if hindsight is None else hindsight
        if target is None:
            raise ConfigurationError("HindsightMemory needs a Hindsight, a HindsightSession or a MemoryStore")
        with warnings.catch_warnings():  # the user chose the classic API on purpose
            warnings.simplefilter("ignore", DeprecationWarning)
            super().__init__(**data)
        self._session = session_for(target, **options)

    @property
    def session(self) -> HindsightSession:
        """The hindsight session this memory runs on."""
        return self._session

    @property
    def store(self) -> MemoryStore:
        """The memory store."""
        return self._session.store

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
        return trajectory_from_intermediate_steps(
            outputs.get("intermediate_steps") or [],
            task=served.task,
            answer=self._answer(outputs),
            run_id=served.run_id,
            namespace=served.namespace,
            task_type=served.task_type,
        )

    def _served_for(self, task: str) -> Served:
        return self._take(task) or Served(
            run_id=new_run_id(), task=task, namespace=self._session.namespace(self.namespace)
        )

    # ------------------------------------------------------------------ BaseMemory
    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """``{memory_key: block}`` for the task in ``inputs`` (recalled on every call)."""
        served = self._session.serve(self._task(inputs), namespace=self.namespace)
        self._remember(served)
        return {self.memory_key: served.block}

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Async :meth:`load_memory_variables`."""
        served = await self._session.aserve(self._task(inputs), namespace=self.namespace)
        self._remember(served)
        return {self.memory_key: served.block}

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """The task completed: credit the served memories and reflect on the run."""
        served = self._served_for(self._task(inputs))
        self._session.finish(served, self._trajectory(served, inputs, outputs))

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Async :meth:`save_context`."""
        served = self._served_for(self._task(inputs))
        await self._session.afinish(served, self._trajectory(served, inputs, outputs))

    def record_outcome(self, inputs: dict[str, Any], outcome: Outcome) -> None:
        """Report how a task ended when the chain failed (no ``save_context``), e.g. after an exception."""
        served = self._served_for(self._task(inputs))
        trajectory = Trajectory(
            run_id=served.run_id,
            task=served.task,
            outcome=outcome,
            namespace=served.namespace,
            task_type=served.task_type,
        )
        self._session.finish(served, trajectory)

    def clear(self) -> None:
        """Forget pending tasks (stored memories are untouched: use the store to delete them)."""
        with self._lock:
            self._pending.clear()
