"""Every private member of Google ADK (and of LiteLLM through it) the adapter reads or writes,
in one place.

ADK has no public way to: copy a `LiteLlm` with other request arguments (`_additional_args`:
the client retries turned off, the warm-up's mocked response), import LiteLLM as its first
call does (`_ensure_litellm_imported`), read whether a tool was made with
`require_confirmation=True` (`_require_confirmation`), give an `McpTool` a session manager that
adds the idempotency key (`_mcp_session_manager`), reach the invocation from a plugin's
callback context (`_invocation_context`), list the events of the current branch
(`InvocationContext._get_events`), read a tool's declaration (`BaseTool._get_declaration`,
the method a custom tool overrides), or have an agent's flow run a transfer that the response
of a confirmed call sets (`LlmAgent._llm_flow`, and its flow's `_preprocess_async`,
`_call_llm_async` and `_get_agent_to_run`, and `LlmAgent._get_subagent_to_resume`, which
reads `InvocationContext._find_matching_function_call`: see `run_transfers_of_resumed_calls`).
`google-adk` is pinned to a minor version for this reason, and tests/test_compat.py checks
each member as used here, so an upgrade that changes one fails there, by name.
"""

from __future__ import annotations

import copy
import types as pytypes
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from functools import cache
from typing import Any, cast

from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.llm_agent import LlmAgent
from google.adk.events.event import Event
from google.adk.flows.llm_flows.base_llm_flow import BaseLlmFlow
from google.adk.models import lite_llm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.mcp_tool.mcp_tool import McpTool
from google.genai import types


def with_request_args(model: lite_llm.LiteLlm, extra: Mapping[str, Any]) -> lite_llm.LiteLlm:
    """A copy of the model whose every request also passes `extra` to LiteLLM."""
    copied = model.model_copy()
    copied._additional_args = {**model._additional_args, **extra}
    return copied


def import_litellm_as_adk_does() -> None:
    """ADK's own import of LiteLLM (in production mode: no `.env` loaded)."""
    ensure = getattr(lite_llm, "_ensure_litellm_imported", None)
    if callable(ensure):
        ensure()


def made_to_require_confirmation(tool: BaseTool) -> bool:
    """Whether the tool was made with `require_confirmation=True` (a callable is not True)."""
    return getattr(tool, "_require_confirmation", None) is True


def with_session_manager(tool: McpTool, wrap: Any) -> McpTool:
    """A copy of the MCP tool whose sessions come from `wrap(the tool's session manager)`."""
    copied = copy.copy(tool)
    copied._mcp_session_manager = wrap(tool._mcp_session_manager)
    return copied


def invocation_of(callback_context: CallbackContext) -> InvocationContext:
    """The invocation a plugin's callback runs in."""
    return callback_context._invocation_context


def current_branch_events(invocation: InvocationContext) -> list[Event]:
    """The events of the current invocation in the current branch, in order."""
    return invocation._get_events(current_invocation=True, current_branch=True)


def declaration_of(tool: BaseTool) -> types.FunctionDeclaration | None:
    """The function declaration the tool offers the model."""
    return tool._get_declaration()


TransferTarget = Callable[[InvocationContext], str | None]
"""The agent a transfer names in the invocation's events, for the invocation's agent (None:
no transfer to run)."""


def run_transfers_of_resumed_calls(
    agent: LlmAgent, pending: TransferTarget, to_resume: TransferTarget
) -> None:
    """Makes `agent` (a copy the runner owns) run the agents that tools' transfers name, as
    ADK runs the target of its own `transfer_to_agent`.

    ADK runs the agent a function response transfers to right after the response
    (`_postprocess_handle_function_calls_async`), but not after the response of a confirmed
    call, which its `request_confirmation` processor yields in the flow's preprocessing: the
    flow then goes on to the agent's own model call. Here the flow runs the agent
    `pending(invocation)` names after the preprocessing instead, and makes no model call of
    its own in that step. And a resumed agent goes on with the agent `to_resume(invocation)`
    names (`_get_subagent_to_resume`, which ADK reads only from `transfer_to_agent`'s own
    responses)."""
    agent.__class__ = _agent_class(type(agent), pending, to_resume)


@cache
def _agent_class(
    base: type[LlmAgent], pending: TransferTarget, to_resume: TransferTarget
) -> type[LlmAgent]:
    def llm_flow(self: LlmAgent) -> BaseLlmFlow:
        flow = cast(LlmAgent, super(cls, self))._llm_flow
        flow_class: type[BaseLlmFlow] = type(flow)
        flow.__class__ = _flow_class(flow_class)
        assert isinstance(flow, _TransferringFlow)
        flow.pending = pending
        return flow

    def subagent_to_resume(self: LlmAgent, ctx: InvocationContext) -> BaseAgent | None:
        target = to_resume(ctx)
        if target is None:
            return cast(LlmAgent, super(cls, self))._get_subagent_to_resume(ctx)
        agent = self.root_agent.find_agent(target)
        if agent is None:
            raise ValueError(f"Agent {target} not found in the agent tree.")
        return agent

    def body(namespace: dict[str, Any]) -> None:
        namespace.update(
            {
                "_llm_flow": property(llm_flow),
                "_get_subagent_to_resume": subagent_to_resume,
                "__module__": base.__module__,
            }
        )

    cls: type[LlmAgent] = pytypes.new_class(base.__name__, (base,), exec_body=body)
    return cls


class _TransferringFlow(BaseLlmFlow):
    """The flow part of `run_transfers_of_resumed_calls` (mixed into the agent's flow class)."""

    pending: TransferTarget
    transferred = False

    async def _preprocess_async(
        self, invocation_context: InvocationContext, llm_request: LlmRequest
    ) -> AsyncGenerator[Event, None]:
        self.transferred = False
        async with aclosing(super()._preprocess_async(invocation_context, llm_request)) as agen:
            async for event in agen:
                yield event
        target = self.pending(invocation_context)
        if target is None or invocation_context.end_invocation:
            return
        self.transferred = True
        agent = self._get_agent_to_run(invocation_context, target)
        async with aclosing(agent.run_async(invocation_context)) as agen:
            async for event in agen:
                yield event

    async def _call_llm_async(
        self,
        invocation_context: InvocationContext,
        llm_request: LlmRequest,
        model_response_event: Event,
    ) -> AsyncGenerator[LlmResponse, None]:
        if self.transferred:
            return
        calls = super()._call_llm_async(invocation_context, llm_request, model_response_event)
        async with aclosing(calls) as agen:
            async for response in agen:
                yield response


@cache
def _flow_class(base: type[BaseLlmFlow]) -> type[BaseLlmFlow]:
    return type(base.__name__, (_TransferringFlow, base), {})


def matching_call(invocation: InvocationContext, response_event: Event) -> Event | None:
    """The event of the invocation (before `response_event`) that made the call the event's
    first function response answers."""
    return invocation._find_matching_function_call(response_event)
