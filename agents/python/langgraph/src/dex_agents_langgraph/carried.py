"""The graph's state besides its messages, carried from the end of one turn to the start of
the next, as a LangGraph thread with a checkpointer keeps it between invocations.

The session stores messages; the state a turn ended with (a middleware's own keys, the
graph's custom keys) rides in the framework item of the turn's last message, under a key
LangChain's message decoder ignores. The next turn gives it back through the graph's input,
with the stored conversation, so the graph's input schema and reducers decide what it becomes.
Keys that the graph keeps out of its input (`OmitFromInput`, `PrivateStateAttr`:
`structured_response`, `jump_to`) are not carried: the graph's input would drop them.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from dex_agents.runner import AgentTurnContext, FrameworkMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

STATE_KEY: Final = "dex_graph_state"
"""The framework item's key that holds the state the turn ended with."""
MESSAGES_KEY: Final = "messages"
_SERDE: Final = JsonPlusSerializer()


def input_keys(graph: Any) -> frozenset[str]:
    """The state keys the graph's input takes (its `StateGraph`'s input schema); none for a
    graph that was not built with a `StateGraph`."""
    builder = getattr(graph, "builder", None)
    schemas = getattr(builder, "schemas", None)
    if not isinstance(schemas, Mapping):
        return frozenset()
    return frozenset(schemas.get(getattr(builder, "input_schema", None), {}))


def carried_values(values: Mapping[str, Any], input_keys: Collection[str]) -> dict[str, Any]:
    """The state to carry: the graph's input keys besides its messages, unset ones left out."""
    return {
        key: value
        for key, value in values.items()
        if key != MESSAGES_KEY and key in input_keys and value is not None
    }


def with_carried_state(
    messages: Sequence[FrameworkMessage], values: Mapping[str, Any]
) -> list[FrameworkMessage]:
    """`messages` with `values` stored in the last one's framework item."""
    if not messages or not values:
        return list(messages)
    kind, data = _SERDE.dumps_typed(dict(values))
    last = messages[-1]
    item = json.loads(last.framework_item)
    item[STATE_KEY] = {"type": kind, "data": base64.b64encode(data).decode("ascii")}
    encoded = json.dumps(item, ensure_ascii=False, separators=(",", ":"))
    return [*messages[:-1], replace(last, framework_item=encoded)]


def previous_state(turn: AgentTurnContext) -> dict[str, Any]:
    """The state the previous turn ended with: from the last stored message before the turn."""
    earlier = [m for m in turn.messages if m.turn_id != turn.turn_id]
    if not earlier:
        return {}
    stored = json.loads(earlier[-1].framework_item).get(STATE_KEY)
    if not isinstance(stored, dict):
        return {}
    values = _SERDE.loads_typed((stored["type"], base64.b64decode(stored["data"])))
    return dict(values) if isinstance(values, dict) else {}
