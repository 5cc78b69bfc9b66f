"""The dex-agents runner for Google ADK agents, in Step mode.

Every tool of every agent of the tree is gated (see `gate.py`), and the app is resumable, so
each `run_model_step` runs the invocation until the model answers or asks for tools: one model
call, after which ADK pauses on the gates' `adk_request_confirmation` calls. A transfer to
another agent, or a workflow agent's next child, would make the next model call in the same
Step: the runner's plugin ends the Step there (`step_boundary.py`), and the next Step resumes
the invocation with the agent ADK finds in the turn's events. The turn's events are the
framework run state; the next `run_model_step` restores them into an in-memory session and
resumes the invocation with one confirmation per call, each carrying the call's recorded
result and what its tool did to its context (`tool_actions.py`). Each tool call runs its real
tool in `execute_deferred_tool_call`, as a tool of the agent that made the call; a toolset's
tool is found there by listing the toolset again, on the turn's invocation.

What the session offers (built-in tools, plan mode, session settings, the context summary) is
given to ADK in `session_features.py`; compaction is `compaction.py`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Final

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
    ToolExecutionError,
    ToolExecutionResult,
    ToolPolicy,
    TurnCompleted,
    TurnContinued,
)
from dex_agents.tool_context import running_tool
from google.adk.agents import BaseAgent, InvocationContext, LlmAgent, RunConfig
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.agents.run_config import StreamingMode
from google.adk.apps import App, ResumabilityConfig
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.tools.mcp_tool.mcp_tool import McpTool
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from . import compaction
from . import texts as adk_texts
from .artifacts import ArtifactTooLargeError, StepArtifactService, attach_saved
from .confirmations import confirmation_answers, pending_confirmations
from .events import (
    decode_event,
    function_response_event,
    kept_events,
    project_event,
    project_events,
    response_text,
    stored_events,
    user_message,
)
from .gate import UnsupportedAgentError, first_llm_agent, gated_tree
from .mcp_meta import keyed_mcp_tool
from .policy import framework_effect, requires_confirmation
from .reporting import report_event, usage_of
from .retries import without_client_retries
from .run_state import RunState
from .session_features import (
    ModelResolver,
    SessionFeaturesPlugin,
    apply_session_settings,
    built_in_gates,
    step_features,
    with_context,
)
from .session_service import USER_ID, StepSessionService, step_session
from .step_boundary import is_boundary
from .tool_actions import ToolActions
from .transfers import call_authors, call_event, without_premature_ends
from .warm_up import warm_up_app

APP_NAME = "dex_agents"

_BUILT_IN_POLICY: Final = ToolPolicy(effect="read", requires_approval=False)


@dataclass(frozen=True)
class _Step:
    service: StepSessionService
    new_message: types.Content | None
    """The turn's user message; None to resume the invocation (the answers to its pending
    confirmations are already in the session, after a pause on the gates)."""
    invocation_id: str | None
    history_length: int
    """How many of the session's events are the stored conversation before the turn."""
    session_length: int
    """How many events the session held before this Step ran the invocation."""
    through_sequence: int


class AdkRunner:
    """Runs a Google ADK `LlmAgent` (or the root agent of an `App`) as a durable agent session,
    one model call per Step. The agent is not changed: the runner drives a copy whose tools
    are gated, in a copy of the app made resumable.

    `framework_retries` (off by default) lets the model's client retry a failed request by
    itself. Off, the copy's model sends each request once (LiteLlm and Gemini models; another
    model is refused), so RunModel's attempts are the only retries.

    `resolve_model(session_settings)` names the model of each model call (set as
    `llm_request.model`, which the agent's model class sends); None keeps the agent's. The
    session settings are also in the session state of every Step (`session_features.py`)."""

    tool_steps_read_turn = True
    """Tool Steps get the turn, whose events make the session a tool's ToolContext reads."""

    supports_plan_mode = True

    def __init__(
        self,
        agent: BaseAgent | App,
        *,
        framework_retries: bool = False,
        resolve_model: ModelResolver | None = None,
    ) -> None:
        app = agent if isinstance(agent, App) else App(name=APP_NAME, root_agent=agent)
        gates = built_in_gates()
        self._tree = gated_tree(
            app.root_agent, lambda: gates, _own_model if framework_retries else _model_copy
        )
        self.agent = app.root_agent
        self.resolve_model = resolve_model
        self._gated = first_llm_agent(self._tree.root)
        self._app = app.model_copy(
            update={
                "root_agent": self._tree.root,
                "plugins": [SessionFeaturesPlugin(gates, resolve_model), *app.plugins],
                "resumability_config": ResumabilityConfig(is_resumable=True),
            }
        )

    def build_user_message(self, text: str) -> FrameworkMessage:
        return user_message(text)

    async def warm_up(self) -> None:
        """Loads what the first model call would (`WarmUpRunner`; see `warm_up.py`)."""
        await warm_up_app(self._app, self._gated)

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        step = await self._start_step(turn)
        crossed = await self._run(turn, step)
        session = step.service.session
        attach_saved(
            session.events[step.session_length :], step.service.artifacts.saved, step.session_length
        )
        events = session.events[step.history_length :]
        usage = usage_of(session.events[step.session_length :])
        pending = pending_confirmations(events)
        if pending:
            events = without_premature_ends(events, pending, self._tree.root)
            state = RunState(
                events[-1].invocation_id,
                events,
                {call.id or "": conf_id for conf_id, call in pending.items()},
                step.through_sequence,
            )
            authors = call_authors(events)
            return ToolCallsRequested(
                framework_run_state=state.to_json(),
                tool_calls=[
                    await self._deferred_call(turn, step.service, events, call, authors)
                    for call in pending.values()
                ],
                usage=usage,
            )
        if crossed:
            state = RunState(events[-1].invocation_id, events, {}, step.through_sequence)
            return TurnContinued(framework_run_state=state.to_json(), usage=usage)
        return TurnCompleted(
            new_messages=project_events(e for e in events if e.author != "user"), usage=usage
        )

    async def _start_step(self, turn: AgentTurnContext) -> _Step:
        """The session this Step runs on, and what it sends: the turn's user message, or the
        answers to the pending confirmations of the invocation it resumes."""
        if turn.framework_run_state is None:
            stored, start = _split_turn(turn)
            history = with_context(turn, stored)
            service = await step_session(self._app.name, turn.flow_id, history)
            apply_session_settings(service.session, turn.session_settings)
            through = turn.messages[-2].sequence if len(turn.messages) > 1 else 0
            return _Step(service, start, None, len(history), len(history), through)
        saved = RunState.from_json(turn.framework_run_state)
        history = with_context(turn, _history(turn, saved.through_sequence))
        events = [*history, *saved.events]
        service = await step_session(self._app.name, turn.flow_id, events)
        apply_session_settings(service.session, turn.session_settings)
        for answer in confirmation_answers(saved, turn.tool_calls):
            await service.append_event(service.session, answer)
        return _Step(
            service, None, saved.invocation_id, len(history), len(events), saved.through_sequence
        )

    async def _run(self, turn: AgentTurnContext, step: _Step) -> bool:
        """Runs the invocation until it ends, pauses on the gates, or reaches the Step's
        boundary (True: the invocation goes on in the next Step)."""
        runner = Runner(
            app=self._app,
            session_service=step.service,
            artifact_service=step.service.artifacts,
            auto_create_session=False,
        )
        stream = runner.run_async(
            user_id=USER_ID,
            session_id=step.service.session.id,
            invocation_id=step.invocation_id,
            new_message=step.new_message,
            run_config=RunConfig(streaming_mode=StreamingMode.SSE),
        )
        with step_features(turn) as features:
            try:
                async with aclosing(stream) as events:
                    async for event in events:
                        turn.heartbeat()
                        report_event(turn, event)
            except Exception as error:
                if not (features.model_calls.crossed and is_boundary(error)):
                    raise
                return True
        return False

    # -- compaction (ContextCompactionRunner) ------------------------------------------------

    def estimate_input_tokens(self, turn: AgentTurnContext) -> int:
        """About what the next model call sends: the instruction (when it is a text), the
        summary, the stored messages, the plan note and the turn's events so far."""
        events = with_context(turn, compaction.stored(turn, turn.messages))
        if turn.framework_run_state is not None:
            events += RunState.from_json(turn.framework_run_state).events
        instruction = self._gated.instruction
        fixed = compaction.text_tokens(instruction) if isinstance(instruction, str) else 0
        return fixed + sum(compaction.event_tokens(event) for event in events)

    def select_compaction_cutoff(
        self, turn: AgentTurnContext, retained_token_budget: int
    ) -> int | None:
        return compaction.select_cutoff(turn, turn.messages, retained_token_budget)

    async def summarize_context(self, request: ContextSummaryRequest) -> ContextSummaryResult:
        """One call of the agent's model (the model `resolve_model` names for the session's
        settings, when the runner has it) on a transcript of the covered messages."""
        name = self.resolve_model(request.session_settings) if self.resolve_model else None
        return await compaction.summarize(self._gated.canonical_model, name, request)

    async def build_unfinished_turn_messages(
        self, turn: AgentTurnContext
    ) -> Sequence[FrameworkMessage]:
        """The turn's messages so far, with a function response for every call the model
        made: its final record's result, else the outcome-unknown text."""
        if turn.framework_run_state is None:
            return []
        saved = RunState.from_json(turn.framework_run_state)
        kept = kept_events(e for e in saved.events if e.author != "user")
        answered = {r.id for e in kept for r in e.get_function_responses()}
        records = {r.tool_call_id: r for r in turn.tool_calls}
        for event in list(kept):
            for call in event.get_function_calls():
                if call.id is None or call.id in answered:
                    continue
                record = records.get(call.id)
                text = (
                    model_visible_result(record)
                    if record is not None and record.is_final
                    else texts.OUTCOME_UNKNOWN_TEXT
                )
                kept.append(function_response_event(event, call, text))
        return [project_event(e) for e in kept]

    async def execute_deferred_tool_call(
        self, execution: DeferredToolExecution
    ) -> ToolExecutionResult:
        record = execution.tool_call
        invocation = await self._tool_invocation(execution)
        tools = self._tree.agent_tools(invocation.agent.name)
        tool = await tools.find(record.tool_name, _readonly_context(invocation))
        if tool is None:
            raise ToolExecutionError(adk_texts.UNKNOWN_TOOL.format(name=record.tool_name))
        if isinstance(tool, McpTool):
            tool = keyed_mcp_tool(tool, execution.idempotency_key)
        context = ToolContext(invocation, function_call_id=record.tool_call_id)
        context.tool_confirmation = ToolConfirmation(confirmed=True)
        with running_tool(execution):
            try:
                result = await tool.run_async(
                    args=json.loads(record.arguments or "{}"), tool_context=context
                )
            except ArtifactTooLargeError as error:
                raise ToolExecutionError(str(error)) from error
        saved = invocation.artifact_service
        assert isinstance(saved, StepArtifactService)
        actions = ToolActions.of(context.actions, saved.saved)
        return ToolExecutionResult(
            output=_result_text(result),
            framework_data=None if actions.is_empty() else actions.to_json(),
        )

    async def _tool_invocation(self, execution: DeferredToolExecution) -> InvocationContext:
        """An invocation on the session as it was when the model asked for the call: the
        tool's ToolContext (already confirmed: dex-agents ran its approval) and the toolsets'
        listing read it."""
        events: list[Event] = []
        turn_events: list[Event] = []
        turn = execution.turn
        if turn is not None and turn.framework_run_state is not None:
            saved = RunState.from_json(turn.framework_run_state)
            turn_events = saved.events
            events = [*_history(turn, saved.through_sequence), *turn_events]
        service = await step_session(self._app.name, execution.flow_id, events)
        if turn is not None:
            apply_session_settings(service.session, turn.session_settings)
        call = call_event(turn_events, execution.tool_call.tool_call_id)
        return self._invocation(
            service,
            events[-1].invocation_id if events else execution.turn_id,
            call.author if call else None,
            call.branch if call else None,
        )

    def _invocation(
        self,
        service: StepSessionService,
        invocation_id: str,
        agent_name: str | None = None,
        branch: str | None = None,
    ) -> InvocationContext:
        """An invocation on the Step's session as ADK builds one, for the agent of the tree
        named `agent_name` (the root when None) in `branch`."""
        root = self._app.root_agent
        agent = root.find_agent(agent_name) if agent_name else None
        return InvocationContext(
            session_service=service,
            invocation_id=invocation_id,
            agent=agent or root,
            branch=branch,
            session=service.session,
            artifact_service=service.artifacts,
            run_config=RunConfig(),
        )

    async def _deferred_call(
        self,
        turn: AgentTurnContext,
        service: StepSessionService,
        events: Sequence[Event],
        call: types.FunctionCall,
        authors: Mapping[str, Event],
    ) -> DeferredToolCall:
        """The call with its tool's own policy: the tool of the agent that made the call (a
        toolset's tool is found in the toolset's listing for this Step's invocation)."""
        name = call.name or ""
        if name in turn.enabled_built_in_tools:
            return DeferredToolCall(
                tool_call_id=call.id or "",
                tool_name=name,
                arguments=json.dumps(call.args or {}, ensure_ascii=False),
                policy=_BUILT_IN_POLICY,
            )
        made = authors.get(call.id or "")
        author = made.author if made else self._gated.name
        invocation = self._invocation(
            service, events[-1].invocation_id, author, made.branch if made else None
        )
        tool = await self._tree.agent_tools(author).find(name, _readonly_context(invocation))
        policy = turn.resolve_tool_policy(
            name,
            framework_effect(tool) if tool else None,
            requires_confirmation(tool),
        )
        return DeferredToolCall(
            tool_call_id=call.id or "",
            tool_name=name,
            arguments=json.dumps(call.args or {}, ensure_ascii=False),
            policy=policy,
        )


def _own_model(agent: LlmAgent) -> Any:
    return agent.model


def _model_copy(agent: LlmAgent) -> Any:
    """The agent's model, sending each request once (`retries.py`)."""
    return without_client_retries(agent.canonical_model)


def _readonly_context(invocation: InvocationContext) -> ReadonlyContext:
    """What ADK gives a toolset's listing: a ReadonlyContext on the invocation."""
    return ReadonlyContext(invocation)


def _split_turn(turn: AgentTurnContext) -> tuple[list[Event], types.Content]:
    """The stored events before the turn's last user message, and that message's content."""
    if not turn.messages:
        raise UnsupportedAgentError("a turn needs a user message to start the ADK invocation")
    *history, last = turn.messages
    event = decode_event(last.framework_item)
    if event.content is None:
        raise UnsupportedAgentError("the turn's user message has no content")
    return stored_events(turn, history), event.content


def _history(turn: AgentTurnContext, through_sequence: int) -> list[Event]:
    return stored_events(turn, [m for m in turn.messages if m.sequence <= through_sequence])


def _result_text(result: Any) -> str:
    """A tool's return value as the text the model reads (ADK wraps a plain value as
    `{"result": value}`)."""
    if isinstance(result, str):
        return result
    if isinstance(result, dict):
        return response_text(result)
    return response_text({"result": result})
