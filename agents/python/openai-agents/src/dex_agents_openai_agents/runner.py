"""The dex-agents runner for the OpenAI Agents SDK, in Step mode.

Each `run_model_step` lets the SDK make one model call (more only when the model hands off to
another agent, because the SDK runs a handoff itself and calls the next agent's model). Every
function tool is gated by `needs_approval`, so the run stops with `result.interruptions` before
any tool runs; the `RunState` is stored as the framework run state, and each tool call runs in
its own tool Step through `execute_deferred_tool_call`. The next `run_model_step` restores the
`RunState`, approves each call whose record is final (the gated tool answers with the recorded
result) or rejects it with its rejection message, and lets the SDK make the next model call.

Warm run states: when the next model Step of the turn runs on the same Worker within the hot
window, it goes on from the `RunState` the last Step kept (`result.to_state()`, the SDK's own
way to resume an interrupted run) instead of parsing the stored JSON again, whose parse grows
with the turn's history. The kept state stands for exactly the committed one
(`dex_agents.warm_states`); on any miss the state is restored from the stored JSON.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    InputGuardrailTripwireTriggered,
    MaxTurnsExceeded,
    Model,
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
from dex_agents.builtins import build_plan_note
from dex_agents.errors import DexAgentsError
from dex_agents.results import model_visible_result
from dex_agents.runner import (
    AgentTurnContext,
    AgentTurnOutcome,
    ContextSummaryRequest,
    ContextSummaryResult,
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
from dex_agents.warm_states import (
    WarmStates,
    turn_fingerprint,
    warm_runs_setting,
    warm_ttl_setting,
)
from dex_agents.warm_up import load_openai_client_async

from . import _compat
from .builtin_tools import (
    BUILT_IN_POLICY,
    built_in_tools,
    is_built_in_call,
    planning_error_formatter,
    planning_tools,
)
from .compaction import approximate_tokens, select_cutoff, summary_input
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
from .mcp_servers import AgentMcpServers
from .policy import framework_effect, framework_requires_approval
from .recorded import recorded_results
from .session_input import session_input_filter
from .stream import StreamForwarder
from .tool_sources import SourceTools
from .tool_step import run_function_tool
from .turn_state import TurnState
from .usage import run_usage, usage_since


@dataclass(frozen=True)
class RunContextRequest:
    """What a context factory is asked for: the run context of one Step.

    `tool_call_id` is set when the context is for a tool Step, and None for a model Step.
    `session_settings` are the session's settings (`AgentClient.update_session_settings`) in a
    model Step, for instance for the agent's dynamic instructions; a tool Step's request has
    none (the core does not load them for tool Steps).
    """

    flow_id: str
    turn_id: str
    tool_call_id: str | None = None
    session_settings: Mapping[str, Any] = field(default_factory=dict)


ContextFactory = Callable[[RunContextRequest], Any]
ModelResolver = Callable[[Mapping[str, Any]], str | Model | None]
"""Chooses the model of a session's model calls from its settings; None keeps the agents' own."""


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


def _metadata(result: RunResultStreaming, config: RunConfig) -> ModelCallMetadata:
    model = config.model if config.model is not None else result.last_agent.model
    response_id = result.raw_responses[-1].response_id if result.raw_responses else None
    return ModelCallMetadata(
        request_model=model if isinstance(model, str) else None,
        provider_name="openai",
        response_id=response_id,
    )


@dataclass(frozen=True)
class WarmRunState:
    """A turn's run state kept between its model Steps, and the gated root agent it ran on."""

    state: RunState[Any, Agent[Any]]
    root: Agent[Any]


class OpenAIAgentsRunner:
    """Runs an OpenAI Agents SDK agent as a durable agent session, one model call per Step.

    `context_factory` builds the SDK run context (`RunContextWrapper.context`) of every model
    Step and tool Step; it may return an awaitable. The context is never stored. `run_config`,
    `hooks` and `max_turns` are passed to the SDK's Runner; `max_turns` counts the model calls
    of one session turn and is unlimited by default.

    `tool_sources` are tool sources such as `dex_agents.mcp.McpToolSource`, whose tools the
    root agent gets besides its own (as it would get the tools of its `mcp_servers`). Each model
    Step lists them (cached after the first listing); each call runs in its tool Step through
    its source, which sends the idempotency key. The MCP servers of the agents themselves
    (`Agent(mcp_servers=[...])`) are listed at the first Step of each Worker process, and
    their tools are deferred and run in tool Steps the same way (`mcp_servers.py`).

    `resolve_model(session_settings)` chooses the model of the session's model calls (a model
    name or an SDK `Model`) from its settings at each model Step, as `RunConfig.model`, which
    every agent of the run then uses; None keeps the run config's or the agents' own.
    Instructions follow the settings through the SDK's dynamic instructions: the run context
    request of a model Step carries them (`RunContextRequest.session_settings`).

    `framework_retries` (off by default) lets the SDK retry a failed model request by itself
    inside one RunModel attempt. Off, the model Step runs with a copy of `run_config` whose
    model settings carry `retry=ModelRetrySettings(max_retries=0)`, which turns off the SDK's
    runner-managed retries and its OpenAI client's own retries for that request (the client
    and the given `run_config` are not changed): each RunModel attempt sends one request, and
    RunModel's attempts, recorded in the Step history, are the retries.

    Plan mode works (`supports_plan_mode`): a planning turn's root agent offers only
    write_todos and hands off to no one.

    `warm_runs` (None: DEX_AGENTS_WARM_RUNS, else 64; 0 turns it off) is how many sessions'
    run states this runner keeps in memory between the model Steps of a turn, one per session,
    the least recently used dropped first; each is kept at most `warm_ttl` seconds (None: the
    Worker's hot window as DEX_AGENTS_HOT_WINDOW_SECONDS sets it). See the module's docstring.
    """

    supports_plan_mode = True

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
        resolve_model: ModelResolver | None = None,
        warm_runs: int | None = None,
        warm_ttl: float | None = None,
    ) -> None:
        self.agent = agent
        self._graph = GatedAgentGraph(agent)
        self._mcp = AgentMcpServers(agent)
        self._sources = SourceTools(tool_sources)
        self._context_factory = context_factory
        self._run_config = run_config
        # What the model Step runs with; tool Steps get the application's run_config as is.
        self._model_run_config = (
            (run_config or RunConfig()) if framework_retries else _no_retries(run_config)
        )
        self._resolve_model = resolve_model
        self._hooks = hooks
        self._max_turns = max_turns
        self._warm: WarmStates[WarmRunState] = WarmStates(
            warm_runs_setting(warm_runs, os.environ), warm_ttl_setting(warm_ttl, os.environ)
        )

    @property
    def warm_runs(self) -> WarmStates[WarmRunState]:
        """The run states this runner keeps between a turn's model Steps."""
        return self._warm

    def build_user_message(self, text: str) -> FrameworkMessage:
        return user_message(text)

    async def warm_up(self) -> None:
        """Loads what the first model call would (`WarmUpRunner`): the root agent's model as
        the run config's provider makes it, the OpenAI SDK resources of its client, and the
        HTTP client's connection stack. No request is sent."""
        await load_openai_client_async(_compat.model_openai_client(self._root_model()))

    def _root_model(self) -> object:
        config = self._step_run_config({})
        chosen = config.model if config.model is not None else self.agent.model
        if chosen is not None and not isinstance(chosen, str):
            return chosen
        return config.model_provider.get_model(chosen)

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        context = await self._context(
            RunContextRequest(turn.flow_id, turn.turn_id, session_settings=turn.session_settings)
        )
        await self._list_mcp_tools(context)
        root = await self._turn_root(turn)
        config = self._step_run_config(turn.session_settings, turn)
        run_input: list[Any] | RunState[Any, Agent[Any]]
        if turn.framework_run_state is None:
            run_input, answers = replay_items(turn.messages), {}
            input_count, earlier = len(run_input), AgentUsage()
            history = list(turn.messages)
        else:
            saved = TurnState.from_json(turn.framework_run_state)
            history = _started_from(turn, saved)
            run_input = await self._restored(turn, root, saved, history, context)
            answers = _decide_interruptions(run_input, turn.tool_calls)
            earlier = saved.usage
            # A compaction since the state was saved leaves the summarized messages out of
            # the rebuilt input, so the turn's items start earlier.
            input_count = len(history) if saved.history_through is not None else saved.input_count
        # The run loop task copies this context when it starts, so the answers reach its tools.
        with recorded_results(answers):
            result = self._run_streamed(root, run_input, context, config)
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
                    turn, root, result, input_count, history, total, usage, config
                )
            except UnsupportedInterruptionError as error:
                return TurnCompleted(usage=usage, turn_error=str(error))
        turn_items = _own_items(result, input_count)
        return TurnCompleted(
            new_messages=project_items(turn_items),
            usage=usage,
            model_call_metadata=_metadata(result, config),
        )

    async def execute_deferred_tool_call(
        self, execution: DeferredToolExecution
    ) -> ToolExecutionResult:
        record = execution.tool_call
        source = self._sources.owner(record)
        if source is not None:
            return await run_source_call(source, execution)
        agent_name = _source_agent(record) or self.agent.name
        context = await self._context(
            RunContextRequest(execution.flow_id, execution.turn_id, record.tool_call_id)
        )
        await self._list_mcp_tools(context)
        found = self._graph.original_function_tool(agent_name, record.tool_name)
        if found is None:
            raise ToolExecutionError(
                f"agent {agent_name!r} has no function tool named {record.tool_name!r}"
            )
        agent, tool = found
        if _compat.mcp_tool_binding(tool) is not None:
            return await self._mcp.run(agent, tool, execution, context, self._run_config)
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

    # -- compaction (ContextCompactionRunner) ------------------------------------------------

    def estimate_input_tokens(self, turn: AgentTurnContext) -> int:
        """About four characters a token of what the next model call sends: the instructions
        (when they are a str), the summary, the plan note, the stored history, the turn's
        items so far with the recorded results, and the offered tools' schemas."""
        parts: list[object] = [
            self.agent.instructions if isinstance(self.agent.instructions, str) else "",
            turn.context_summary.text if turn.context_summary else "",
            build_plan_note(turn.plan, turn.interaction_mode) or "",
            stored_items(turn, turn.messages),
        ]
        if turn.framework_run_state is not None:
            items = TurnState.from_json(turn.framework_run_state).turn_items
            records = {record.tool_call_id: record for record in turn.tool_calls}
            parts.append(items)
            parts += [
                model_visible_result(records[call_id])
                for call_id in function_call_names(items)
                if call_id in records and records[call_id].is_final
            ]
        tools = [*self._graph.root.tools, *built_in_tools(turn.enabled_built_in_tools)]
        tools += self._sources.offered_tools()
        parts += [_tool_schema(tool) for tool in tools]
        return sum(approximate_tokens(part) for part in parts)

    def select_compaction_cutoff(
        self, turn: AgentTurnContext, retained_token_budget: int
    ) -> int | None:
        """The earliest cut of the stored history whose later messages fit in the budget (a
        cut never separates a call from its output)."""
        return select_cutoff(turn, retained_token_budget)

    async def summarize_context(self, request: ContextSummaryRequest) -> ContextSummaryResult:
        """One model call with the session's model (the runner's agent's model settings, no
        tools, no instructions) on a transcript of the summarized messages."""
        config = replace(
            self._step_run_config(request.session_settings),
            input_guardrails=None,
            output_guardrails=None,
            call_model_input_filter=None,
        )
        settings = replace(self.agent.model_settings, tool_choice=None, parallel_tool_calls=None)
        summarizer: Agent[Any] = Agent(
            name=self.agent.name, model=self.agent.model, model_settings=settings
        )
        result = await Runner.run(
            summarizer,
            summary_input(request, settings.max_tokens),  # type: ignore[arg-type]
            max_turns=1,
            run_config=config,
        )
        return ContextSummaryResult(
            text=str(result.final_output).strip(),
            usage=run_usage(result.context_wrapper.usage),
            model_call_metadata=ModelCallMetadata(
                request_model=_model_name(config.model, self.agent.model),
                provider_name="openai",
                response_id=result.last_response_id,
            ),
        )

    # -- internals ---------------------------------------------------------------------------

    async def _list_mcp_tools(self, context: Any) -> None:
        """Lists the agents' MCP servers at the first Step of this process, and gives the gated
        graph their tools (once: the graph changes no agent other runs use)."""
        if not self._mcp.present:
            return
        tools = await self._mcp.tools(RunContextWrapper(context=context))
        if self._graph.mcp_tools is not tools:
            self._graph = GatedAgentGraph(self.agent, mcp_tools=tools)

    async def _turn_root(self, turn: AgentTurnContext) -> Agent[Any]:
        """The gated root agent this turn runs: a planning turn's offers only write_todos;
        another's offers the enabled built-ins (in place of its own tools of those names,
        on every agent of the graph) and the tool sources' tools."""
        if turn.interaction_mode == "planning":
            return self._graph.planning_root(planning_tools(turn))
        enabled = turn.enabled_built_in_tools
        taken = self._graph.root_tool_names() | set(enabled)
        source_tools = await self._sources.function_tools(taken, turn.tool_calls)
        return self._graph.variant(source_tools, built_in_tools(enabled)).root

    def _step_run_config(
        self, session_settings: Mapping[str, Any], turn: AgentTurnContext | None = None
    ) -> RunConfig:
        """The model Step's run config: the session's model, and the session's items added
        to each model call's input."""
        config = self._model_run_config
        if self._resolve_model is not None:
            chosen = self._resolve_model(session_settings)
            if chosen is not None:
                config = replace(config, model=chosen)
        if turn is not None and turn.interaction_mode == "planning":
            config = replace(
                config,
                tool_not_found_behavior="return_error_to_model",
                tool_error_formatter=planning_error_formatter(config.tool_error_formatter),
            )
        if turn is not None:
            added = session_input_filter(turn, config.call_model_input_filter)
            if added is not None:
                config = replace(config, call_model_input_filter=added)
        return config

    async def _context(self, request: RunContextRequest) -> Any:
        if self._context_factory is None:
            return None
        context = self._context_factory(request)
        if inspect.isawaitable(context):
            context = await context
        return context

    async def _restored(
        self,
        turn: AgentTurnContext,
        root: Agent[Any],
        saved: TurnState,
        history: Sequence[AgentMessage],
        context: Any,
    ) -> RunState[Any, Agent[Any]]:
        """The turn's run state: the one the last Step kept on this Worker when it stands for
        the committed state, else restored from the stored JSON."""
        if self._warm.enabled:
            wanted = partial(turn_fingerprint, turn, turn.framework_run_state)
            # A root rebuilt since (a tool source's listing changed) is the cold path's.
            kept = self._warm.take(turn.flow_id, wanted, usable=lambda kept: kept.root is root)
            if kept is not None:
                _compat.set_run_state_context(kept.state, context)
                return kept.state
        restored = await RunState.from_json(
            root,
            _with_original_input(turn, saved, history),
            context_override=RunContextWrapper(context=context),
        )
        _compat.tool_outputs_as_created(restored)
        return restored

    def _run_streamed(
        self,
        root: Agent[Any],
        run_input: list[Any] | RunState[Any, Agent[Any]],
        context: Any,
        config: RunConfig,
    ) -> RunResultStreaming:
        if isinstance(run_input, RunState):
            # The restored state keeps its own context, max_turns and current agent.
            return Runner.run_streamed(root, run_input, hooks=self._hooks, run_config=config)
        return Runner.run_streamed(
            root,
            run_input,
            context=context,
            max_turns=self._max_turns,
            hooks=self._hooks,
            run_config=config,
        )

    async def _tool_calls_requested(
        self,
        turn: AgentTurnContext,
        root: Agent[Any],
        result: RunResultStreaming,
        input_count: int,
        history: Sequence[AgentMessage],
        total: AgentUsage,
        usage: AgentUsage,
        config: RunConfig,
    ) -> ToolCallsRequested:
        calls = [
            await self._deferred_call(turn, item, result.context_wrapper)
            for item in result.interruptions
        ]
        state, turn_items = _state_and_own_items(result, input_count)
        run_state = state.to_json(context_serializer=_omit_context)
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
            turn_items=[dict(item) for item in turn_items],
            usage=total,
            history_through=history_through,
            summary_through=turn.context_summary.last_sequence if turn.context_summary else 0,
        )
        committed = saved.to_json()
        if self._warm.enabled:
            kept = WarmRunState(state, root)
            self._warm.keep(turn.flow_id, turn_fingerprint(turn, committed), kept)
        return ToolCallsRequested(
            framework_run_state=committed,
            tool_calls=calls,
            usage=usage,
            model_call_metadata=_metadata(result, config),
        )

    async def _deferred_call(
        self,
        turn: AgentTurnContext,
        item: ToolApprovalItem,
        context: RunContextWrapper[Any],
    ) -> DeferredToolCall:
        raw = item.raw_item
        call_id, name, arguments = (raw_field(raw, key) for key in ("call_id", "name", "arguments"))
        built_in = _built_in_call(turn, raw, call_id, name, arguments)
        if built_in is not None:
            return built_in
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


def _built_in_call(
    turn: AgentTurnContext, raw: Any, call_id: Any, name: Any, arguments: Any
) -> DeferredToolCall | None:
    """The call of an enabled built-in, which the session runs in its built-in Steps."""
    if raw_field(raw, "type") != "function_call" or not isinstance(name, str):
        return None
    if not is_built_in_call(turn, name):
        return None
    if not (isinstance(call_id, str) and isinstance(arguments, str)):
        return None
    return DeferredToolCall(
        tool_call_id=call_id, tool_name=name, arguments=arguments, policy=BUILT_IN_POLICY
    )


def _tool_schema(tool: object) -> object:
    """What the model is sent for a tool, as far as its size goes."""
    if isinstance(tool, FunctionTool):
        return [tool.name, tool.description, tool.params_json_schema]
    return getattr(tool, "name", "")


def _model_name(chosen: str | Model | None, agent_model: str | Model | None) -> str | None:
    model = chosen if chosen is not None else agent_model
    return model if isinstance(model, str) else None


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


def _history_to_leave_out(result: RunResultStreaming, input_count: int) -> list[Any] | None:
    """The stored items the run started from, when the SDK lets them be left out of `result`
    and they are exactly the `input_count` items before the run's own."""
    original = _compat.history_left_out(result)
    return original if original is not None and len(original) == input_count else None


def _own_items(result: RunResultStreaming, input_count: int) -> list[Any]:
    """`result.to_input_list()[input_count:]`: the run's own items, after the stored ones it
    started from, without converting those when they can be left out."""
    if _history_to_leave_out(result, input_count) is None:
        return result.to_input_list()[input_count:]
    with _compat.history_out(result):
        return result.to_input_list()


def _state_and_own_items(
    result: RunResultStreaming, input_count: int
) -> tuple[RunState[Any, Agent[Any]], list[Any]]:
    """`result.to_state()` and the run's own items, without copying or converting the history
    the run started from when it can be left out (both grew with the session)."""
    original = _history_to_leave_out(result, input_count)
    if original is None:
        return result.to_state(), result.to_input_list()[input_count:]
    with _compat.history_out(result):
        state, items = result.to_state(), result.to_input_list()
    _compat.keep_history(state, original)
    return state, items


def _source_agent(record: AgentToolCall) -> str | None:
    if not record.tool_source_reference:
        return None
    agent = json.loads(record.tool_source_reference).get("agent")
    return agent if isinstance(agent, str) else None


def _started_from(turn: AgentTurnContext, saved: TurnState) -> list[AgentMessage]:
    """The stored messages the turn's run started from (the session stores none of the turn's
    own items until it ends), less those a compaction summarized since."""
    if saved.history_through is None:
        return list(turn.messages)[: saved.input_count]
    history = [m for m in turn.messages if m.sequence <= saved.history_through]
    summarized = turn.context_summary.last_sequence if turn.context_summary else 0
    if summarized == saved.summary_through and len(history) != saved.input_count:
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
