"""The dex-agents runner for LangChain `create_agent` graphs, in Step mode.

Every tool call interrupts (see `deferral.py`), so each `run_model_step` runs the graph until
the model answers or asks for tools: one model call. The turn's checkpoints live in a
`TurnCheckpointSaver` stored as the framework run state; the next `run_model_step` loads them
and resumes with `Command(resume=...)`, one recorded result per interrupt. Each tool call runs
its real tool in `execute_deferred_tool_call`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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
    TurnCompleted,
)
from dex_agents.tool_context import running_tool
from dex_agents.types import AgentMessage, AgentToolCall, AgentUsage
from dex_agents.warm_up import load_openai_client_async
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolCall, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.runnables import RunnableConfig
from langgraph.pregel import Pregel
from langgraph.types import Command, Interrupt
from pydantic import ValidationError

from .checkpoint import TurnCheckpointSaver
from .compaction import select_cutoff, summary_request, with_summary
from .deferral import UnsupportedGraphError, deferring_graph, is_deferred_call, tool_node_of
from .messages import project_messages, stored_messages, user_message
from .policy import framework_effect
from .retries import agent_model, model_node_without_retries, without_client_retries
from .tool_step import NO_TURN, injected_call, tool_config


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


def _answer(record: AgentToolCall) -> dict[str, str]:
    status = "success" if record.status == "succeeded" else "error"
    return {"content": model_visible_result(record), "status": status}


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
    given)."""

    def __init__(
        self,
        agent: Pregel[Any, Any, Any, Any],
        *,
        framework_retries: bool = False,
        summary_model: BaseChatModel | None = None,
    ) -> None:
        self.agent = agent
        self._tools = tool_node_of(agent)
        graph = deferring_graph(agent)
        self._graph = graph if framework_retries else model_node_without_retries(graph)
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
        config: RunnableConfig = {"configurable": {"thread_id": turn.turn_id}}
        run_input: Any
        through = turn.messages[-1].sequence if turn.messages else 0
        if turn.framework_run_state is None:
            saver = TurnCheckpointSaver()
            history = _history(turn, None)
            run_input = {"messages": history}
        else:
            saved = _RunState.from_json(turn.framework_run_state)
            history = _history(turn, saved, copy=False)
            saver = TurnCheckpointSaver.load(saved.checkpoints, history)
            run_input, through = _resume(saved, turn.tool_calls), saved.through_sequence or through
        input_count = len(history)
        graph = self._graph.copy({"checkpointer": saver})
        before = await _message_count(graph, config, input_count)
        await self._stream(turn, graph, run_input, config)
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
        return TurnCompleted(new_messages=project_messages(new), usage=usage)

    async def execute_deferred_tool_call(
        self, execution: DeferredToolExecution
    ) -> ToolExecutionResult:
        record = execution.tool_call
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
            self._tools, tool, call, execution, self._state_at_call, self.agent.store
        )
        with running_tool(execution):
            try:
                message = await tool.ainvoke(call, tool_config(execution))
            except ValidationError as error:
                raise ToolExecutionError(str(error)) from error
        if not isinstance(message, ToolMessage):
            raise ToolExecutionError(f"tool {record.tool_name!r} returned {type(message).__name__}")
        if message.status == "error":
            raise ToolExecutionError(message.text)
        return ToolExecutionResult(output=message.text)

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
    ) -> None:
        async for mode, chunk in graph.astream(
            run_input, config, stream_mode=["messages", "updates"]
        ):
            turn.heartbeat()
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
        tool = self._tools.tools_by_name.get(name)
        policy = turn.resolve_tool_policy(name, framework_effect(tool) if tool else None)
        return DeferredToolCall(
            tool_call_id=value["tool_call_id"],
            tool_name=name,
            arguments=json.dumps(value["arguments"], ensure_ascii=False),
            policy=policy,
        )


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


def _history(
    turn: AgentTurnContext, saved: _RunState | None, *, copy: bool = True
) -> list[BaseMessage]:
    """The conversation the turn starts from: the summary, then the stored messages up to the
    turn's start (all of them before the turn's first Step)."""
    messages: Sequence[AgentMessage] = turn.messages
    if saved is not None and saved.through_sequence is not None:
        messages = [m for m in messages if m.sequence <= saved.through_sequence]
    elif saved is not None:
        messages = messages[: saved.input_count]
    return with_summary(turn, stored_messages(turn, messages, copy=copy))


def _resume(saved: _RunState, records: Sequence[AgentToolCall]) -> Command[Any]:
    by_id = {record.tool_call_id: record for record in records}
    answers: dict[str, Any] = {}
    for call_id, interrupt_id in saved.interrupts.items():
        record = by_id.get(call_id)
        if record is None or not record.is_final:
            raise RuntimeError(f"tool call {call_id!r} has no final record to resume the turn with")
        answers[interrupt_id] = _answer(record)
    return Command(resume=answers)
