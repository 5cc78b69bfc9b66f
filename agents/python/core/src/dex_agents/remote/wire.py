"""The runner wire bodies: runner types to JSON and back.

Field names and order are those of the runner types (`dex_agents.runner`, `dex_agents.types`);
the callables (`events`, `heartbeat`, `save_heartbeat_checkpoint`) and the Worker's parse
cache are left out, because they travel as stream lines instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import fields, is_dataclass
from typing import Any

from pydantic import BaseModel

from ..errors import DexAgentsError
from ..logs import current_step
from ..runner import (
    AgentTurnContext,
    AgentTurnOutcome,
    ContextSummaryRequest,
    ContextSummaryResult,
    DeferredToolCall,
    DeferredToolExecution,
    DeferredToolOutcome,
    FrameworkMessage,
    ModelCallMetadata,
    ToolCallsRequested,
    ToolExecutionResult,
    ToolInputRequested,
    ToolPolicy,
    ToolTaskCancellation,
    ToolTaskPending,
    ToolTaskPoll,
    ToolTaskPollOutcome,
    ToolTaskStarted,
    TurnCompleted,
    TurnContinued,
)
from ..types import AgentMessage, AgentUsage

# Fields of the runner types that are not data: they become stream lines or stay local.
_LOCAL_FIELDS = frozenset(
    {"events", "heartbeat", "save_heartbeat_checkpoint", "framework_items", "messages", "turn"}
)


class WireFormatError(DexAgentsError, ValueError):
    """A runner answered a body this side cannot read."""


def user_item(text: str) -> str:
    """The neutral item of a user's text, which the serving side turns into its own."""
    return json.dumps({"kind": "user_text", "text": text})


def plain(value: Any) -> Any:
    """A runner value as JSON data: dataclasses and models as objects, tuples as lists."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: plain(getattr(value, f.name))
            for f in fields(value)
            if f.name not in _LOCAL_FIELDS
        }
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


def history_range(messages: Sequence[AgentMessage]) -> tuple[int, int, bool]:
    """(first_sequence, last_sequence, contiguous) of the messages a call sees; (0, 0) if none."""
    if not messages:
        return 0, 0, True
    sequences = [message.sequence for message in messages]
    first, last = sequences[0], sequences[-1]
    contiguous = sequences == list(range(first, last + 1))
    return first, last, contiguous


def history_body(messages: Sequence[AgentMessage], messages_after: int) -> dict[str, Any]:
    """The `history` object and the `messages` after `messages_after` (0: every message)."""
    first, last, _ = history_range(messages)
    sent = [plain(m) for m in messages if messages_after == 0 or m.sequence > messages_after]
    return {
        "history": {
            "first_sequence": first,
            "last_sequence": last,
            "messages_after": messages_after,
        },
        "messages": sent,
    }


def turn_body(flow_type: str, turn: AgentTurnContext, messages_after: int) -> dict[str, Any]:
    """The AgentTurnContext as the wire's turn object."""
    data = plain(turn)
    body: dict[str, Any] = {
        "flow_type": flow_type,
        "flow_id": turn.flow_id,
        "turn_id": turn.turn_id,
        "attempt": turn.attempt,
        "step_execution_id": turn.step_execution_id,
    }
    body.update(history_body(turn.messages, messages_after))
    for name in (
        "framework_run_state",
        "tool_calls",
        "tool_policies",
        "default_tool_effect",
        "enabled_built_in_tools",
        "session_settings",
        "interaction_mode",
        "plan",
        "context_summary",
    ):
        body[name] = data[name]
    return body


def tool_call_body(
    flow_type: str, call: DeferredToolExecution, turn: dict[str, Any] | None
) -> dict[str, Any]:
    """`execute_deferred_tool_call`'s body; `turn` is the turn object or None."""
    data = plain(call)
    body: dict[str, Any] = {"flow_type": flow_type}
    for name in (
        "flow_id",
        "turn_id",
        "step_execution_id",
        "tool_call",
        "idempotency_key",
        "attempt",
        "heartbeat_checkpoint",
        "input_answers",
        "supports_tool_tasks",
    ):
        body[name] = data[name]
    body["turn"] = turn
    return body


def poll_body(flow_type: str, poll: ToolTaskPoll) -> dict[str, Any]:
    return {"flow_type": flow_type, **plain(poll)}


def cancel_body(flow_type: str, cancellation: ToolTaskCancellation) -> dict[str, Any]:
    return {"flow_type": flow_type, **plain(cancellation)}


def summary_body(
    flow_type: str, request: ContextSummaryRequest, messages_after: int
) -> dict[str, Any]:
    data = plain(request)
    body: dict[str, Any] = {
        "flow_type": flow_type,
        "flow_id": request.flow_id,
        "turn_id": request.turn_id,
        "attempt": request.attempt,
        # The CompactContext Step running the call (the request itself does not name it).
        "step_execution_id": _running_step_execution_id(),
        "previous_summary": data["previous_summary"],
    }
    body.update(history_body(request.messages, messages_after))
    body["through_sequence"] = request.through_sequence
    body["input_token_budget"] = request.input_token_budget
    body["session_settings"] = data["session_settings"]
    return body


def _running_step_execution_id() -> str:
    step = current_step.get()
    return "" if step is None else step.step_execution_id


# Results ----------------------------------------------------------------------------------


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise WireFormatError(f"{what} must be a JSON object, not {type(value).__name__}")
    return value


def framework_message(value: Any) -> FrameworkMessage:
    data = _object(value, "a FrameworkMessage")
    try:
        return FrameworkMessage(**data)
    except TypeError as error:
        raise WireFormatError(f"a FrameworkMessage: {error}") from error


def _messages(data: Mapping[str, Any], name: str = "new_messages") -> tuple[FrameworkMessage, ...]:
    return tuple(framework_message(item) for item in data.get(name) or ())


def _usage(value: Any) -> AgentUsage | None:
    return None if value is None else AgentUsage.model_validate(value)


def _metadata(value: Any) -> ModelCallMetadata | None:
    if value is None:
        return None
    data = dict(_object(value, "model_call_metadata"))
    data["finish_reasons"] = tuple(data.get("finish_reasons") or ())
    return ModelCallMetadata(**data)


def _deferred_call(value: Any) -> DeferredToolCall:
    data = dict(_object(value, "a tool call"))
    policy = data.get("policy")
    data["policy"] = None if policy is None else ToolPolicy(**_object(policy, "a policy"))
    return DeferredToolCall(**data)


def turn_outcome(value: Any) -> AgentTurnOutcome:
    """`run_model_step`'s result."""
    data = _object(value, "run_model_step's result")
    kind = data.get("kind")
    usage, metadata = _usage(data.get("usage")), _metadata(data.get("model_call_metadata"))
    if kind == "turn_completed":
        return TurnCompleted(_messages(data), usage, metadata, data.get("turn_error"))
    if kind == "tool_calls_requested":
        calls = tuple(_deferred_call(call) for call in data.get("tool_calls") or ())
        return ToolCallsRequested(
            str(data["framework_run_state"]), calls, usage, _messages(data), metadata
        )
    if kind == "turn_continued":
        return TurnContinued(str(data["framework_run_state"]), _messages(data), usage, metadata)
    raise WireFormatError(f"run_model_step's result has an unknown kind {kind!r}")


def _tool_outcome(data: Mapping[str, Any]) -> ToolExecutionResult | ToolInputRequested | None:
    kind = data.get("kind")
    if kind == "tool_execution_result":
        framework_data = data.get("framework_data")
        return ToolExecutionResult(
            str(data["output"]), None if framework_data is None else str(framework_data)
        )
    if kind == "tool_input_requested":
        return ToolInputRequested(
            str(data["question"]),
            tuple(data.get("choices") or ()),
            bool(data.get("allows_free_text", True)),
            data.get("continuation"),
        )
    return None


def deferred_outcome(value: Any) -> DeferredToolOutcome:
    """`execute_deferred_tool_call`'s result."""
    data = _object(value, "execute_deferred_tool_call's result")
    outcome = _tool_outcome(data)
    if outcome is not None:
        return outcome
    if data.get("kind") == "tool_task_started":
        return ToolTaskStarted(str(data["task_id"]), float(data["poll_interval_seconds"]))
    raise WireFormatError(f"a tool call's result has an unknown kind {data.get('kind')!r}")


def poll_outcome(value: Any) -> ToolTaskPollOutcome:
    """`poll_tool_task`'s result."""
    data = _object(value, "poll_tool_task's result")
    outcome = _tool_outcome(data)
    if outcome is not None:
        return outcome
    if data.get("kind") == "tool_task_pending":
        return ToolTaskPending(float(data["poll_interval_seconds"]), data.get("continuation"))
    raise WireFormatError(f"a task poll's result has an unknown kind {data.get('kind')!r}")


def unfinished_messages(value: Any) -> tuple[FrameworkMessage, ...]:
    return _messages(_object(value, "build_unfinished_turn_messages' result"), "messages")


def summary_result(value: Any) -> ContextSummaryResult:
    data = _object(value, "summarize_context's result")
    return ContextSummaryResult(
        str(data["text"]), _usage(data.get("usage")), _metadata(data.get("model_call_metadata"))
    )
