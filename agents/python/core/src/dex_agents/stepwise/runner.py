"""StepwiseRunner: the core's own agent loop, one LiteLLM call per model Step.

The turn's items (model responses, tool results, continuation messages) stay in the run
state until the turn ends; TurnCompleted stores them. Tools run only in tool Steps.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from ..runner import (
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
    ToolPolicy,
    ToolTaskCancellation,
    ToolTaskCanceller,
    ToolTaskPoll,
    ToolTaskPoller,
    ToolTaskPollOutcome,
    TurnCompleted,
    TurnContinued,
)
from ..tool_context import running_tool
from ..tool_source import ToolSource
from ..types import AgentToolCall, AgentUsage
from ..validation import path_segment_problem
from . import compaction
from .builtins import BUILT_IN_TOOL_DEFINITIONS, BUILT_IN_TOOL_NAMES, build_plan_note
from .definition import (
    CONTINUATION_LIMIT_ERROR,
    MAX_CONSECUTIVE_CONTINUATIONS,
    AgentDefinition,
    InstructionContext,
    TurnContinuation,
    TurnContinuationContext,
    TurnContinuationDecision,
)
from .items import (
    Item,
    RunState,
    split_turn,
    strip_for_request,
    summary_item,
    to_framework_message,
    to_framework_messages,
    tool_calls_of,
    tool_result_items,
    unanswered_calls,
    user_item,
)
from .model import (
    ModelClient,
    ModelReply,
    ModelRequest,
    as_model_client,
    count_tokens,
    stream_completion,
    warm_up_litellm,
)
from .tools import Tool, as_tool

_BUILT_IN_POLICY: Final = ToolPolicy(effect="read", requires_approval=False)


class StepwiseRunner:
    """Runs an AgentDefinition in Step mode: one model call per RunModel Step."""

    supports_plan_mode = True

    def __init__(self, definition: AgentDefinition) -> None:
        self.definition = definition
        self.tools: dict[str, Tool] = {}
        self.sources: list[ToolSource] = []
        for value in definition.tools:
            if isinstance(value, ToolSource):
                self.sources.append(value)
                continue
            tool = as_tool(value)
            if tool.name in self.tools:
                raise ValueError(f"two tools are named {tool.name!r}")
            self.tools[tool.name] = tool
        if definition.planning_tool_choice == "required" and definition.resolve_model is None:
            problem = self._forced_choice_problem(self.client({}))
            if problem:
                raise ValueError(problem)

    # -- the runner protocol -----------------------------------------------------------------

    def build_user_message(self, text: str) -> FrameworkMessage:
        return to_framework_message(user_item(text))

    async def warm_up(self) -> None:
        """LiteLLM and what its first call of the definition's model loads (`WarmUpRunner`)."""
        await warm_up_litellm(as_model_client(self.definition.model).model)

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        for source in self.sources:
            await source.list_tools()  # cached after the first listing
        state = RunState.load(turn.framework_run_state)
        resolved = unanswered_calls(state.items)
        items = state.items + tool_result_items(state.items, turn.tool_calls, strict=True)
        count = state.consecutive_continuations
        if resolved and self.definition.decide_turn_continuation is not None:
            decided = await self._decide_after_tools(turn, items, resolved, count)
            if isinstance(decided, TurnCompleted):
                return decided
            count = decided
        return await self._model_step(turn, items, count)

    async def build_unfinished_turn_messages(
        self, turn: AgentTurnContext
    ) -> Sequence[FrameworkMessage]:
        """The run state's items with a tool result for every call, so a steered or failed
        turn keeps its exact transcript."""
        items = RunState.load(turn.framework_run_state).items
        return to_framework_messages(
            items + tool_result_items(items, turn.tool_calls, strict=False)
        )

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> DeferredToolOutcome:
        record = call.tool_call
        source = self._source_of(record)
        if source is not None:
            return await source.execute_deferred_tool_call(call)
        tool = self.tools.get(record.tool_name)
        if tool is None:
            raise ToolExecutionError(f"unknown tool {record.tool_name!r}")
        # The tool Step sets it too; this serves a runner driven on its own (tests).
        with running_tool(call):
            return await tool.run(record.arguments)

    async def poll_tool_task(self, poll: ToolTaskPoll) -> ToolTaskPollOutcome:
        """Polls a task that a tool source started (ToolTaskPoller)."""
        source = self._source_of(poll.tool_call)
        if not isinstance(source, ToolTaskPoller):
            raise ToolExecutionError(f"tool {poll.tool_call.tool_name} has no task to poll")
        return await source.poll_tool_task(poll)

    async def cancel_tool_task(self, cancellation: ToolTaskCancellation) -> None:
        """Cancels a source's task that cancel_turn abandoned (ToolTaskCanceller)."""
        source = self._source_of(cancellation.tool_call)
        if isinstance(source, ToolTaskCanceller):
            await source.cancel_tool_task(cancellation)

    # -- compaction --------------------------------------------------------------------------

    def estimate_input_tokens(self, turn: AgentTurnContext) -> int:
        items = RunState.load(turn.framework_run_state).items
        items = items + tool_result_items(items, turn.tool_calls, strict=False)
        client = self.client(turn.session_settings)
        return count_tokens(client.model, self.model_input(turn, items), self.offered_tools(turn))

    def select_compaction_cutoff(
        self, turn: AgentTurnContext, retained_token_budget: int
    ) -> int | None:
        model = self.client(turn.session_settings).model
        return compaction.select_cutoff(model, turn.messages, retained_token_budget)

    async def summarize_context(self, request: ContextSummaryRequest) -> ContextSummaryResult:
        client = self.client(request.session_settings)
        return await compaction.summarize(
            client,
            self.settings(client),
            request,
            max_output_tokens=self.definition.max_output_tokens,
        )

    # -- model input -------------------------------------------------------------------------

    def client(self, session_settings: Mapping[str, Any]) -> ModelClient:
        """The model of this call: resolve_model's choice, else the definition's model."""
        resolve = self.definition.resolve_model
        return as_model_client(resolve(session_settings) if resolve else self.definition.model)

    def settings(self, client: ModelClient) -> dict[str, Any]:
        return {**(self.definition.model_settings or {}), **client.settings}

    def instructions(self, turn: AgentTurnContext) -> str:
        instructions = self.definition.instructions
        if isinstance(instructions, str):
            return instructions
        context = InstructionContext(turn.session_settings, turn.interaction_mode, turn.turn_id)
        text = instructions(context)
        if not isinstance(text, str):
            raise TypeError("an instructions function must return str")
        return text

    def model_input(self, turn: AgentTurnContext, items: Sequence[Item]) -> list[Item]:
        """System instructions, the summary, the stored history, the plan note before the
        turn's messages, then the turn's unstored items."""
        messages: list[Item] = []
        instructions = self.instructions(turn)
        if instructions:
            messages.append({"role": "system", "content": instructions})
        if turn.context_summary is not None:
            messages.append(summary_item(turn.context_summary))
        earlier, current = split_turn(turn)
        messages += earlier
        note = build_plan_note(turn.plan, turn.interaction_mode)
        if note is not None:
            messages.append(user_item(note))
        messages += current
        messages += items
        return [strip_for_request(message) for message in messages]

    def offered_tools(self, turn: AgentTurnContext) -> list[dict[str, Any]]:
        """A planning turn offers only write_todos; an enabled built-in name is reserved."""
        enabled = turn.enabled_built_in_tools
        if turn.interaction_mode == "planning":
            return [BUILT_IN_TOOL_DEFINITIONS["write_todos"]] if "write_todos" in enabled else []
        tools = [tool.definition() for name, tool in self.tools.items() if name not in enabled]
        tools += self._source_definitions(enabled)
        return tools + [
            BUILT_IN_TOOL_DEFINITIONS[name] for name in BUILT_IN_TOOL_NAMES if name in enabled
        ]

    # -- one model call ----------------------------------------------------------------------

    async def _model_step(
        self, turn: AgentTurnContext, items: list[Item], count: int
    ) -> AgentTurnOutcome:
        client = self.client(turn.session_settings)
        settings = self.settings(client)
        tool_choice: Any = None
        if self._forces_write_todos(turn, items):
            problem = self._forced_choice_problem(client)
            if problem:
                return TurnCompleted(
                    new_messages=to_framework_messages(items),
                    usage=AgentUsage(),
                    turn_error=problem,
                )
            tool_choice = {"type": "function", "function": {"name": "write_todos"}}
        request = ModelRequest(
            messages=self.model_input(turn, items),
            settings=settings,
            tools=self.offered_tools(turn),
            tool_choice=tool_choice,
            max_output_tokens=self.definition.max_output_tokens,
            on_text=lambda text: turn.events.write("text_delta", {"text": text}),
            on_reasoning=lambda text: turn.events.write("reasoning_delta", {"text": text}),
            heartbeat=turn.heartbeat,
        )
        reply = await stream_completion(client, request)
        _fix_tool_call_ids(reply.item, _used_tool_call_ids(turn, items))
        items.append(reply.item)
        if reply.tool_calls:
            return self._tool_calls_requested(turn, items, count, reply)
        return await self._answered(turn, items, count, reply)

    def _tool_calls_requested(
        self, turn: AgentTurnContext, items: list[Item], count: int, reply: ModelReply
    ) -> ToolCallsRequested:
        calls = [
            self._deferred_call(
                turn, call["id"], call["function"]["name"], call["function"]["arguments"]
            )
            for call in reply.tool_calls
        ]
        return ToolCallsRequested(
            framework_run_state=RunState(items, count).dump(),
            tool_calls=calls,
            usage=reply.usage,
            model_call_metadata=reply.metadata,
        )

    async def _answered(
        self, turn: AgentTurnContext, items: list[Item], count: int, reply: ModelReply
    ) -> AgentTurnOutcome:
        decision = None
        if self.definition.decide_turn_continuation is not None:
            decision = await self._decide(turn, "answer", count, answer=reply.text)
        if not isinstance(decision, TurnContinuation):
            return TurnCompleted(
                new_messages=to_framework_messages(items),
                usage=reply.usage,
                model_call_metadata=reply.metadata,
            )
        if count >= MAX_CONSECUTIVE_CONTINUATIONS:
            return TurnCompleted(
                new_messages=to_framework_messages(items),
                usage=reply.usage,
                model_call_metadata=reply.metadata,
                turn_error=CONTINUATION_LIMIT_ERROR,
            )
        # The continuation is stored as user text, so the next request ends with a user message.
        items.append(user_item(decision.message))
        return TurnContinued(
            framework_run_state=RunState([], count + 1).dump(),
            new_messages=to_framework_messages(items),
            usage=reply.usage,
            model_call_metadata=reply.metadata,
        )

    async def _decide_after_tools(
        self,
        turn: AgentTurnContext,
        items: list[Item],
        resolved: Sequence[Mapping[str, Any]],
        count: int,
    ) -> TurnCompleted | int:
        """Asks the hook once the tool results are in: "end" completes the turn with them, a
        continuation's message follows them; returns the continuations made in a row."""
        records = _records_of(turn.tool_calls, [str(call["id"]) for call in resolved])
        decision = await self._decide(turn, "tool_calls", count, tool_calls=records)
        if decision == "end":
            return TurnCompleted(new_messages=to_framework_messages(items), usage=AgentUsage())
        if not isinstance(decision, TurnContinuation):
            return 0
        if count >= MAX_CONSECUTIVE_CONTINUATIONS:
            return TurnCompleted(
                new_messages=to_framework_messages(items),
                usage=AgentUsage(),
                turn_error=CONTINUATION_LIMIT_ERROR,
            )
        items.append(user_item(decision.message))
        return count + 1

    # -- tool sources ------------------------------------------------------------------------

    def _source_definitions(self, reserved: Sequence[str]) -> list[dict[str, Any]]:
        """The sources' listed tools, skipping a name the agent's own tools or an enabled
        built-in already use."""
        taken = set(self.tools) | set(reserved)
        definitions: list[dict[str, Any]] = []
        for source in self.sources:
            for definition in source.tool_definitions():
                name = definition["function"]["name"]
                if name not in taken:
                    taken.add(name)
                    definitions.append(definition)
        return definitions

    def _offering_source(self, turn: AgentTurnContext, name: str) -> ToolSource | None:
        if name in self.tools or name in turn.enabled_built_in_tools:
            return None
        return next((source for source in self.sources if source.has_tool(name)), None)

    def _source_of(self, record: AgentToolCall) -> ToolSource | None:
        if record.tool_source_reference is None and record.tool_name in self.tools:
            return None
        return next((source for source in self.sources if source.owns(record)), None)

    def _deferred_call(
        self, turn: AgentTurnContext, tool_call_id: str, name: str, arguments: str
    ) -> DeferredToolCall:
        source = self._offering_source(turn, name)
        if source is not None:
            return source.deferred_tool_call(
                tool_call_id, name, arguments, turn.resolve_tool_policy
            )
        return DeferredToolCall(
            tool_call_id=tool_call_id,
            tool_name=name,
            arguments=arguments,
            policy=self._policy(turn, name),
        )

    def _policy(self, turn: AgentTurnContext, name: str) -> ToolPolicy:
        if name in turn.enabled_built_in_tools:
            return _BUILT_IN_POLICY
        tool = self.tools.get(name)
        if tool is None:
            # An unknown tool fails without taking effect, so it needs no approval.
            return turn.resolve_tool_policy(name, "read", False)
        return turn.resolve_tool_policy(name, tool.effect, tool.requires_approval)

    async def _decide(
        self,
        turn: AgentTurnContext,
        after: Literal["answer", "tool_calls"],
        count: int,
        *,
        answer: str | None = None,
        tool_calls: Sequence[AgentToolCall] = (),
    ) -> TurnContinuationDecision:
        decide = self.definition.decide_turn_continuation
        assert decide is not None
        context = TurnContinuationContext(
            after=after,
            turn_id=turn.turn_id,
            interaction_mode=turn.interaction_mode,
            session_settings=turn.session_settings,
            consecutive_continuations=count,
            answer=answer,
            tool_calls=tool_calls,
        )
        decision = decide(context)
        if inspect.isawaitable(decision):
            decision = await decision
        if (
            decision is not None
            and decision != "end"
            and not isinstance(decision, TurnContinuation)
        ):
            raise TypeError(
                "decide_turn_continuation must return TurnContinuation, 'end' or None, "
                f"not {decision!r}"
            )
        return decision

    # -- plan mode ---------------------------------------------------------------------------

    def _forces_write_todos(self, turn: AgentTurnContext, items: Sequence[Item]) -> bool:
        """required forces write_todos on a planning turn's first model call, without a draft."""
        if self.definition.planning_tool_choice != "required":
            return False
        if turn.interaction_mode != "planning" or "write_todos" not in turn.enabled_built_in_tools:
            return False
        if turn.plan is not None and turn.plan.status == "draft":
            return False
        _, current = split_turn(turn)
        return not any(item.get("role") == "assistant" for item in [*current, *items])

    def _forced_choice_problem(self, client: ModelClient) -> str | None:
        if client.supports_forced_tool_choice(self.settings(client)):
            return None
        return (
            f"planning_tool_choice 'required' needs a model that accepts a forced tool choice, "
            f"and {client.model} does not (supports_forced_tool_choice returned False)"
        )


def _records_of(records: Sequence[AgentToolCall], ids: Sequence[str]) -> list[AgentToolCall]:
    by_id = {record.tool_call_id: record for record in records}
    return [by_id[i] for i in ids if i in by_id]


def _used_tool_call_ids(turn: AgentTurnContext, items: Sequence[Item]) -> set[str]:
    _, current = split_turn(turn)
    return {str(call.get("id")) for item in [*current, *items] for call in tool_calls_of(item)}


def _fix_tool_call_ids(item: Item, used: set[str]) -> None:
    """Tool call IDs must be non-empty, one URL path segment (no '/', not '.' or '..'), and
    unique in the turn; some providers reuse IDs across responses, so such an ID is replaced
    in the stored item too."""
    for call in tool_calls_of(item):
        call_id = str(call.get("id") or "")
        if not call_id or path_segment_problem(call_id, "") or call_id in used:
            call_id = f"call_{uuid.uuid4().hex[:24]}"
            call["id"] = call_id
        used.add(call_id)
