"""The turn's LangGraph checkpoints, kept in the framework run state as one JSON text."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.memory import InMemorySaver


class TurnCheckpointSaver(InMemorySaver):
    """An in-memory saver for one turn whose whole content dumps to, and loads from, a JSON
    text (serde `dumps_typed`, msgpack, base64). Writes are serialized with a lock, so the
    parallel tool tasks of one super-step cannot interleave their `aput_writes`."""

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

    def dump(self) -> str:
        """Everything saved so far as one JSON text."""
        content = {
            "storage": {
                thread: {
                    ns: {cid: list(entry) for cid, entry in checkpoints.items()}
                    for ns, checkpoints in namespaces.items()
                }
                for thread, namespaces in self.storage.items()
            },
            "writes": [
                [list(key), [[list(inner), list(entry)] for inner, entry in value.items()]]
                for key, value in self.writes.items()
            ],
            "blobs": [[list(key), value] for key, value in self.blobs.items()],
        }
        kind, data = self.serde.dumps_typed(content)
        return json.dumps({"type": kind, "data": base64.b64encode(data).decode("ascii")})

    @classmethod
    def load(cls, text: str) -> TurnCheckpointSaver:
        saver = cls()
        encoded = json.loads(text)
        content = saver.serde.loads_typed((encoded["type"], base64.b64decode(encoded["data"])))
        for thread, namespaces in content["storage"].items():
            for ns, checkpoints in namespaces.items():
                saver.storage[thread][ns] = {
                    cid: (tuple(e[0]), tuple(e[1]), e[2]) for cid, e in checkpoints.items()
                }
        for key, value in content["writes"]:
            saver.writes[tuple(key)] = {
                tuple(inner): (entry[0], entry[1], tuple(entry[2]), entry[3])
                for inner, entry in value
            }
        for key, value in content["blobs"]:
            saver.blobs[tuple(key)] = tuple(value)
        return saver
