"""The graph's state besides its messages, carried from the end of one turn to the start of
the next, as a LangGraph thread with a checkpointer keeps it between invocations.

The session stores messages; the channel values a turn ended with (a middleware's own keys,
the graph's custom keys, `structured_response`) ride in the framework item of the turn's last
message, under a key LangChain's message decoder ignores. The next turn's first Step puts them
in a checkpoint of its fresh saver before it runs the graph with the stored conversation as
input, so the graph starts from them exactly as a thread's next invocation would: the input
goes through the channels' reducers onto the carried values, and a node's update replaces or
extends them as its reducer says.

Only value channels are carried (`LastValue`, and `BinaryOperatorAggregate`: reducers);
ephemeral ones (`jump_to`, branches) end with their step in LangGraph too.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from dex_agents.runner import AgentTurnContext, FrameworkMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels import BinaryOperatorAggregate, LastValue
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.pregel import Pregel

from .checkpoint import MESSAGES_CHANNEL, TurnCheckpointSaver

STATE_KEY: Final = "dex_graph_state"
"""The framework item's key that holds the state the turn ended with."""


def carried_channels(graph: Pregel[Any, Any, Any, Any]) -> frozenset[str]:
    """The graph's value channels besides its messages: the state a thread keeps."""
    return frozenset(
        name
        for name, channel in graph.channels.items()
        if isinstance(channel, LastValue | BinaryOperatorAggregate) and name != MESSAGES_CHANNEL
    )


async def end_state(
    saver: TurnCheckpointSaver, config: RunnableConfig, channels: frozenset[str]
) -> dict[str, Any]:
    """The carried channels' values in the turn's latest checkpoint."""
    saved = await saver.aget_tuple(config)
    if saved is None:
        return {}
    values = saved.checkpoint["channel_values"]
    return {key: value for key, value in values.items() if key in channels}


async def start_from(
    saver: TurnCheckpointSaver, config: RunnableConfig, values: Mapping[str, Any]
) -> None:
    """Puts `values` in a first checkpoint of the turn's saver, as the state the graph's
    thread holds before the turn's input."""
    if not values:
        return
    checkpoint = empty_checkpoint()
    for key, value in values.items():
        checkpoint["channel_values"][key] = value
        checkpoint["channel_versions"][key] = saver.get_next_version(None, None)
    thread: RunnableConfig = {
        "configurable": {**config.get("configurable", {}), "checkpoint_ns": ""}
    }
    await saver.aput(
        thread,
        checkpoint,
        {"source": "update", "step": -1, "parents": {}},
        dict(checkpoint["channel_versions"]),
    )


def with_carried_state(
    messages: Sequence[FrameworkMessage], values: Mapping[str, Any], saver: TurnCheckpointSaver
) -> list[FrameworkMessage]:
    """`messages` with `values` stored in the last one's framework item (the saver's serde)."""
    if not messages or not values:
        return list(messages)
    kind, data = saver.serde.dumps_typed(dict(values))
    last = messages[-1]
    item = json.loads(last.framework_item)
    item[STATE_KEY] = {"type": kind, "data": base64.b64encode(data).decode("ascii")}
    encoded = json.dumps(item, ensure_ascii=False, separators=(",", ":"))
    return [*messages[:-1], replace(last, framework_item=encoded)]


def previous_state(turn: AgentTurnContext, saver: TurnCheckpointSaver) -> dict[str, Any]:
    """The state the previous turn ended with: from the last stored message before the turn."""
    earlier = [m for m in turn.messages if m.turn_id != turn.turn_id]
    if not earlier:
        return {}
    stored = json.loads(earlier[-1].framework_item).get(STATE_KEY)
    if not isinstance(stored, dict):
        return {}
    values = saver.serde.loads_typed((stored["type"], base64.b64decode(stored["data"])))
    return dict(values) if isinstance(values, dict) else {}
