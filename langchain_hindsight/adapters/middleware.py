"""``HindsightMiddleware``: hindsight for ``langchain.agents.create_agent`` in one line.

Recall happens once per task (the last human message), the ``[相关经验]`` block
is added to every model request of that task *ephemerally* through
``wrap_model_call`` (never written to the agent state or a checkpoint), and
after the agent finishes the outcome is applied to the served memories and the
run is reflected on.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Unpack

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage

from langchain_hindsight._checks import check_int, refuse_unknown_keywords
from langchain_hindsight.capture import message_text
from langchain_hindsight.capture.messages import (
    Placement,
    check_placement,
    find_task,
    inject,
    recall_query,
    task_key,
    trajectory_from_messages,
)
from langchain_hindsight.session.config import AdapterOptions, new_run_id
from langchain_hindsight.session.loop import HindsightSession
from langchain_hindsight.session.source import SessionSource, session_for
from langchain_hindsight.types import Served

if TYPE_CHECKING:
    from langchain.agents.middleware.types import ExtendedModelResponse
    from langgraph.runtime import Runtime

__all__ = ["HindsightMiddleware"]


@refuse_unknown_keywords
class HindsightMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Agent middleware that recalls experience before a task and learns after it.

    Per task (a new human message): recall once with the task text; inject the
    block into each model request of the task, in the user turn (never
    the system prompt), on a copy of the request, so state and checkpoints never contain it;
    after the agent ends, apply the outcome to the served memories (success
    +0.05 once per run, failure −0.1), record the run in the journal and reflect.
    On a checkpointed agent, a turn that corrects the previous answer
    ("不对，…", "No, …") is feedback on the previous run of the thread.

    Setup:
        .. code-block:: python

            from langchain.agents import create_agent
            from langchain_hindsight import Hindsight, HindsightMiddleware

            hs = Hindsight(persist_directory="./memory_db")
            agent = create_agent(model, tools, middleware=[HindsightMiddleware(hs)])  # = hs.middleware()
            agent.invoke({"messages": [("user", "清洗 data.csv")]},
                         config={"configurable": {"user_id": "alice"}})

    Args:
        hindsight: A :class:`~langchain_hindsight.Hindsight` (recommended), its
            ``session``, or a bare :class:`~langchain_hindsight.MemoryStore`.
        namespace: Fixed namespace, or a template filled from
            ``config["configurable"]`` (``"user-{user_id}"``). Default: the value of
            ``config["configurable"][namespace_key]`` (or ``runtime.context``), else
            the store's default namespace.
        placement: ``"task_message"`` (the task message is sent as the task
            prompt, default) or ``"separate_message"`` (a block message with a stable
            id right before the task). See :data:`~langchain_hindsight.capture.messages.Placement`.
        max_pending: Tasks remembered between their first model call and the end
            of the agent (oldest dropped beyond that; e.g. runs that raised).
        **options: :class:`~langchain_hindsight.session.config.SessionConfig` options changed
            for this middleware only (``k``, ``task_type``, ``recall``, ``reflect``, ...).

    The run id of a task is ``config["run_id"]`` when the caller sets one
    (recommended: pass the same id to ``Hindsight.feedback``), else a fresh UUID.
    A model-call exception propagates unchanged and no outcome is applied (an
    API failure says nothing about the memories).
    """

    def __init__(
        self,
        hindsight: SessionSource,
        *,
        namespace: str | None = None,
        placement: Placement = "task_message",
        max_pending: int = 1024,
        **options: Unpack[AdapterOptions],
    ) -> None:
        super().__init__()
        check_placement(placement)
        check_int("max_pending", max_pending)
        self.session = session_for(hindsight, **options)
        self.namespace = namespace
        self.placement: Placement = placement
        self.max_pending = max_pending
        self._pending: OrderedDict[str, Served] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def loop(self) -> HindsightSession:
        """Alias of :attr:`session`."""
        return self.session

    # ------------------------------------------------------------------ pure helpers
    def _identify(
        self, messages: Sequence[BaseMessage], runtime: Runtime[Any] | None
    ) -> tuple[str, str, str, str] | None:
        """``(key, task_text, run_id hint, thread_id)`` of the current task, or ``None`` without a human message."""
        found = find_task(messages)
        if found is None:
            return None
        info = runtime.execution_info if runtime is not None else None
        scope = str(info.thread_id or "") if info is not None else ""
        run_id = str(info.run_id or "") if info is not None else ""
        return task_key(found[1], scope=scope), message_text(found[1]), run_id, scope

    def _run_namespace(self, runtime: Runtime[Any] | None) -> str:
        from langgraph.config import get_config

        try:
            config: dict[str, Any] | None = dict(get_config())
        except RuntimeError:  # called outside a runnable context
            config = None
        context = runtime.context if runtime is not None else None
        return self.session.namespace_for_run(config, explicit=self.namespace, context=context)

    def _cached(self, key: str) -> Served | None:
        with self._lock:
            return self._pending.get(key)

    def _remember(self, key: str, served: Served) -> Served:
        with self._lock:
            existing = self._pending.get(key)
            if existing is not None:  # a concurrent call served the same task first
                return existing
            self._pending[key] = served
            while len(self._pending) > self.max_pending:
                self._pending.popitem(last=False)
            return served

    def _pop(self, key: str) -> Served | None:
        with self._lock:
            return self._pending.pop(key, None)

    def _apply(self, request: ModelRequest[Any], served: Served) -> ModelRequest[Any]:
        if not served.block:
            return request
        messages = inject(
            request.messages, block=served.block, task_prompt=served.task_prompt, placement=self.placement
        )
        return request.override(messages=messages)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ model calls
    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        """Recall once per task and send the model a copy of the request with the block."""
        ident = self._identify(request.messages, request.runtime)
        if ident is None:
            return handler(request)
        key, task, run_id, thread_id = ident
        served = self._cached(key)
        if served is None:
            namespace = self._run_namespace(request.runtime)
            served = self._remember(
                key,
                self.session.serve(
                    task,
                    namespace=namespace,
                    run_id=run_id or None,
                    thread_id=thread_id,
                    query=recall_query(request.messages),
                ),
            )
        return handler(self._apply(request, served))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        """Async :meth:`wrap_model_call`."""
        ident = self._identify(request.messages, request.runtime)
        if ident is None:
            return await handler(request)
        key, task, run_id, thread_id = ident
        served = self._cached(key)
        if served is None:
            namespace = self._run_namespace(request.runtime)
            served = self._remember(
                key,
                await self.session.aserve(
                    task,
                    namespace=namespace,
                    run_id=run_id or None,
                    thread_id=thread_id,
                    query=recall_query(request.messages),
                ),
            )
        return await handler(self._apply(request, served))

    # ------------------------------------------------------------------ after the agent
    def _end(self, state: AgentState[Any], runtime: Runtime[Any]) -> tuple[Served | None, Any] | None:
        messages = list(state.get("messages") or [])
        ident = self._identify(messages, runtime)
        if ident is None:
            return None
        key, task, run_id, thread_id = ident
        served = self._pop(key)
        if served is None:  # no model call was made for this task (e.g. a jump straight to the end)
            served = Served(
                run_id=run_id or new_run_id(),
                task=task,
                namespace=self._run_namespace(runtime),
                thread_id=thread_id or None,
            )
        trajectory = trajectory_from_messages(
            messages, run_id=served.run_id, namespace=served.namespace, task_type=served.task_type
        )
        return served, trajectory

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Apply the outcome to the served memories and reflect; never changes the state."""
        ended = self._end(state, runtime)
        if ended is not None:
            self.session.finish(*ended)
        return None

    async def aafter_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async :meth:`after_agent`."""
        ended = self._end(state, runtime)
        if ended is not None:
            await self.session.afinish(*ended)
        return None
