"""One tool call in its own Step, run by the agent's real tool function.

The call runs through Pydantic AI itself: a run whose history is the conversation up to the
model response that made the call, stopped before the model request that would carry the
result. Pydantic AI finds the tool in the agent's toolsets, validates the arguments, builds the
real RunContext (deps, the conversation in `messages`, tool_call_id, retry) and runs the tool
with every hook and wrapper the agent has. That run is a new one over the turn's history (the
cold path), or, for the lone call of a response whose run a warm entry keeps open, that run
itself (warm.py), which the tool sees alike.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dex_agents.runner import ToolExecutionError, ToolExecutionResult
from dex_agents.types import AgentToolCall
from pydantic_ai import (
    Agent,
    DeferredToolRequests,
    DeferredToolResults,
    ToolApproved,
    UnexpectedModelBehavior,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ToolAvailabilityDeltaPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model
from pydantic_ai.output import OutputSpec
from pydantic_ai.run import AgentRun
from pydantic_graph import End

from ._compat import AnyAgentNode
from .deferral import ToolCatalog
from .tool_results import DEFAULT_MAX_TOOL_RESULT_BYTES, NativeToolResult, encode_tool_result

APPROVAL_AT_RUN_TIME = (
    "the tool asked for approval while it ran; give it ToolPolicy(requires_approval=True) so "
    "the approval happens before the call"
)
DEFERRED_AT_RUN_TIME = (
    "the tool deferred its call to outside the agent (CallDeferred or an external tool), "
    "which a tool Step cannot wait for"
)


@dataclass(frozen=True)
class ToolRun:
    """What one run of a tool call did."""

    return_part: ToolReturnPart | None
    user_part: UserPromptPart | None
    """`ToolReturn.content`, which Pydantic AI sends as a user part after the tool results."""
    tools: tuple[str, ...] | None
    """`ToolReturn.tools`, the tools the result reveals."""
    requests: DeferredToolRequests | None
    declared_kind: str | None
    """The tool definition's own kind: `unapproved` when it declares requires_approval."""


@dataclass(frozen=True)
class ToolStepRun:
    """How a tool Step runs the agent: its deps, output type, model and conversation."""

    agent: Agent[Any, Any]
    deps: Any
    output_type: OutputSpec[Any] | None
    model: Model | str | None
    conversation_id: str
    max_result_bytes: int = DEFAULT_MAX_TOOL_RESULT_BYTES
    history: Sequence[ModelMessage] | None = None
    """The conversation up to the response that made the call, as the turn's model Step ran
    it; None: that response alone, after a request revealing the called tool."""

    async def call(self, record: AgentToolCall, *, approved: bool) -> ToolExecutionResult:
        return await finish_call(record, approved, self.attempt, self.max_result_bytes)

    async def attempt(self, record: AgentToolCall, approved: bool) -> ToolRun:
        """Runs the call once, approved or not, in a new run."""
        catalog = ToolCatalog(defer=False)
        async with self.agent.iter(
            None,
            output_type=self.output_type,
            message_history=self._history(record),
            deferred_tool_results=approval(record, approved),
            deps=self.deps,
            model=self.model,
            conversation_id=self.conversation_id,
            capabilities=[catalog],
            infer_name=False,
        ) as agent_run:
            return await drive_tool_call(agent_run, agent_run.next_node, record, catalog)

    def _history(self, record: AgentToolCall) -> list[ModelMessage]:
        if self.history is not None:
            history = _with_only_call(self.history, record.tool_call_id)
            if history is not None:
                return history
        call = ToolCallPart(record.tool_name, record.arguments, record.tool_call_id)
        return [_revealing(record.tool_name), ModelResponse(parts=[call])]


def approval(record: AgentToolCall, approved: bool) -> DeferredToolResults | None:
    """What a run that runs the call is given: its approval, or nothing (it runs as called)."""
    if not approved:
        return None
    return DeferredToolResults(approvals={record.tool_call_id: ToolApproved()})


Attempt = Callable[[AgentToolCall, bool], Awaitable[ToolRun]]
"""Runs the call once, approved or not, and says what the run did."""


async def finish_call(
    record: AgentToolCall, approved: bool, attempt: Attempt, max_result_bytes: int
) -> ToolExecutionResult:
    """The call's result from its run (`attempt`), or the failure the model reads."""
    run = await attempt(record, approved)
    if run.requests is not None and run.requests.approvals and not approved:
        if run.declared_kind != "unapproved":
            raise ToolExecutionError(APPROVAL_AT_RUN_TIME)
        # A ToolPolicy waived the tool's declared approval; Pydantic AI deferred it unrun.
        run = await attempt(record, True)
    if run.return_part is None:
        asked_approval = run.requests is not None and bool(run.requests.approvals)
        raise ToolExecutionError(APPROVAL_AT_RUN_TIME if asked_approval else DEFERRED_AT_RUN_TIME)
    part = run.return_part
    if part.outcome == "success":
        native = NativeToolResult(part, run.user_part, run.tools)
        return ToolExecutionResult(encode_tool_result(native, max_result_bytes))
    # ModelRetry, ToolFailed and invalid arguments: a failure the model reads.
    raise ToolExecutionError(part.model_response_str(wrap_if_error=False))


async def drive_tool_call(
    agent_run: AgentRun[Any, Any],
    node: AnyAgentNode | End[Any],
    record: AgentToolCall,
    catalog: ToolCatalog,
) -> ToolRun:
    """Drives `agent_run` from `node` until the tool ran (the next model request would carry
    its result) or the run ended with the call deferred."""
    try:
        while not isinstance(node, End):
            if Agent.is_model_request_node(node):
                parts = node.request.parts
                return ToolRun(
                    _return_part(parts, record),
                    _user_part(parts),
                    _revealed(parts, record),
                    None,
                    None,
                )
            node = await agent_run.next(node)
    except UnexpectedModelBehavior as error:
        # The tool exceeded its retries (ModelRetry with max_retries reached).
        raise ToolExecutionError(str(error)) from error
    except Exception as error:
        # Pydantic AI refuses to call an approved external tool, so it never ran.
        declared = catalog.tools.get(record.tool_name)
        if declared is not None and declared.kind == "external":
            raise ToolExecutionError(DEFERRED_AT_RUN_TIME) from error
        raise
    output = node.data.output
    declared = catalog.tools.get(record.tool_name)
    requests = output if isinstance(output, DeferredToolRequests) else None
    return ToolRun(None, None, None, requests, declared.kind if declared else None)


def _with_only_call(
    history: Sequence[ModelMessage], tool_call_id: str
) -> list[ModelMessage] | None:
    """The history with its last response keeping only this call among its tool calls (the
    calls beside it run in tool Steps of their own); None when the history does not end with
    the response that made the call."""
    messages = list(history)
    last = messages[-1] if messages else None
    if not isinstance(last, ModelResponse):
        return None
    if tool_call_id not in {call.tool_call_id for call in last.tool_calls}:
        return None
    parts = [
        part
        for part in last.parts
        if not isinstance(part, ToolCallPart) or part.tool_call_id == tool_call_id
    ]
    if len(parts) != len(last.parts):
        messages[-1] = replace(last, parts=parts)
    return messages


def _return_part(parts: Sequence[ModelRequestPart], record: AgentToolCall) -> ToolReturnPart | None:
    for part in parts:
        if isinstance(part, ToolReturnPart) and part.tool_call_id == record.tool_call_id:
            return part
    return None


def _user_part(parts: Sequence[ModelRequestPart]) -> UserPromptPart | None:
    """The run has no prompt and one call: a user part is that call's `ToolReturn.content`."""
    return next((part for part in parts if isinstance(part, UserPromptPart)), None)


def _revealed(parts: Sequence[ModelRequestPart], record: AgentToolCall) -> tuple[str, ...] | None:
    for part in parts:
        if isinstance(part, ToolAvailabilityDeltaPart) and part.tool_call_id == record.tool_call_id:
            return tuple(part.tools_added)
    return None


def _revealing(tool_name: str) -> ModelRequest:
    """A request that reveals the called tool: the model step offered it (a deferred-loading
    tool a result revealed), or the call would have been a retry rather than a tool Step. A
    tool that is not deferred-loading ignores it."""
    return ModelRequest(parts=[ToolAvailabilityDeltaPart(tools_added=[tool_name])])
