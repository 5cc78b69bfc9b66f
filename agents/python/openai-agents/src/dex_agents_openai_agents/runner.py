"""The dex-agents runner for the OpenAI Agents SDK, in Step mode.

Each `run_model_step` lets the SDK make one model call (more only when the model hands off to
another agent, because the SDK runs a handoff itself and calls the next agent's model). Every
function tool is gated by `needs_approval`, so the run stops with `result.interruptions` before
any tool runs; the `RunState` is stored as the framework run state, and each tool call runs in
its own tool Step through `execute_deferred_tool_call`. The next `run_model_step` restores the
`RunState`, approves each call whose record is final (the gated tool answers with the recorded
result) or rejects it with its rejection message, and lets the SDK make the next model call.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agents import (
    Agent,
    InputGuardrailTripwireTriggered,
    MaxTurnsExceeded,
    ModelRetrySettings,
    ModelSettings,
    OutputGuardrailTripwireTriggered,
    RunConfig,
    RunContextWrapper,
    RunHooks,
    Runner,
    RunResultStreaming,
    RunState,
    ToolApprovalItem,
)
from dex_agents import texts
from dex_agents.errors import DexAgentsError
from dex_agents.results import model_visible_result
from dex_agents.runner import (
    AgentTurnContext,
    AgentTurnOutcome,
    DeferredToolCall,
    DeferredToolExecution,
    FrameworkMessage,
    ModelCallMetadata,
    ToolCallsRequested,
    ToolExecutionError,
    ToolExecutionResult,
    TurnCompleted,
)
from dex_agents.tool_context import running_tool
from dex_agents.tool_source import ToolSource, run_source_call
from dex_agents.types import AgentMessage, AgentToolCall, AgentUsage
from dex_agents.warm_up import load_openai_client_async

from .gating import GatedAgentGraph
from .items import (
    answered_call_ids,
    function_call_names,
    function_call_output,
    project_items,
    raw_field,
    replay_items,
    stored_items,
    user_message,
)
from .policy import framework_effect, framework_requires_approval
from .recorded import recorded_results
from .stream import StreamForwarder
from .tool_sources import SourceTools
from .tool_step import run_function_tool
from .turn_state import TurnState
from .usage import run_usage, usage_since


@dataclass(frozen=True)
class RunContextRequest:
    """What a context factory is asked for: the run context of one Step.

    `tool_call_id` is set when the context is for a tool Step, and None for a model Step.
    """

    flow_id: str
    turn_id: str
    tool_call_id: str | None = None


ContextFactory = Callable[[RunContextRequest], Any]


class UnsupportedInterruptionError(DexAgentsError):
    """The run stopped for an approval the adapter cannot run as a dex-agents tool Step."""


def _omit_context(_context: Any) -> Mapping[str, Any]:
    # Every Step builds a fresh context from the factory, so none is stored in the run state.
    return {}


def _turn_error(error: Exception) -> str:
    if isinstance(error, InputGuardrailTripwireTriggered):
        return f"input guardrail {error.guardrail_result.guardrail.get_name()!r} tripped"
    if isinstance(error, OutputGuardrailTripwireTriggered):
        return f"output guardrail {error.guardrail_result.guardrail.get_name()!r} tripped"
    return str(error)


def _metadata(result: RunResultStreaming) -> ModelCallMetadata:
    model = result.last_agent.model
    response_id = result.raw_responses[-1].response_id if result.raw_responses else None
    return ModelCallMetadata(
        request_model=model if isinstance(model, str) else None,
        provider_name="openai",
        response_id=response_id,
    )


class OpenAIAgentsRunner:
    """Runs an OpenAI Agents SDK agent as a durable agent session, one model call per Step.

    `context_factory` builds the SDK run context (`RunContextWrapper.context`) of every model
    Step and tool Step; it may return an awaitable. The context is never stored. `run_config`,
    `hooks` and `max_turns` are passed to the SDK's Runner; `max_turns` counts the model calls
    of one session turn and is unlimited by default.

    `tool_sources` are tool sources such as `dex_agents.mcp.McpToolSource`, whose tools the
    root agent gets besides its own (as it would get the tools of its `mcp_servers`). Each model
    Step lists them (cached after the first listing); each call runs in its tool Step through
    its source, which sends the idempotency key.

    `framework_retries` (off by default) lets the SDK retry a failed model request by itself
    inside one RunModel attempt. Off, the model Step runs with a copy of `run_config` whose
    model settings carry `retry=ModelRetrySettings(max_retries=0)`, which turns off the SDK's
    runner-managed retries and its OpenAI client's own retries for that request (the client
    and the given `run_config` are not changed): each RunModel attempt sends one request, and
    RunModel's attempts, recorded in the Step history, are the retries.
    """

    def __init__(
        self,
        agent: Agent[Any],
        *,
        context_factory: ContextFactory | None = None,
        run_config: RunConfig | None = None,
        hooks: RunHooks[Any] | None = None,
        max_turns: int | None = None,
        framework_retries: bool = False,
        tool_sources: Sequence[ToolSource] = (),
    ) -> None:
        self.agent = agent
        self._graph = GatedAgentGraph(agent)
        self._sources = SourceTools(tool_sources)
        self._context_factory = context_factory
        self._run_config = run_config
        # What the model Step runs with; tool Steps get the application's run_config as is.
        self._model_run_config = run_config if framework_retries else _no_retries(run_config)
        self._hooks = hooks
        self._max_turns = max_turns

    def build_user_message(self, text: str) -> FrameworkMessage:
        return user_message(text)

    async def warm_up(self) -> None:
        """Loads what the first model call would (`WarmUpRunner`): the root agent's model as
        the run config's provider makes it, the OpenAI SDK resources of its client, and the
        HTTP client's connection stack. No request is sent."""
        await load_openai_client_async(getattr(self._root_model(), "_client", None))

    def _root_model(self) -> object:
        config = self._model_run_config or RunConfig()
        chosen = config.model if config.model is not None else self.agent.model
        if chosen is not None and not isinstance(chosen, str):
            return chosen
        return config.model_provider.get_model(chosen)

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        source_tools = await self._sources.function_tools(
            self._graph.root_tool_names(), turn.tool_calls
        )
        graph = self._graph.with_root_tools(source_tools)
        context = await self._context(RunContextRequest(turn.flow_id, turn.turn_id))
        run_input: list[Any] | RunState[Any, Agent[Any]]
        if turn.framework_run_state is None:
            run_input, answers = replay_items(turn.messages), {}
            input_count, earlier = len(run_input), AgentUsage()
            history = list(turn.messages)
        else:
            saved = TurnState.from_json(turn.framework_run_state)
            history = _started_from(turn, saved)
            run_input = await RunState.from_json(
                graph.root,
                _with_original_input(turn, saved, history),
                context_override=RunContextWrapper(context=context),
            )
            answers = _decide_interruptions(run_input, turn.tool_calls)
            input_count, earlier = saved.input_count, saved.usage
        # The run loop task copies this context when it starts, so the answers reach its tools.
        with recorded_results(answers):
            result = self._run_streamed(graph.root, run_input, context)
        try:
            await _drain(turn, result)
        except (
            InputGuardrailTripwireTriggered,
            OutputGuardrailTripwireTriggered,
            MaxTurnsExceeded,
        ) as error:
            usage = usage_since(run_usage(result.context_wrapper.usage), earlier)
            return TurnCompleted(usage=usage, turn_error=_turn_error(error))
        total = run_usage(result.context_wrapper.usage)
        usage = usage_since(total, earlier)
        if result.interruptions:
            try:
                return await self._tool_calls_requested(
                    turn, result, input_count, history, total, usage
                )
            except UnsupportedInterruptionError as error:
                return TurnCompleted(usage=usage, turn_error=str(error))
        turn_items = result.to_input_list()[input_count:]
        return TurnCompleted(
            new_messages=project_items(turn_items),
            usage=usage,
            model_call_metadata=_metadata(result),
        )

    async def execute_deferred_tool_call(
        self, execution: DeferredToolExecution
    ) -> ToolExecutionResult:
        record = execution.tool_call
        source = self._sources.owner(record)
        if source is not None:
            return await run_source_call(source, execution)
        agent_name = _source_agent(record) or self.agent.name
        found = self._graph.original_function_tool(agent_name, record.tool_name)
        if found is None:
            raise ToolExecutionError(
                f"agent {agent_name!r} has no function tool named {record.tool_name!r}"
            )
        agent, tool = found
        context = await self._context(
            RunContextRequest(execution.flow_id, execution.turn_id, record.tool_call_id)
        )
        with running_tool(execution):
            return await run_function_tool(agent, tool, execution, context, self._run_config)

    async def build_unfinished_turn_messages(
        self, turn: AgentTurnContext
    ) -> Sequence[FrameworkMessage]:
        """The turn's items so far, with a result for every function call the model made."""
        if turn.framework_run_state is None:
            return []
        items = list(TurnState.from_json(turn.framework_run_state).turn_items)
        records = {record.tool_call_id: record for record in turn.tool_calls}
        answered = answered_call_ids(items)
        for call_id in function_call_names(items):
            if call_id in answered:
                continue
            record = records.get(call_id)
            text = (
                model_visible_result(record)
                if record is not None and record.is_final
                else texts.OUTCOME_UNKNOWN_TEXT
            )
            items.append(function_call_output(call_id, text))
        return project_items(items)

    # -- internals ---------------------------------------------------------------------------

    async def _context(self, request: RunContextRequest) -> Any:
        if self._context_factory is None:
            return None
        context = self._context_factory(request)
        if inspect.isawaitable(context):
            context = await context
        return context

    def _run_streamed(
        self, root: Agent[Any], run_input: list[Any] | RunState[Any, Agent[Any]], context: Any
    ) -> RunResultStreaming:
        if isinstance(run_input, RunState):
            # The restored state keeps its own context, max_turns and current agent.
            return Runner.run_streamed(
                root, run_input, hooks=self._hooks, run_config=self._model_run_config
            )
        return Runner.run_streamed(
            root,
            run_input,
            context=context,
            max_turns=self._max_turns,
            hooks=self._hooks,
            run_config=self._model_run_config,
        )

    async def _tool_calls_requested(
        self,
        turn: AgentTurnContext,
        result: RunResultStreaming,
        input_count: int,
        history: Sequence[AgentMessage],
        total: AgentUsage,
        usage: AgentUsage,
    ) -> ToolCallsRequested:
        calls = [
            await self._deferred_call(turn, item, result.context_wrapper)
            for item in result.interruptions
        ]
        run_state = result.to_state().to_json(context_serializer=_omit_context)
        history_through: int | None = None
        # The run's original input is the stored history, which never changes: keep it out of
        # the run state when rebuilding it from the stored messages gives it back exactly.
        if len(history) == input_count and run_state.get("original_input") == stored_items(
            turn, history
        ):
            run_state = {**run_state, "original_input": []}
            history_through = history[-1].sequence if history else 0
        saved = TurnState(
            run_state=run_state,
            input_count=input_count,
            turn_items=[dict(item) for item in result.to_input_list()[input_count:]],
            usage=total,
            history_through=history_through,
        )
        return ToolCallsRequested(
            framework_run_state=saved.to_json(),
            tool_calls=calls,
            usage=usage,
            model_call_metadata=_metadata(result),
        )

    async def _deferred_call(
        self,
        turn: AgentTurnContext,
        item: ToolApprovalItem,
        context: RunContextWrapper[Any],
    ) -> DeferredToolCall:
        raw = item.raw_item
        call_id, name, arguments = (raw_field(raw, key) for key in ("call_id", "name", "arguments"))
        from_source = self._source_call(turn, item)
        if from_source is not None:
            return from_source
        found = (
            self._graph.original_function_tool(item.agent.name, name)
            if raw_field(raw, "type") == "function_call" and isinstance(name, str)
            else None
        )
        if found is None or not isinstance(call_id, str) or not isinstance(arguments, str):
            raise UnsupportedInterruptionError(
                f"the OpenAI Agents adapter cannot defer the {item.tool_name or 'unnamed'} "
                f"approval of agent {item.agent.name!r}: only function tools run as tool Steps"
            )
        tool = found[1]
        policy = turn.resolve_tool_policy(
            tool.name,
            framework_effect(tool),
            await framework_requires_approval(tool, context, arguments, call_id),
        )
        return DeferredToolCall(
            tool_call_id=call_id,
            tool_name=tool.name,
            arguments=arguments,
            policy=policy,
            tool_source_reference=json.dumps({"agent": item.agent.name}),
        )

    def _source_call(
        self, turn: AgentTurnContext, item: ToolApprovalItem
    ) -> DeferredToolCall | None:
        """The DeferredToolCall of a tool source's tool that the root agent called."""
        raw = item.raw_item
        call_id, name, arguments = (raw_field(raw, key) for key in ("call_id", "name", "arguments"))
        if item.agent.name != self.agent.name or raw_field(raw, "type") != "function_call":
            return None
        if not (isinstance(call_id, str) and isinstance(name, str) and isinstance(arguments, str)):
            return None
        return self._sources.deferred_call(turn, call_id, name, arguments)


def _no_retries(run_config: RunConfig | None) -> RunConfig:
    """A copy of `run_config` whose model calls make one request each: RunModel's attempts
    are the retry policy of a model call (docs/design/retries.md). Its model settings win over
    the agents' own, so an agent's `ModelSettings.retry` is overridden too."""
    config = run_config if run_config is not None else RunConfig()
    no_retries = ModelSettings(retry=ModelRetrySettings(max_retries=0))
    settings = config.model_settings.resolve(no_retries) if config.model_settings else no_retries
    return replace(config, model_settings=settings)


async def _drain(turn: AgentTurnContext, result: RunResultStreaming) -> None:
    forwarder = StreamForwarder(turn.events, turn.heartbeat)
    try:
        async for event in result.stream_events():
            forwarder.forward(event)
    except asyncio.CancelledError:
        result.cancel()
        raise


def _source_agent(record: AgentToolCall) -> str | None:
    if not record.tool_source_reference:
        return None
    agent = json.loads(record.tool_source_reference).get("agent")
    return agent if isinstance(agent, str) else None


def _started_from(turn: AgentTurnContext, saved: TurnState) -> list[AgentMessage]:
    """The stored messages the turn's run started from (the session stores none of the turn's
    own items until it ends)."""
    if saved.history_through is None:
        return list(turn.messages)[: saved.input_count]
    history = [m for m in turn.messages if m.sequence <= saved.history_through]
    if len(history) != saved.input_count:
        raise RuntimeError(
            f"the turn's run started from {saved.input_count} stored messages through sequence "
            f"{saved.history_through}, but {len(history)} are loaded: its run state cannot be "
            "restored"
        )
    return history


def _with_original_input(
    turn: AgentTurnContext, saved: TurnState, history: Sequence[AgentMessage]
) -> dict[str, Any]:
    """The SDK run state as `RunState.to_json` wrote it, its original input put back."""
    if saved.history_through is None:
        return saved.run_state
    # Shared, cached items: the SDK copies its original input before it keeps or changes it.
    return {**saved.run_state, "original_input": stored_items(turn, history)}


def _decide_interruptions(
    state: RunState[Any, Agent[Any]], records: Sequence[AgentToolCall]
) -> dict[str, str]:
    """Approves or rejects every pending call from its final record; returns the answers the
    gated tools give for the approved ones."""
    by_id = {record.tool_call_id: record for record in records}
    answers: dict[str, str] = {}
    for item in state.get_interruptions():
        call_id = raw_field(item.raw_item, "call_id")
        record = by_id.get(call_id) if isinstance(call_id, str) else None
        if record is None or not record.is_final:
            raise RuntimeError(f"tool call {call_id!r} has no final record to resume the turn with")
        text = model_visible_result(record)
        if record.status == "rejected":
            state.reject(item, rejection_message=text)
        else:
            state.approve(item)
            answers[record.tool_call_id] = text
    return answers
