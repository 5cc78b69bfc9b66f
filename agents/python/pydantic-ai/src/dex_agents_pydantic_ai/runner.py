"""PydanticAiRunner: a Pydantic AI agent in Step mode.

Each `run_model_step` is one Pydantic AI run that makes exactly one model call: every tool call
the model makes is deferred (DeferredToolRequests), the turn's messages go into the run state as
ModelMessagesTypeAdapter JSON, and the next model step feeds the final tool results back with
DeferredToolResults. Each tool call runs later, in its own Step, through the agent's own tool.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Generic, TypeVar

from dex_agents import texts
from dex_agents.results import model_visible_result
from dex_agents.runner import (
    AgentTurnContext,
    AgentTurnOutcome,
    ContextSummaryRequest,
    ContextSummaryResult,
    DeferredToolCall,
    DeferredToolExecution,
    FrameworkMessage,
    ToolCallsRequested,
    ToolExecutionResult,
    TurnCompleted,
    TurnContinued,
)
from dex_agents.texts import OUTCOME_UNKNOWN_TEXT
from dex_agents.tool_context import running_tool
from dex_agents.tool_source import ToolSource, run_source_call
from dex_agents.types import AgentToolCall
from dex_agents.warm_states import turn_fingerprint, warm_runs_setting, warm_ttl_setting
from dex_agents.warm_up import load_openai_client_async
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied, UserError
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    SystemPromptPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, infer_model
from pydantic_ai.output import OutputSpec
from pydantic_ai.settings import ModelSettings

from . import _compat, compaction
from .deferral import ToolCatalog, deferred_tool_calls
from .features import (
    built_in_call,
    built_in_toolset,
    check_no_built_in_names,
    offered_built_ins,
    planning,
    with_turn_notes,
)
from .messages import extend_history, to_framework_messages, user_message
from .model_step import (
    ModelCallArguments,
    ModelCallOutcome,
    call_metadata,
    open_model_call,
    run_model_call,
    usage_of,
)
from .run_state import RunState
from .sequential import barrier_groups, hold, next_group
from .tool_results import DEFAULT_MAX_TOOL_RESULT_BYTES, decode_tool_result, readable_output
from .tool_sources import SourceOffer, SourceTools
from .tool_step import ToolRun, ToolStepRun, finish_call
from .warm import WarmEntry, WarmRuns

DepsT = TypeVar("DepsT")

RETRY_ROUNDS_EXCEEDED = (
    "the model kept making invalid tool calls or output: {rounds} retry requests in a row"
)


@dataclass(frozen=True)
class DepsContext:
    """What the deps factory knows about the Step it builds deps for."""

    flow_id: str
    turn_id: str
    tool_call: AgentToolCall | None = None
    """The call a tool Step runs; None for a model step."""
    session_settings: Mapping[str, Any] = field(default_factory=dict)
    """The turn's session settings (a tool Step's too, from its turn)."""


DepsFactory = Callable[[DepsContext], DepsT | Awaitable[DepsT]]
ModelResolver = Callable[[Mapping[str, Any]], Model | str | None]
"""Session settings -> the model of a model call (None: the runner's or the agent's model)."""


class PydanticAiRunner(Generic[DepsT]):
    """Runs an existing Pydantic AI agent, unchanged, one model call per RunModel Step."""

    supports_plan_mode = True
    tool_steps_read_turn = True
    """A tool Step runs its call in a run over the turn's history (its tool sees the
    conversation in `RunContext.messages`), or in the turn's warm run."""

    def __init__(
        self,
        agent: Agent[DepsT, Any],
        *,
        deps_factory: DepsFactory[DepsT] | None = None,
        model: Model | str | None = None,
        stream: bool = True,
        max_retry_rounds: int = 3,
        framework_retries: bool = False,
        tool_sources: Sequence[ToolSource] = (),
        resolve_model: ModelResolver | None = None,
        max_tool_result_bytes: int = DEFAULT_MAX_TOOL_RESULT_BYTES,
        warm_runs: int | None = None,
        warm_ttl: float | None = None,
    ) -> None:
        """
        Args:
            agent: The agent. Its tools, toolsets, instructions, system prompts, output type,
                model settings and capabilities all keep working.
            deps_factory: Builds the run's deps in every model and tool Step (sync or async).
            model: The model, for an agent built without one.
            stream: Stream the model call, writing text_delta and reasoning_delta events.
            max_retry_rounds: Model calls in a row that may end in a retry request (invalid
                tool arguments, output that fails validation) before the turn fails.
            framework_retries: Let the model's SDK client retry a failed request by itself
                inside one RunModel attempt. Off by default: each model call is run with
                `ModelSettings(max_retries=0)` (run settings win over the agent's and the
                model's), so a RunModel attempt sends one request and RunModel's attempts,
                recorded in the Step history, are the only retries. The client itself is not
                changed. True leaves retries as the agent, model and client configure them.
            tool_sources: Tool sources such as `dex_agents.mcp.McpToolSource`, whose tools the
                agent gets in every run besides its own (as Pydantic AI's run `toolsets`). Each
                model step lists them (cached after the first listing); each call runs in its
                tool Step through its source.
            resolve_model: Chooses the model of each model call (and of the compaction
                summary) from the turn's session settings, so `update_session_settings`
                switches it from the next turn; None keeps `model`, else the agent's.
            max_tool_result_bytes: The largest result a tool Step stores (5 MiB by default),
                counted on its stored form: files a tool returns are stored as base64. A larger
                result fails the call with a message the model reads, saying the limit.
            warm_runs: Sessions whose turn's Pydantic AI run this runner keeps open between
                the model steps of a turn (warm.py); 0 turns warm runs off. None reads
                DEX_AGENTS_WARM_RUNS (64 when unset). Each session has at most one.
            warm_ttl: Seconds a warm run waits for its turn's next model step before it is
                closed; None: the Worker's hot window as DEX_AGENTS_HOT_WINDOW_SECONDS sets it
                (10 s by default). Give a Worker built with another `hot_window` the same.
        """
        if max_tool_result_bytes <= 0:
            raise ValueError("max_tool_result_bytes must be positive")
        check_no_built_in_names(agent)
        self._agent = agent
        self._deps_factory = deps_factory
        self._model = model
        self._stream = stream
        self._max_retry_rounds = max_retry_rounds
        self._framework_retries = framework_retries
        self._output_type = deferrable_output_type(agent)
        self._sources = SourceTools(tool_sources)
        self._resolve_model = resolve_model
        self._max_tool_result_bytes = max_tool_result_bytes
        self._warm = WarmRuns(
            warm_runs_setting(warm_runs, os.environ), warm_ttl_setting(warm_ttl, os.environ)
        )

    @property
    def agent(self) -> Agent[DepsT, Any]:
        return self._agent

    @property
    def warm_runs(self) -> WarmRuns:
        """The turns' runs this runner keeps open between model steps (warm.py)."""
        return self._warm

    def build_user_message(self, text: str) -> FrameworkMessage:
        return user_message(text)

    async def warm_up(self) -> None:
        """Loads what the first model call would (`WarmUpRunner`): the model (a name is
        resolved as Pydantic AI resolves it), the OpenAI SDK resources of its client, and the
        HTTP client's connection stack. No request is sent."""
        model = self._model_for({})
        model = model if model is not None else self._agent.model
        if model is None:
            return
        resolved = infer_model(model) if isinstance(model, str) else model
        await load_openai_client_async(getattr(resolved, "client", None))

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        state = RunState.from_json(turn.framework_run_state)
        if state.held:  # the next group behind a sequential call: no model call
            group, held = next_group(state.held)
            return ToolCallsRequested(replace(state, held=held).to_json(), group)
        if self._warm.enabled:
            warm = await self._resume_warm(turn, state)
            if warm is not None:
                return warm
        deps = await self._deps(
            DepsContext(turn.flow_id, turn.turn_id, session_settings=turn.session_settings)
        )
        model = self._model_for(turn.session_settings)
        history = await self._run_history(turn, state, deps, model)
        # A planning turn offers only write_todos: not the agent's tools, nor the sources'.
        only = frozenset(offered_built_ins(turn)) if planning(turn) else None
        catalog = ToolCatalog(defer=True, only=only)
        offer = SourceOffer() if planning(turn) else await self._sources.offer()
        built_ins = built_in_toolset(turn)
        toolsets = [*offer.toolsets, *([built_ins] if built_ins else [])]
        arguments = ModelCallArguments(
            history=history,
            deferred_tool_results=_tool_results(state, turn.tool_calls),
            deps=deps,
            model=model,
            catalog=catalog,
            toolsets=toolsets,
        )
        if self._warm.enabled and not toolsets and not planning(turn):
            return await self._start_warm(turn, state, arguments, offer)
        call = await run_model_call(
            self._agent,
            history=history,
            deferred_tool_results=arguments.deferred_tool_results,
            output_type=self._output_type,
            deps=deps,
            model=model,
            conversation_id=turn.flow_id,
            catalog=catalog,
            events=turn.events,
            stream=self._stream,
            model_settings=self._run_model_settings(),
            toolsets=toolsets,
        )
        return self._outcome(turn, state, call, catalog, offer, model)

    async def _resume_warm(
        self, turn: AgentTurnContext, state: RunState
    ) -> AgentTurnOutcome | None:
        """The next model response of the turn's warm run, if this Worker holds one that
        stands for exactly the committed run state; None: the cold path."""
        entry = self._warm.take(
            turn.flow_id,
            partial(turn_fingerprint, turn, turn.framework_run_state),
            usable=lambda entry: not entry.task.done(),
        )
        if entry is None:
            return None
        results = _tool_results(state, turn.tool_calls)
        if results is None:
            entry.close()
            return None
        assert entry.context is not None  # set when it was parked
        catalog, offer, model = entry.context
        try:
            deps = await self._deps(
                DepsContext(turn.flow_id, turn.turn_id, session_settings=turn.session_settings)
            )
        except BaseException:
            entry.close()
            raise
        call = await self._warm.resume(entry, results, deps, turn.events)
        outcome = self._outcome(turn, state, call, catalog, offer, model)
        self._park_warm(turn, outcome, entry)
        return outcome

    async def _start_warm(
        self,
        turn: AgentTurnContext,
        state: RunState,
        arguments: ModelCallArguments,
        offer: SourceOffer,
    ) -> AgentTurnOutcome:
        """The cold path's model call, in a run kept open for the turn's next model step."""
        opener = partial(
            open_model_call,
            self._agent,
            history=arguments.history,
            deferred_tool_results=arguments.deferred_tool_results,
            output_type=self._output_type,
            deps=arguments.deps,
            model=arguments.model,
            conversation_id=turn.flow_id,
            catalog=arguments.catalog,
            model_settings=self._run_model_settings(),
            toolsets=arguments.toolsets,
        )
        call, entry = await self._warm.start(opener, turn.events, self._stream)
        outcome = self._outcome(turn, state, call, arguments.catalog, offer, arguments.model)
        if entry is not None:
            entry.context = (arguments.catalog, offer, arguments.model)
            self._park_warm(turn, outcome, entry)
        return outcome

    def _park_warm(
        self, turn: AgentTurnContext, outcome: AgentTurnOutcome, entry: WarmEntry
    ) -> None:
        if not isinstance(outcome, ToolCallsRequested) or entry.task.done():
            entry.close()
            return
        state = RunState.from_json(outcome.framework_run_state)
        if state.held:
            entry.close()  # a sequential barrier: the next model step hands over a group
            return
        entry.lone_call_id = _lone_call_id(state.messages)
        self._warm.keep(turn.flow_id, turn_fingerprint(turn, outcome.framework_run_state), entry)

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        source = self._sources.owner(call.tool_call)
        if source is not None:
            return await run_source_call(source, call)
        settings = call.turn.session_settings if call.turn is not None else {}
        deps = await self._deps(
            DepsContext(
                call.flow_id, call.turn_id, tool_call=call.tool_call, session_settings=settings
            )
        )
        # dex-agents ran the approval the policy asked for; the tool sees it as approved.
        approved = call.tool_call.requires_approval
        entry = self._warm_tool_entry(call)
        with running_tool(call):
            if entry is not None:
                return await self._run_tool_warm(call, entry, deps, approved)
            run = await self._tool_step_run(call, deps)
            return await run.call(call.tool_call, approved=approved)

    async def _tool_step_run(self, call: DeferredToolExecution, deps: Any) -> ToolStepRun:
        """The cold path's run of a call: a new run over the turn's history as its model Step
        built it (without the turn, the response that made the call alone)."""
        turn = call.turn
        # No model is called; Pydantic AI needs one to run: the one the model Step used.
        model = self._model_for(turn.session_settings if turn is not None else {})
        history = None
        if turn is not None and turn.framework_run_state is not None:
            state = RunState.from_json(turn.framework_run_state)
            history = await self._run_history(turn, state, deps, model)
        return ToolStepRun(
            self._agent,
            deps,
            self._output_type,
            model,
            call.flow_id,
            self._max_tool_result_bytes,
            history,
        )

    def _warm_tool_entry(self, call: DeferredToolExecution) -> WarmEntry | None:
        """The turn's warm run, when it stands for the committed run state and its last
        response's lone call is this one; else None (the cold path). It stays the turn's
        entry, for the next model step."""
        turn = call.turn
        if not self._warm.enabled or turn is None:
            return None
        tool_call_id = call.tool_call.tool_call_id
        return self._warm.lend(
            turn.flow_id,
            turn_fingerprint(turn, turn.framework_run_state),
            usable=lambda entry: entry.lone_call_id == tool_call_id and not entry.task.done(),
        )

    async def _run_tool_warm(
        self, call: DeferredToolExecution, entry: WarmEntry, deps: Any, approved: bool
    ) -> ToolExecutionResult:
        """The call run in the turn's warm run. A run that ended (the call deferred) or raised
        leaves the cache before the Step goes on, so the next model step runs cold; a second
        attempt of the call runs cold too."""
        flow_id = call.flow_id
        declared = entry.context[0].tools.get(call.tool_call.tool_name) if entry.context else None
        # A tool that declares approval is run approved at once: the cold path's second run.
        approved = approved or (declared is not None and declared.kind == "unapproved")
        runs = 0

        async def attempt(record: AgentToolCall, approved: bool) -> ToolRun:
            nonlocal runs
            runs += 1
            if runs > 1:
                return await (await self._tool_step_run(call, deps)).attempt(record, approved)
            try:
                ran = await self._warm.run_tool(entry, record, approved, deps)
            except BaseException:
                self._warm.drop(flow_id)
                raise
            if ran.return_part is None:
                self._warm.drop(flow_id)
            return ran

        try:
            return await finish_call(call.tool_call, approved, attempt, self._max_tool_result_bytes)
        finally:
            # From the call's end, as from a model step's; a dropped entry is not renewed.
            self._warm.renew(flow_id, entry)

    async def build_unfinished_turn_messages(
        self, turn: AgentTurnContext
    ) -> Sequence[FrameworkMessage]:
        """The turn's transcript so far, with a result for each tool call it deferred last."""
        state = RunState.from_json(turn.framework_run_state)
        messages = list(state.messages)
        records = {record.tool_call_id: record for record in turn.tool_calls}
        held = {entry["tool_call_id"]: entry["tool_name"] for entry in state.held}
        results = [
            _result_parts(records[tool_call_id])
            if tool_call_id in records
            else (_not_run_part(tool_call_id, held[tool_call_id]), None)
            for tool_call_id in state.pending_tool_call_ids
            if tool_call_id in records or tool_call_id in held
        ]
        # As Pydantic AI orders them: the tool results, then ToolReturn.content's user parts.
        parts: list[ModelRequestPart] = [part for part, _ in results]
        parts += [user for _, user in results if user is not None]
        if parts:
            messages.append(ModelRequest(parts=parts))
        return to_framework_messages(messages)

    def _outcome(
        self,
        turn: AgentTurnContext,
        state: RunState,
        call: ModelCallOutcome,
        catalog: ToolCatalog,
        offer: SourceOffer,
        model: Model | str | None,
    ) -> AgentTurnOutcome:
        items = [*state.messages, *call.new_messages]
        usage = usage_of(call.response)
        metadata = call_metadata(call.response, self._request_model(model))
        output_tools = frozenset(catalog.output_tool_names)
        if call.next_request is not None:
            items.append(call.next_request)
            rounds = state.retry_rounds + 1
            if rounds > self._max_retry_rounds:
                return TurnCompleted(
                    new_messages=to_framework_messages(items, output_tools),
                    usage=usage,
                    model_call_metadata=metadata,
                    turn_error=RETRY_ROUNDS_EXCEEDED.format(rounds=rounds),
                )
            return TurnContinued(
                framework_run_state=RunState(items, (), rounds).to_json(),
                usage=usage,
                model_call_metadata=metadata,
            )
        if isinstance(call.output, DeferredToolRequests):
            made = call.response.tool_calls if call.response else []
            order = [part.tool_call_id for part in made]
            source_call = partial(_deferred_call, offer, turn)
            tool_calls = deferred_tool_calls(call.output, catalog.tools, turn, order, source_call)
            pending = tuple(tool_call.tool_call_id for tool_call in tool_calls)
            groups = barrier_groups(tool_calls, partial(_is_sequential, catalog))
            return ToolCallsRequested(
                framework_run_state=RunState(items, pending, held=hold(groups)).to_json(),
                tool_calls=groups[0],
                usage=usage,
                model_call_metadata=metadata,
            )
        return TurnCompleted(
            new_messages=to_framework_messages(items, output_tools),
            usage=usage,
            model_call_metadata=metadata,
        )

    async def _deps(self, context: DepsContext) -> Any:
        if self._deps_factory is None:
            return None
        deps = self._deps_factory(context)
        if inspect.isawaitable(deps):
            return await deps
        return deps

    async def _run_history(
        self, turn: AgentTurnContext, state: RunState, deps: Any, model: Model | str | None
    ) -> list[ModelMessage]:
        """A run's history: the stored messages with the turn's notes, then the turn's own so
        far, the agent's system prompts first."""
        stored = turn.folded(extend_history)
        return await self._with_system_prompt(
            [*with_turn_notes(turn, stored.for_run()), *state.messages],
            stored.has_system_prompt or _has_system_prompt(state.messages),
            deps,
            model,
        )

    async def _with_system_prompt(
        self,
        history: list[ModelMessage],
        has_system_prompt: bool,
        deps: Any,
        model: Model | str | None,
    ) -> list[ModelMessage]:
        """The run's history (the stored messages, then the turn's own so far) with the
        agent's system prompts first, as a Pydantic AI run puts them on a new history.

        Stored messages never hold them, so each model call uses the prompts of the code that
        runs it.
        """
        if has_system_prompt:
            return history
        parts = await self._agent.system_prompt_parts(
            deps=deps, model=model, message_history=history
        )
        if not parts:
            return history
        first = history[0] if history else None
        if isinstance(first, ModelRequest):
            return [replace(first, parts=[*parts, *first.parts]), *history[1:]]
        return [ModelRequest(parts=list(parts)), *history]

    def _run_model_settings(self) -> ModelSettings | None:
        """RunModel's attempts are the retry policy of a model call, so the SDK client sends
        each attempt's request once (docs/design/retries.md). A new dict per run: Pydantic AI's
        models may change the settings they are given."""
        return None if self._framework_retries else ModelSettings(max_retries=0)

    def _model_for(self, session_settings: Mapping[str, Any]) -> Model | str | None:
        """The model of a call: resolve_model's choice, else the runner's model (None lets
        the agent use its own)."""
        if self._resolve_model is not None:
            chosen = self._resolve_model(session_settings)
            if chosen is not None:
                return chosen
        return self._model

    def _request_model(self, model: Model | str | None) -> str | None:
        model = model or self._agent.model
        if isinstance(model, Model):
            return model.model_name
        return model

    # -- compaction (ContextCompactionRunner) -------------------------------------------------

    def estimate_input_tokens(self, turn: AgentTurnContext) -> int:
        """An estimate of the next model call's input from its text (about 4 characters a
        token): the history after the summary, the turn's run state and its tool results."""
        state = RunState.from_json(turn.framework_run_state)
        stored = turn.folded(extend_history)
        history = [*with_turn_notes(turn, stored.messages), *state.messages]
        pending = set(state.pending_tool_call_ids)
        results = [
            readable_output(model_visible_result(record))
            for record in turn.tool_calls
            if record.tool_call_id in pending and record.is_final
        ]
        return compaction.history_tokens(history) + sum(map(compaction.text_tokens, results))

    def select_compaction_cutoff(
        self, turn: AgentTurnContext, retained_token_budget: int
    ) -> int | None:
        """The earliest cut whose later messages fit the budget, never between a tool call
        and its result (`dex_agents.runner.earliest_cut_within_budget`)."""
        return compaction.select_cutoff(turn.messages, retained_token_budget)

    async def summarize_context(self, request: ContextSummaryRequest) -> ContextSummaryResult:
        """One model request, with the model this session's calls use."""
        model = self._model_for(request.session_settings) or self._agent.model
        if model is None:
            raise UserError("dex-agents-pydantic-ai: compaction needs a model to summarize with")
        response = await compaction.summarize(model, request, self._run_model_settings())
        return ContextSummaryResult(
            text=compaction.response_text(response),
            usage=usage_of(response),
            model_call_metadata=call_metadata(response, self._request_model(model)),
        )


def deferrable_output_type(agent: Agent[Any, Any]) -> OutputSpec[Any] | None:
    """The agent's output type plus DeferredToolRequests; None when it already has it."""
    spec = agent.output_type
    items: list[Any] = list(spec) if isinstance(spec, list | tuple) else [spec]
    if DeferredToolRequests in items:
        return None
    # Pydantic AI refuses a run output type when the agent has output validators.
    if _compat.has_output_validators(agent):
        raise UserError(
            "dex-agents-pydantic-ai: an agent with output validators must list "
            "DeferredToolRequests in its output_type, e.g. output_type=[MyOutput, "
            "DeferredToolRequests]"
        )
    return [*items, DeferredToolRequests]


def _has_system_prompt(messages: Sequence[ModelMessage]) -> bool:
    return any(
        isinstance(part, SystemPromptPart)
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
    )


def _deferred_call(
    offer: SourceOffer, turn: AgentTurnContext, tool_call_id: str, name: str, arguments: str
) -> DeferredToolCall | None:
    """An enabled built-in's call (built-ins win over a source's tool of the same name), or
    the offering source's, or None for the agent's own tools."""
    return built_in_call(turn, tool_call_id, name, arguments) or offer.deferred_call(
        turn, tool_call_id, name, arguments
    )


def _tool_results(state: RunState, records: Sequence[AgentToolCall]) -> DeferredToolResults | None:
    """The final records of the calls the last response deferred, as the model sees them."""
    if not state.pending_tool_call_ids:
        return None
    by_id = {record.tool_call_id: record for record in records}
    results = DeferredToolResults()
    for tool_call_id in state.pending_tool_call_ids:
        record = by_id.get(tool_call_id)
        if record is None:
            raise RuntimeError(f"no tool call record for deferred call {tool_call_id!r}")
        text = model_visible_result(record)
        native = decode_tool_result(record.output) if record.status == "succeeded" else None
        if record.status == "rejected":
            results.approvals[tool_call_id] = ToolDenied(text)
        elif native is not None:
            # The tool's whole result: Pydantic AI builds the parts it builds for a ToolReturn.
            results.calls[tool_call_id] = native.as_tool_return()
        else:
            results.calls[tool_call_id] = text
    return results


def _lone_call_id(messages: Sequence[ModelMessage]) -> str | None:
    """The ID of the last response's tool call when it made exactly one."""
    last = next((m for m in reversed(messages) if isinstance(m, ModelResponse)), None)
    calls = last.tool_calls if last is not None else []
    return calls[0].tool_call_id if len(calls) == 1 else None


def _is_sequential(catalog: ToolCatalog, tool_name: str) -> bool:
    tool_def = catalog.tools.get(tool_name)
    return tool_def is not None and tool_def.sequential


def _not_run_part(tool_call_id: str, tool_name: str) -> ToolReturnPart:
    """A held call's result when the turn ended before it was handed over."""
    return ToolReturnPart(
        tool_name=tool_name, content=texts.TOOL_CALL_HELD_NOT_RUN, tool_call_id=tool_call_id
    )


def _result_parts(record: AgentToolCall) -> tuple[ToolReturnPart, UserPromptPart | None]:
    """A final record's tool result part, and the user part of its ToolReturn.content."""
    native = decode_tool_result(record.output) if record.status == "succeeded" else None
    if native is not None:
        return native.return_part, native.user_part
    text = model_visible_result(record) if record.is_final else OUTCOME_UNKNOWN_TEXT
    part = ToolReturnPart(
        tool_name=record.tool_name,
        content=text,
        tool_call_id=record.tool_call_id,
        outcome="denied" if record.status == "rejected" else "success",
    )
    return part, None
