"""The dex-agents runner for LangChain `create_agent` graphs, in Step mode.

Every tool call interrupts (see `deferral.py`), so each `run_model_step` runs the graph until
the model answers or asks for tools: one model call. The turn's checkpoints live in a
`TurnCheckpointSaver` stored as the framework run state; the next `run_model_step` loads them
and resumes with `Command(resume=...)`, one recorded result per interrupt. Each tool call runs
its real tool in `execute_deferred_tool_call`, or hands it to the tool source that owns it.

What the graph's stream writer gets becomes `langgraph.custom` session events (custom.py);
the state a turn ends with besides its messages starts the next turn (carried.py).

The session's offer (enabled built-ins, tool sources' tools, plan mode's restriction and plan
note: offer.py) is applied in the model node, after the application's `wrap_model_call`
middleware; the session settings are the graph's run `context` (context.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from dex_agents import texts
from dex_agents.builtins import build_plan_note
from dex_agents.results import model_visible_result
from dex_agents.runner import (
    AgentTurnContext,
    AgentTurnOutcome,
    ContextSummaryRequest,
    ContextSummaryResult,
    DeferredToolCall,
    DeferredToolExecution,
    DeferredToolOutcome,
    FrameworkMessage,
    ToolCallsRequested,
    ToolExecutionError,
    ToolExecutionResult,
    ToolPolicy,
    ToolTaskCancellation,
    ToolTaskCanceller,
    ToolTaskPoll,
    ToolTaskPoller,
    ToolTaskPollOutcome,
    TurnCompleted,
)
from dex_agents.tool_context import running_tool
from dex_agents.tool_source import ToolSource
from dex_agents.types import AgentMessage, AgentToolCall, AgentUsage
from dex_agents.warm_up import load_openai_client_async
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolCall, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.runnables import RunnableConfig
from langgraph.pregel import Pregel
from langgraph.runtime import Runtime
from langgraph.types import Command, Interrupt
from pydantic import ValidationError

from .carried import carried_channels, end_state, previous_state, start_from, with_carried_state
from .checkpoint import TurnCheckpointSaver
from .command import command_result
from .compaction import select_cutoff, summary_request, with_summary
from .context import ContextFactory, SessionSettingsContextError, run_context
from .custom import CUSTOM_EVENT, custom_payload, event_stream_writer
from .deferral import UnsupportedGraphError, deferring_graph, is_deferred_call, tool_node_of
from .messages import project_messages, stored_messages, user_message
from .offer import TurnOffer, offered_request, offering
from .policy import check_framework_effects, framework_effect
from .retries import (
    NOT_CREATE_AGENT,
    agent_model,
    check_agent_model,
    prepared_model_node,
    request_without_retries,
    without_client_retries,
)
from .sources import SourceTools
from .tool_step import NO_TURN, injected_call, tool_config

_BUILT_IN_POLICY: Final = ToolPolicy(effect="read", requires_approval=False)
NO_MODEL_NODE_OFFER: Final = (
    "this graph's model node is not langchain.agents.create_agent's, so the LangGraph runner "
    "cannot offer the session's built-in tools or tool sources, nor restrict a planning turn's "
    "tools: build the agent with create_agent, or turn the session's built_in_tools off"
)


@dataclass(frozen=True)
class _RunState:
    checkpoints: str
    input_count: int
    interrupts: dict[str, str]
    """Interrupt ID by tool call ID."""
    through_sequence: int | None = None
    """The last stored message the turn started from."""

    def to_json(self) -> str:
        return json.dumps(
            {
                "checkpoints": self.checkpoints,
                "input_count": self.input_count,
                "interrupts": self.interrupts,
                "through_sequence": self.through_sequence,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> _RunState:
        data = json.loads(text)
        return cls(
            data["checkpoints"],
            data["input_count"],
            data["interrupts"],
            data.get("through_sequence"),
        )


def _usage(messages: Sequence[BaseMessage]) -> AgentUsage:
    """The usage of the model calls that made `messages` (one per AIMessage)."""
    total = AgentUsage()
    for message in messages:
        if not isinstance(message, AIMessage):
            continue
        usage = message.usage_metadata
        if usage is None:
            total = total.plus(AgentUsage(model_calls=1))
            continue
        total = total.plus(
            AgentUsage(
                model_calls=1,
                input_tokens=usage["input_tokens"],
                output_tokens=usage["output_tokens"],
                cached_input_tokens=usage.get("input_token_details", {}).get("cache_read", 0) or 0,
                reasoning_tokens=usage.get("output_token_details", {}).get("reasoning", 0) or 0,
            )
        )
    return total


def _reasoning_text(chunk: AIMessageChunk) -> str:
    """The reasoning a streamed chunk carries: its standard `reasoning` content blocks (the
    Responses API's reasoning summaries, among others), else the `reasoning_content` that
    some Chat Completions providers add."""
    text = "".join(
        block.get("reasoning", "") for block in chunk.content_blocks if block["type"] == "reasoning"
    )
    if text:
        return text
    extra = chunk.additional_kwargs.get("reasoning_content")
    return extra if isinstance(extra, str) else ""


def _offered_without_retries(request: Any) -> Any:
    return request_without_retries(offered_request(request))


def _answer(record: AgentToolCall) -> dict[str, str | None]:
    status = "success" if record.status == "succeeded" else "error"
    return {
        "content": model_visible_result(record),
        "status": status,
        "framework_data": record.framework_data,
    }


class LangGraphRunner:
    """Runs a LangChain `create_agent` graph as a durable agent session, one model call per
    Step. The graph is not changed: the runner drives a copy whose tool node defers every
    call and whose checkpointer is the turn's own.

    `framework_retries` (off by default) lets the chat model's SDK client retry a failed
    request by itself. Off, the copy's model node sends each request on a copy of the request's
    model without client retries (OpenAI chat models; another model that retries by itself is
    refused), so RunModel's attempts, recorded in the Step history, are the only retries
    (docs/design/retries.md). A graph whose model node is not `create_agent`'s is refused then:
    its own code calls the model, so give that model `max_retries=0` and pass `True`.

    `summary_model` makes the CompactContext summaries (default: the model `create_agent` was
    given).

    `tool_sources` are tool sources such as `dex_agents.McpToolSource`, whose tools the agent
    gets besides its own; each call runs in its tool Step through its source.

    The session settings are the graph's run `context` (read by `wrap_model_call`,
    `@dynamic_prompt` and `@before_model` middleware as `runtime.context`, and by tools as
    `ToolRuntime.context`): the settings as a dict, made into the agent's `context_schema`
    when that is a dataclass or a Pydantic model, or `context_factory(settings)` when given.

    Built-in tools and plan mode (`supports_plan_mode`) need `create_agent`'s model node, where
    the runner changes each request after the application's middleware; a graph with its own
    model node (`framework_retries=True`) has neither."""

    def __init__(
        self,
        agent: Pregel[Any, Any, Any, Any],
        *,
        framework_retries: bool = False,
        summary_model: BaseChatModel | None = None,
        tool_sources: Sequence[ToolSource] = (),
        context_factory: ContextFactory | None = None,
    ) -> None:
        self.agent = agent
        self._tools = tool_node_of(agent)
        check_framework_effects(self._tools.tools_by_name.values())
        self._sources = SourceTools(tool_sources)
        self._context_factory = context_factory
        self._carried = carried_channels(agent)
        graph = deferring_graph(agent)
        prepared = prepared_model_node(
            graph, offered_request if framework_retries else _offered_without_retries
        )
        if prepared is None and not framework_retries:
            raise UnsupportedGraphError(NOT_CREATE_AGENT)
        if prepared is None and tool_sources:
            raise UnsupportedGraphError(NO_MODEL_NODE_OFFER)
        if not framework_retries:
            check_agent_model(agent)
        self._graph = prepared if prepared is not None else graph
        self.supports_plan_mode = prepared is not None
        """Whether a planning turn's tools can be restricted: `create_agent`'s model node."""
        model = summary_model if summary_model is not None else agent_model(agent)
        if model is not None and not framework_retries:
            model = without_client_retries(model)
        self._summary_model = model

    tool_steps_read_turn = True
    """Tool Steps get the turn (ToolStepsReadTurn), whose checkpoint holds the state that
    `ToolRuntime` and `InjectedState` arguments read."""

    def build_user_message(self, text: str) -> FrameworkMessage:
        return user_message(text)

    async def warm_up(self) -> None:
        """Loads what the first model call would (`WarmUpRunner`): the OpenAI SDK resources of
        the client of the model `create_agent` was given (an OpenAI chat model), and the HTTP
        client's connection stack. No request is sent."""
        model = agent_model(self.agent)
        await load_openai_client_async(getattr(model, "root_async_client", None))

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        if turn.enabled_built_in_tools and not self.supports_plan_mode:
            return TurnCompleted(usage=AgentUsage(), turn_error=NO_MODEL_NODE_OFFER)
        try:
            context = self._run_context(turn.session_settings)
        except SessionSettingsContextError as error:
            return TurnCompleted(usage=AgentUsage(), turn_error=str(error))
        await self._sources.list_tools()
        config: RunnableConfig = {"configurable": {"thread_id": turn.turn_id}}
        run_input: Any
        through = turn.messages[-1].sequence if turn.messages else 0
        saved = (
            None
            if turn.framework_run_state is None
            else _RunState.from_json(turn.framework_run_state)
        )
        started_from = _started_from(turn, saved)
        if saved is None:
            saver = TurnCheckpointSaver()
            history = with_summary(turn, stored_messages(turn, started_from))
            await start_from(saver, config, previous_state(turn, saver))
            run_input = {"messages": history}
        else:
            history = with_summary(turn, stored_messages(turn, started_from, copy=False))
            saver = TurnCheckpointSaver.load(saved.checkpoints, history)
            run_input, through = _resume(saved, turn.tool_calls), saved.through_sequence or through
        input_count = len(history)
        graph = self._graph.copy({"checkpointer": saver})
        before = await _message_count(graph, config, input_count)
        with offering(self._offer(turn, started_from, input_count)):
            await self._stream(turn, graph, run_input, config, context)
        snapshot = await graph.aget_state(config)
        messages: list[BaseMessage] = list(snapshot.values.get("messages", []))
        new = messages[input_count:]
        usage = _usage(messages[before:])
        foreign = [i for i in snapshot.interrupts if not is_deferred_call(i.value)]
        if foreign:
            return TurnCompleted(usage=usage, turn_error=_foreign_interrupt(foreign[0]))
        if snapshot.interrupts:
            calls = [self._deferred_call(turn, i) for i in snapshot.interrupts]
            state = _RunState(
                saver.dump(input_count, new),
                input_count,
                {c.tool_call_id: i.id for c, i in zip(calls, snapshot.interrupts, strict=True)},
                through,
            )
            return ToolCallsRequested(
                framework_run_state=state.to_json(), tool_calls=calls, usage=usage
            )
        carried = await end_state(saver, config, self._carried)
        return TurnCompleted(
            new_messages=with_carried_state(project_messages(new), carried, saver), usage=usage
        )

    async def execute_deferred_tool_call(
        self, execution: DeferredToolExecution
    ) -> DeferredToolOutcome:
        record = execution.tool_call
        source = self._sources.owner(record)
        if source is not None:
            return await source.execute_deferred_tool_call(execution)
        tool = self._tools.tools_by_name.get(record.tool_name)
        if tool is None:
            raise ToolExecutionError(f"the agent has no tool named {record.tool_name!r}")
        call = ToolCall(
            type="tool_call",
            id=record.tool_call_id,
            name=record.tool_name,
            args=json.loads(record.arguments or "{}"),
        )
        call = await injected_call(
            self._tools,
            tool,
            call,
            execution,
            self._state_at_call,
            self.agent.store,
            self._context_at_call,
        )
        runtime = Runtime(
            context=self._context_at_call(execution),
            store=self.agent.store,
            stream_writer=event_stream_writer(execution.events),
        )
        with running_tool(execution):
            try:
                message = await tool.ainvoke(call, tool_config(execution, runtime))
            except ValidationError as error:
                raise ToolExecutionError(str(error)) from error
        if isinstance(message, Command):
            return command_result(message, record.tool_name, record.tool_call_id)
        if not isinstance(message, ToolMessage):
            raise ToolExecutionError(f"tool {record.tool_name!r} returned {type(message).__name__}")
        if message.status == "error":
            raise ToolExecutionError(message.text)
        return ToolExecutionResult(output=message.text)

    async def poll_tool_task(self, poll: ToolTaskPoll) -> ToolTaskPollOutcome:
        """Polls a task that a tool source started (ToolTaskPoller)."""
        source = self._sources.owner(poll.tool_call)
        if not isinstance(source, ToolTaskPoller):
            raise ToolExecutionError(f"tool {poll.tool_call.tool_name} has no task to poll")
        return await source.poll_tool_task(poll)

    async def cancel_tool_task(self, cancellation: ToolTaskCancellation) -> None:
        """Cancels a source's task that cancel_turn abandoned (ToolTaskCanceller)."""
        source = self._sources.owner(cancellation.tool_call)
        if isinstance(source, ToolTaskCanceller):
            await source.cancel_tool_task(cancellation)

    async def build_unfinished_turn_messages(
        self, turn: AgentTurnContext
    ) -> Sequence[FrameworkMessage]:
        """The turn's messages so far, with a result for every tool call the model made."""
        if turn.framework_run_state is None:
            return []
        saved = _RunState.from_json(turn.framework_run_state)
        history = _history(turn, saved, copy=False)
        values = await self._checkpoint_values(turn, saved)
        new: list[BaseMessage] = list(values.get("messages", []))[len(history) :]
        records = {r.tool_call_id: r for r in turn.tool_calls}
        answered = {m.tool_call_id for m in new if isinstance(m, ToolMessage)}
        for message in list(new):
            if not isinstance(message, AIMessage):
                continue
            for call in message.tool_calls:
                if call["id"] is None or call["id"] in answered:
                    continue
                record = records.get(call["id"])
                text = (
                    model_visible_result(record)
                    if record is not None and record.is_final
                    else texts.OUTCOME_UNKNOWN_TEXT
                )
                new.append(ToolMessage(content=text, tool_call_id=call["id"], name=call["name"]))
        return project_messages(new)

    async def _checkpoint_values(self, turn: AgentTurnContext, saved: _RunState) -> dict[str, Any]:
        """The graph's state in the turn's latest checkpoint."""
        saver = TurnCheckpointSaver.load(saved.checkpoints, _history(turn, saved, copy=False))
        graph = self._graph.copy({"checkpointer": saver})
        config: RunnableConfig = {"configurable": {"thread_id": turn.turn_id}}
        snapshot = await graph.aget_state(config)
        return dict(snapshot.values)

    # -- compaction (ContextCompactionRunner) ------------------------------------------------

    def estimate_input_tokens(self, turn: AgentTurnContext) -> int:
        """LangChain's approximate count of what the next model call sends: the summary, the
        stored history and the turn's messages so far."""
        if turn.framework_run_state is None:
            return count_tokens_approximately(_history(turn, None, copy=False))
        saved = _RunState.from_json(turn.framework_run_state)
        saver = TurnCheckpointSaver.load(saved.checkpoints, _history(turn, saved, copy=False))
        graph = self._graph.copy({"checkpointer": saver})
        snapshot = graph.get_state({"configurable": {"thread_id": turn.turn_id}})
        return count_tokens_approximately(list(snapshot.values.get("messages", [])))

    def select_compaction_cutoff(
        self, turn: AgentTurnContext, retained_token_budget: int
    ) -> int | None:
        return select_cutoff(turn, turn.messages, retained_token_budget)

    async def summarize_context(self, request: ContextSummaryRequest) -> ContextSummaryResult:
        """One call of the summary model on a transcript of the covered messages."""
        if self._summary_model is None:
            raise UnsupportedGraphError(
                "this graph's model is not create_agent's, so the runner has no model to "
                "summarize with: pass LangGraphRunner(..., summary_model=...)"
            )
        answer = await self._summary_model.ainvoke(summary_request(request))
        return ContextSummaryResult(text=answer.text.strip(), usage=_usage([answer]))

    def _run_context(self, settings: Mapping[str, Any]) -> Any:
        return run_context(settings, self.agent.context_schema, self._context_factory)

    def _context_at_call(self, execution: DeferredToolExecution) -> Any:
        """A tool's `ToolRuntime.context`: the run context of the turn's settings."""
        settings = execution.turn.session_settings if execution.turn is not None else {}
        try:
            return self._run_context(settings)
        except SessionSettingsContextError as error:
            raise ToolExecutionError(str(error)) from error

    def _offer(
        self, turn: AgentTurnContext, started_from: Sequence[AgentMessage], input_count: int
    ) -> TurnOffer:
        built_ins = tuple(turn.enabled_built_in_tools)
        current = sum(1 for message in started_from if message.turn_id == turn.turn_id)
        return TurnOffer(
            built_ins=built_ins,
            planning=turn.interaction_mode == "planning",
            plan_note=build_plan_note(turn.plan, turn.interaction_mode),
            turn_start=input_count - current,
            source_tools=self._sources.definitions({*self._tools.tools_by_name, *built_ins}),
        )

    async def _state_at_call(self, execution: DeferredToolExecution) -> dict[str, Any]:
        """The graph's state when the model asked for the call: the turn's checkpoint that the
        RunModel Step requesting it stored."""
        turn = execution.turn
        if turn is None or turn.framework_run_state is None:
            raise ToolExecutionError(NO_TURN.format(name=execution.tool_call.tool_name))
        return await self._checkpoint_values(turn, _RunState.from_json(turn.framework_run_state))

    async def _stream(
        self,
        turn: AgentTurnContext,
        graph: Pregel[Any, Any, Any, Any],
        run_input: Any,
        config: RunnableConfig,
        context: Any,
    ) -> None:
        async for mode, chunk in graph.astream(
            run_input, config, stream_mode=["messages", "updates", "custom"], context=context
        ):
            turn.heartbeat()
            if mode == "custom":
                turn.events.write(CUSTOM_EVENT, custom_payload(chunk))
            if mode != "messages":
                continue
            message = chunk[0]
            if isinstance(message, AIMessageChunk):
                reasoning = _reasoning_text(message)
                if reasoning:
                    turn.events.write("reasoning_delta", {"text": reasoning})
                if message.text:
                    turn.events.write("text_delta", {"text": message.text})

    def _deferred_call(self, turn: AgentTurnContext, interrupt: Interrupt) -> DeferredToolCall:
        value: dict[str, Any] = interrupt.value
        name: str = value["tool_name"]
        call_id: str = value["tool_call_id"]
        arguments = json.dumps(value["arguments"], ensure_ascii=False)
        if name in turn.enabled_built_in_tools:  # the core runs it: it wins over an agent tool
            return DeferredToolCall(call_id, name, arguments, policy=_BUILT_IN_POLICY)
        source = self._sources.offering(name, self._tools.tools_by_name)
        if source is not None:
            return source.deferred_tool_call(call_id, name, arguments, turn.resolve_tool_policy)
        tool = self._tools.tools_by_name.get(name)
        policy = turn.resolve_tool_policy(name, framework_effect(tool) if tool else None)
        return DeferredToolCall(call_id, name, arguments, policy=policy)


async def _message_count(
    graph: Pregel[Any, Any, Any, Any], config: RunnableConfig, input_count: int
) -> int:
    """How many messages the turn's state holds before this Step runs the graph."""
    snapshot = await graph.aget_state(config)
    messages = snapshot.values.get("messages") if snapshot.values else None
    return len(messages) if messages is not None else input_count


def _foreign_interrupt(interrupt: Interrupt) -> str:
    return (
        "the graph interrupted with a value the LangGraph runner did not raise "
        f"({interrupt.value!r:.200}); only interrupts for tool calls can be driven as Steps"
    )


def _started_from(turn: AgentTurnContext, saved: _RunState | None) -> Sequence[AgentMessage]:
    """The stored messages the turn starts from: all of them before the turn's first Step."""
    messages: Sequence[AgentMessage] = turn.messages
    if saved is not None and saved.through_sequence is not None:
        messages = [m for m in messages if m.sequence <= saved.through_sequence]
    elif saved is not None:
        messages = messages[: saved.input_count]
    return messages


def _history(
    turn: AgentTurnContext, saved: _RunState | None, *, copy: bool = True
) -> list[BaseMessage]:
    """The conversation the turn starts from: the summary, then the stored messages up to the
    turn's start."""
    return with_summary(turn, stored_messages(turn, _started_from(turn, saved), copy=copy))


def _resume(saved: _RunState, records: Sequence[AgentToolCall]) -> Command[Any]:
    by_id = {record.tool_call_id: record for record in records}
    answers: dict[str, Any] = {}
    for call_id, interrupt_id in saved.interrupts.items():
        record = by_id.get(call_id)
        if record is None or not record.is_final:
            raise RuntimeError(f"tool call {call_id!r} has no final record to resume the turn with")
        answers[interrupt_id] = _answer(record)
    return Command(resume=answers)
