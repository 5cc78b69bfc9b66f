"""The turn's LangGraph checkpoints, kept in the framework run state as one JSON text.

Only what resuming needs is kept: the latest checkpoint of each namespace, the channel values
it refers to, and its pending writes (the interrupts). The `messages` channel's value starts
with the stored conversation the turn began from; that prefix is left out of the text and put
back from the session's stored messages on load, so the run state does not grow with the
session's history.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.memory import InMemorySaver

MESSAGES_CHANNEL = "messages"


class TurnCheckpointSaver(InMemorySaver):
    """An in-memory saver for one turn that dumps to, and loads from, a JSON text (serde
    `dumps_typed`, msgpack, base64). Writes are serialized with a lock, so the parallel tool
    tasks of one super-step cannot interleave their `aput`/`aput_writes`."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = asyncio.Lock()

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        async with self._lock:
            return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        async with self._lock:
            self.put_writes(config, writes, task_id, task_path)

    def dump(
        self, history_count: int = 0, turn_messages: Sequence[BaseMessage] | None = None
    ) -> str:
        """The latest checkpoints as one JSON text, the first `history_count` messages of the
        `messages` channel left out. `turn_messages`, when given, are the root graph's
        messages after those (the state the caller read from the latest checkpoint), which
        spares decoding the whole channel to slice it."""
        checkpoints: list[list[Any]] = []
        for thread, namespaces in self.storage.items():
            for ns, saved in namespaces.items():
                if not saved:
                    continue
                checkpoint_id = max(saved)
                entry = saved[checkpoint_id]
                versions = self.serde.loads_typed(entry[0])["channel_versions"]
                rest = turn_messages if ns == "" else None
                blobs = {
                    channel: self._blob(thread, ns, channel, version, history_count, rest)
                    for channel, version in versions.items()
                    if (thread, ns, channel, version) in self.blobs
                }
                writes = self.writes.get((thread, ns, checkpoint_id), {})
                checkpoints.append(
                    [
                        thread,
                        ns,
                        checkpoint_id,
                        list(entry),
                        blobs,
                        [[list(k), list(v)] for k, v in writes.items()],
                    ]
                )
        kind, data = self.serde.dumps_typed({"checkpoints": checkpoints})
        return json.dumps({"type": kind, "data": base64.b64encode(data).decode("ascii")})

    def _blob(
        self,
        thread: str,
        ns: str,
        channel: str,
        version: Any,
        history_count: int,
        turn_messages: Sequence[BaseMessage] | None,
    ) -> list[Any]:
        blob = self.blobs[(thread, ns, channel, version)]
        if channel != MESSAGES_CHANNEL or not history_count or blob[0] == "empty":
            return [version, list(blob), None]
        if turn_messages is None:
            turn_messages = self.serde.loads_typed(blob)[history_count:]
        turn_part = self.serde.dumps_typed(list(turn_messages))
        return [version, list(turn_part), history_count]

    @classmethod
    def load(cls, text: str, history: Sequence[BaseMessage] = ()) -> TurnCheckpointSaver:
        """The saver `dump` wrote; `history` is the conversation its dump left out (or the
        same conversation compacted since)."""
        saver = cls()
        encoded = json.loads(text)
        content = saver.serde.loads_typed((encoded["type"], base64.b64decode(encoded["data"])))
        for thread, ns, checkpoint_id, entry, blobs, writes in content["checkpoints"]:
            saver.storage[thread][ns][checkpoint_id] = (tuple(entry[0]), tuple(entry[1]), entry[2])
            for channel, (version, blob, left_out) in blobs.items():
                saver.blobs[(thread, ns, channel, version)] = saver._restored(
                    tuple(blob), left_out, history
                )
            saver.writes[(thread, ns, checkpoint_id)] = {
                (key[0], key[1]): (write[0], write[1], tuple(write[2]), write[3])
                for key, write in writes
            }
        return saver

    def _restored(
        self, blob: tuple[str, bytes], left_out: int | None, history: Sequence[BaseMessage]
    ) -> tuple[str, bytes]:
        if left_out is None:
            return blob
        # The conversation the turn started from; a compaction since then may have replaced
        # part of it with a summary, so `history` need not be `left_out` messages long.
        return self.serde.dumps_typed([*history, *self.serde.loads_typed(blob)])
