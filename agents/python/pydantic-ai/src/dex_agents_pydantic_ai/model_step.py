"""One model call: a Pydantic AI run stopped right after its first model response.

Pydantic AI runs the agent as a graph of nodes. The run here takes the history (and the tool
results of the last response), makes one model request, lets Pydantic AI process the response
(output validation, deferring every tool call), and stops before any second model request.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from dex_agents.runner import EventWriter, ModelCallMetadata
from dex_agents.types import AgentUsage
from pydantic_ai import Agent, DeferredToolResults
from pydantic_ai.messages import (
    AgentStreamEvent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
)
from pydantic_ai.models import Model
from pydantic_ai.output import OutputSpec
from pydantic_ai.run import AgentRun
from pydantic_ai.settings import ModelSettings
from pydantic_ai.toolsets import AbstractToolset
from pydantic_graph import End

from ._compat import AnyAgentNode
from .deferral import ToolCatalog


@dataclass(frozen=True)
class ModelCallOutcome:
    new_messages: list[ModelMessage]
    """What the run added to the history: tool returns, the response, retry requests."""
    response: ModelResponse | None
    """The model's response; None when a hook discarded it and asked for a retry."""
    output: object | None
    """The run's output when it ended: the answer, or DeferredToolRequests."""
    next_request: ModelRequest | None
    """The request of a second model call the run wanted to make; None when it ended."""


@dataclass(frozen=True)
class ModelCallArguments:
    """What a model step's run is given besides the agent's own configuration."""

    history: Sequence[ModelMessage]
    deferred_tool_results: DeferredToolResults | None
    deps: Any
    model: Model | str | None
    catalog: ToolCatalog
    toolsets: Sequence[AbstractToolset[Any]]


async def run_model_call(
    agent: Agent[Any, Any],
    *,
    history: Sequence[ModelMessage],
    deferred_tool_results: DeferredToolResults | None,
    output_type: OutputSpec[Any] | None,
    deps: Any,
    model: Model | str | None,
    conversation_id: str,
    catalog: ToolCatalog,
    events: EventWriter,
    stream: bool,
    model_settings: ModelSettings | None,
    toolsets: Sequence[AbstractToolset[Any]] = (),
) -> ModelCallOutcome:
    async with open_model_call(
        agent,
        history=history,
        deferred_tool_results=deferred_tool_results,
        output_type=output_type,
        deps=deps,
        model=model,
        conversation_id=conversation_id,
        catalog=catalog,
        model_settings=model_settings,
        toolsets=toolsets,
    ) as run:
        return await drive_model_call(run, run.next_node, events, stream)


def open_model_call(
    agent: Agent[Any, Any],
    *,
    history: Sequence[ModelMessage],
    deferred_tool_results: DeferredToolResults | None,
    output_type: OutputSpec[Any] | None,
    deps: Any,
    model: Model | str | None,
    conversation_id: str,
    catalog: ToolCatalog,
    model_settings: ModelSettings | None,
    toolsets: Sequence[AbstractToolset[Any]] = (),
) -> AbstractAsyncContextManager[AgentRun[Any, Any]]:
    """The run of a model step, not started yet."""
    return agent.iter(
        None,
        output_type=output_type,
        message_history=list(history),
        deferred_tool_results=deferred_tool_results,
        deps=deps,
        model=model,
        model_settings=model_settings,
        conversation_id=conversation_id,
        capabilities=[catalog],
        toolsets=list(toolsets) or None,
        infer_name=False,
    )


async def drive_model_call(
    run: AgentRun[Any, Any],
    node: AnyAgentNode | End[Any],
    events: EventWriter,
    stream: bool,
    *,
    new_since: int | None = None,
) -> ModelCallOutcome:
    """Drives `run` from `node` through one model request, to its end or to the request of a
    second model call. `new_since`: where the call's new messages start in the run's history
    (None: where the run started)."""
    response: ModelResponse | None = None
    requested = False
    while not isinstance(node, End):
        if Agent.is_model_request_node(node):
            if requested:
                # A second model call belongs to the next RunModel Step.
                return ModelCallOutcome(_new(run, new_since), response, None, node.request)
            requested = True
            if stream:
                async with node.stream(run.ctx) as events_stream:
                    async for event in events_stream:
                        write_delta(event, events)
        elif Agent.is_call_tools_node(node) and requested:
            # A resumed run first processes the stored response's tool results; only the
            # response after this run's own request is new.
            response = node.model_response
        node = await run.next(node)
    if response is None:
        raise RuntimeError("the Pydantic AI run ended without a model call")
    return ModelCallOutcome(_new(run, new_since), response, node.data.output, None)


def _new(run: AgentRun[Any, Any], since: int | None) -> list[ModelMessage]:
    return run.new_messages() if since is None else run.all_messages()[since:]


def write_delta(event: AgentStreamEvent, events: EventWriter) -> None:
    text: str | None = None
    kind = "text_delta"
    if isinstance(event, PartStartEvent):
        if isinstance(event.part, TextPart):
            text = event.part.content
        elif isinstance(event.part, ThinkingPart):
            text, kind = event.part.content, "reasoning_delta"
    elif isinstance(event, PartDeltaEvent):
        if isinstance(event.delta, TextPartDelta):
            text = event.delta.content_delta
        elif isinstance(event.delta, ThinkingPartDelta):
            text, kind = event.delta.content_delta, "reasoning_delta"
    if text:
        events.write(kind, {"text": text})


def usage_of(response: ModelResponse | None) -> AgentUsage:
    if response is None:
        return AgentUsage(model_calls=1)
    usage = response.usage
    reasoning = usage.output_reasoning_tokens or usage.details.get("reasoning_tokens", 0)
    return AgentUsage(
        model_calls=1,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.cache_read_tokens,
        reasoning_tokens=reasoning,
    )


def call_metadata(response: ModelResponse | None, request_model: str | None) -> ModelCallMetadata:
    if response is None:
        return ModelCallMetadata(request_model=request_model)
    return ModelCallMetadata(
        request_model=request_model,
        response_model=response.model_name,
        provider_name=response.provider_name,
        response_id=response.provider_response_id,
        finish_reasons=(response.finish_reason,) if response.finish_reason else (),
    )
