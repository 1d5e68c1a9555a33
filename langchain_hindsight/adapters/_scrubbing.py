"""Keeping the ``[相关经验]`` block out of persistence: a scrub for any value, and a checkpointer that applies it.

While a wrapped run is in flight, its original task message is registered
with a :class:`Scrubber` under the id its injected copy carries (and, for
``block_key`` schemas, the block string itself). Scrubbing puts the original
back, drops separate block messages (ids starting with ``BLOCK_ID_PREFIX``)
and empties a registered block string, rebuilding containers only where
something changed. :class:`ScrubbingSaver` wraps a caller's checkpointer and
scrubs every checkpoint and pending write before delegating to it.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import AsyncIterator, Collection, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from langchain_hindsight.capture.messages import BLOCK_ID_PREFIX

if TYPE_CHECKING:
    from langgraph.checkpoint.base import (
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        DeltaChannelHistory,
    )

__all__ = ["Scrubber", "ScrubbingSaver"]


class Scrubber:
    """Puts injected task messages back as they were and drops separate block messages.

    Injected messages are recognised by id: while a run is in flight its
    original task message is registered here under that id.
    """

    def __init__(self, *, block_key: str | None) -> None:
        self._lock = threading.Lock()
        self._originals: dict[str, BaseMessage] = {}
        self._blocks: Counter[str] = Counter()
        self._block_key = block_key

    def register(self, original: BaseMessage) -> None:
        """Remember ``original`` (which has an id) while its injected copy is in flight."""
        with self._lock:
            self._originals[str(original.id)] = original

    def release(self, original: BaseMessage) -> None:
        """Forget ``original`` once its run has ended (unless another run registered the same id since)."""
        with self._lock:
            if self._originals.get(str(original.id)) is original:
                del self._originals[str(original.id)]

    def register_block(self, block: str) -> None:
        """Remember a block written into ``block_key`` while its run is in flight."""
        with self._lock:
            self._blocks[block] += 1

    def release_block(self, block: str) -> None:
        """Forget a block registered with :meth:`register_block`."""
        with self._lock:
            self._blocks[block] -= 1
            if self._blocks[block] <= 0:
                del self._blocks[block]

    def scrub(self, value: Any) -> Any:
        """``value`` without the block; containers are rebuilt only where something changed."""
        with self._lock:
            if not self._originals and not self._blocks:
                return value  # no run in flight has injected anything
            originals = dict(self._originals)
            blocks = frozenset(self._blocks)
        return _scrub(value, originals, blocks)

    def scrub_channels(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """A state mapping (channel → value) without the block, ``block_key`` emptied."""
        out = dict(self.scrub(dict(values)))
        if self._block_key is not None and out.get(self._block_key):
            out[self._block_key] = ""
        return out

    def scrub_writes(self, writes: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
        """Pending writes (channel, value) without the block."""
        out: list[tuple[str, Any]] = []
        for channel, value in writes:
            if self._block_key is not None and channel == self._block_key and value:
                value = ""
            out.append((channel, self.scrub(value)))
        return out


def _scrub(value: Any, originals: Mapping[str, BaseMessage], blocks: frozenset[str]) -> Any:
    kind = type(value)
    if kind is list or kind is tuple:
        changed = False
        items: list[Any] = []
        for item in value:
            if isinstance(item, BaseMessage):  # inline: message lists are long, recursion is not free
                if item.id is None:
                    items.append(item)
                    continue
                if item.id.startswith(BLOCK_ID_PREFIX):
                    changed = True
                    continue
                original = originals.get(item.id)
                if original is not None and original is not item:
                    item, changed = original, True
                items.append(item)
                continue
            new = _scrub(item, originals, blocks)
            changed = changed or new is not item
            items.append(new)
        if not changed:
            return value
        return items if kind is list else tuple(items)
    if kind is dict:
        scrubbed = {k: _scrub(v, originals, blocks) for k, v in value.items()}
        return value if all(scrubbed[k] is value[k] for k in value) else scrubbed
    if isinstance(value, BaseMessage):
        original = originals.get(value.id) if value.id is not None else None
        return original if original is not None else value
    if blocks and kind is str and value in blocks:
        return ""
    return value


class ScrubbingSaver(BaseCheckpointSaver[Any]):
    """The caller's checkpointer, seen through a :class:`Scrubber`: no checkpoint ever holds the block.

    ``put``/``put_writes`` (and their async twins) scrub what they are given
    before delegating; every read is the caller's saver's own.
    """

    def __init__(self, inner: BaseCheckpointSaver[Any], scrubber: Scrubber) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner
        self.scrubber = scrubber

    @property
    def config_specs(self) -> list[Any]:
        """The caller's saver's configuration fields."""
        return list(self.inner.config_specs)

    def _scrubbed(self, checkpoint: Checkpoint) -> Checkpoint:
        return {**checkpoint, "channel_values": self.scrubber.scrub_channels(checkpoint["channel_values"])}

    # writes ----------------------------------------------------------------
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store ``checkpoint`` without the block."""
        return self.inner.put(config, self._scrubbed(checkpoint), self.scrubber.scrub(metadata), new_versions)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put`."""
        return await self.inner.aput(config, self._scrubbed(checkpoint), self.scrubber.scrub(metadata), new_versions)

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Store pending ``writes`` without the block."""
        self.inner.put_writes(config, self.scrubber.scrub_writes(writes), task_id, task_path)

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Async :meth:`put_writes`."""
        await self.inner.aput_writes(config, self.scrubber.scrub_writes(writes), task_id, task_path)

    # everything else is the caller's saver ---------------------------------
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The caller's saver's ``get_tuple``."""
        return self.inner.get_tuple(config)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The caller's saver's ``aget_tuple``."""
        return await self.inner.aget_tuple(config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The caller's saver's ``list``."""
        return self.inner.list(config, filter=filter, before=before, limit=limit)

    def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """The caller's saver's ``alist``."""
        return self.inner.alist(config, filter=filter, before=before, limit=limit)

    def delete_thread(self, thread_id: str) -> None:
        """The caller's saver's ``delete_thread``."""
        self.inner.delete_thread(thread_id)

    async def adelete_thread(self, thread_id: str) -> None:
        """The caller's saver's ``adelete_thread``."""
        await self.inner.adelete_thread(thread_id)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """The caller's saver's ``delete_for_runs``."""
        self.inner.delete_for_runs(run_ids)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """The caller's saver's ``adelete_for_runs``."""
        await self.inner.adelete_for_runs(run_ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """The caller's saver's ``copy_thread``."""
        self.inner.copy_thread(source_thread_id, target_thread_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """The caller's saver's ``acopy_thread``."""
        await self.inner.acopy_thread(source_thread_id, target_thread_id)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """The caller's saver's ``prune``."""
        self.inner.prune(thread_ids, strategy=strategy)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """The caller's saver's ``aprune``."""
        await self.inner.aprune(thread_ids, strategy=strategy)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The caller's saver's ``get_delta_channel_history``."""
        return self.inner.get_delta_channel_history(config=config, channels=channels)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The caller's saver's ``aget_delta_channel_history``."""
        return await self.inner.aget_delta_channel_history(config=config, channels=channels)

    def get_next_version(self, current: Any, channel: None) -> Any:
        """The caller's saver's channel versions."""
        return self.inner.get_next_version(current, channel)

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> BaseCheckpointSaver[Any]:
        """The caller's saver with LangGraph's msgpack allowlist for this graph, still scrubbed."""
        inner = self.inner.with_allowlist(extra_allowlist)
        return self if inner is self.inner else ScrubbingSaver(inner, self.scrubber)
