"""A tool that returns a `Command(update=...)` changes the graph's state, the way LangGraph tools
do. The tool runs in its tool Step, outside the graph: the update travels back with the result
as the record's framework data, and the RunModel Step that resumes the turn returns it from the
deferred call in place of a plain ToolMessage, so the graph's reducers apply it there, once
(a RunModel that is rerun starts again from the checkpoint stored before it).

The update's values are kept with the checkpoints' serializer (LangGraph's `JsonPlusSerializer`,
msgpack, base64), so messages, Pydantic models and dataclasses come back as themselves.
`goto`, `resume` and `Command.PARENT` move control inside a graph the tool Step is not part
of: such a Command is a failure the model reads.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Final

from dex_agents.runner import ToolExecutionError, ToolExecutionResult
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Command

from . import _compat

UPDATE_KEY: Final = "langgraph_command_update"
"""The framework data's key for a Command's update, without the call's own ToolMessage."""
MESSAGES: Final = "messages"
_SERDE = JsonPlusSerializer()

NOT_AN_UPDATE = (
    "tool {name!r} returned a Command with {what}: only Command(update=...) can be carried "
    "from a tool Step into the graph"
)
NO_TOOL_MESSAGE = (
    "tool {name!r} returned a Command whose update has no ToolMessage for call {call_id!r}: "
    "add ToolMessage(..., tool_call_id=<the call's InjectedToolCallId>) to update['messages']"
)


def command_result(command: Command[Any], tool_name: str, call_id: str) -> ToolExecutionResult:
    """The call's result (its ToolMessage's text) and the rest of the update as framework data."""
    _refuse_control_flow(command, tool_name)
    update = dict(_compat.command_update(command))
    messages = list(update.pop(MESSAGES, None) or [])
    own = next((m for m in messages if _answers(m, call_id)), None)
    if own is None:
        raise ToolExecutionError(NO_TOOL_MESSAGE.format(name=tool_name, call_id=call_id))
    if own.status == "error":
        raise ToolExecutionError(own.text)
    others = [m for m in messages if m is not own]
    if others:
        update[MESSAGES] = others
    return ToolExecutionResult(output=own.text, framework_data=_dumped(update) if update else None)


def recorded_update(framework_data: str | None) -> dict[str, Any] | None:
    """The update a tool Step carried back, or None when its tool returned a plain result."""
    if framework_data is None:
        return None
    stored = json.loads(framework_data).get(UPDATE_KEY)
    if stored is None:
        return None
    value: dict[str, Any] = _SERDE.loads_typed((stored["type"], base64.b64decode(stored["data"])))
    return value


def resumed_result(
    message: ToolMessage, update: dict[str, Any] | None
) -> ToolMessage | Command[Any]:
    """What the deferred call returns in the graph: the recorded ToolMessage, inside the tool's
    Command when its tool returned one."""
    if update is None:
        return message
    return Command(update={**update, MESSAGES: [message, *update.get(MESSAGES, [])]})


def _refuse_control_flow(command: Command[Any], tool_name: str) -> None:
    for what, present in (
        ("graph=Command.PARENT", command.graph is not None),
        ("goto", bool(command.goto)),
        ("resume", command.resume is not None),
    ):
        if present:
            raise ToolExecutionError(NOT_AN_UPDATE.format(name=tool_name, what=what))


def _answers(message: object, call_id: str) -> bool:
    return isinstance(message, ToolMessage) and message.tool_call_id == call_id


def _dumped(update: dict[str, Any]) -> str:
    kind, data = _SERDE.dumps_typed(update)
    return json.dumps({UPDATE_KEY: {"type": kind, "data": base64.b64encode(data).decode()}})
