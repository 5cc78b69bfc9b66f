"""The runner protocol: what a framework adapter implements, and what the session gives it.

A runner lets its framework make exactly one model call per `run_model_step` and runs no tool
it can defer. The session stores the framework's run state, runs every tool call in its own
Step through `execute_deferred_tool_call`, and calls the runner again with the final records.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from typing_extensions import TypeVar

from .errors import DexAgentsError
from .policy import ToolPolicy, resolve_tool_policy
from .types import (
    AgentMessage,
    AgentPlan,
    AgentToolCall,
    AgentUsage,
    ContextSummary,
    InteractionMode,
    MessageRole,
    QuestionAnswer,
    ToolEffect,
)

__all__ = [
    "AgentFrameworkRunner",
    "AgentTurnContext",
    "AgentTurnOutcome",
    "BuiltInToolName",
    "ContextCompactionRunner",
    "ContextSummaryRequest",
    "ContextSummaryResult",
    "DeferredToolCall",
    "DeferredToolExecution",
    "DeferredToolOutcome",
    "EventWriter",
    "FrameworkItemCache",
    "FrameworkMessage",
    "ModelCallMetadata",
    "PlanModeRunner",
    "PolicyResolver",
    "ToolCallsRequested",
    "ToolExecutionError",
    "ToolExecutionResult",
    "ToolInputRequested",
    "ToolPolicy",
    "ToolStepsReadTurn",
    "ToolTaskCancellation",
    "ToolTaskCanceller",
    "ToolTaskPending",
    "ToolTaskPoll",
    "ToolTaskPollOutcome",
    "ToolTaskPoller",
    "ToolTaskStarted",
    "TurnCompleted",
    "TurnContinued",
    "UnfinishedTurnMessageBuilder",
    "WarmUpRunner",
    "earliest_cut_within_budget",
    "messages_left_out",
]

log = logging.getLogger("dex_agents")


class ToolExecutionError(DexAgentsError):
    """A tool failure the model should see. Recorded `failed` and never retried."""


@dataclass(frozen=True)
class FrameworkMessage:
    """The stored projection of one framework item, plus the item itself as JSON text.

    `framework_item` is replayed to the framework unchanged on later turns.
    """

    role: MessageRole
    framework_item: str
    text: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    tool_arguments: str | None = None
    tool_output: str | None = None


@dataclass(frozen=True)
class DeferredToolCall:
    tool_call_id: str
    tool_name: str
    arguments: str
    policy: ToolPolicy | None = None
    tool_source_reference: str | None = None


@dataclass(frozen=True)
class ModelCallMetadata:
    request_model: str | None = None
    response_model: str | None = None
    provider_name: str | None = None
    response_id: str | None = None
    finish_reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class TurnCompleted:
    """The model gave a final answer. `new_messages` are the turn's items not stored yet."""

    new_messages: Sequence[FrameworkMessage] = ()
    usage: AgentUsage | None = None
    model_call_metadata: ModelCallMetadata | None = None
    turn_error: str | None = None


@dataclass(frozen=True)
class ToolCallsRequested:
    """The model asked for tools. Each call runs in its own Step; the runner resumes later."""

    framework_run_state: str
    tool_calls: Sequence[DeferredToolCall]
    usage: AgentUsage | None = None
    new_messages: Sequence[FrameworkMessage] = ()
    model_call_metadata: ModelCallMetadata | None = None


@dataclass(frozen=True)
class TurnContinued:
    """Make another model call in the same turn (the built-in loop's continuation)."""

    framework_run_state: str
    new_messages: Sequence[FrameworkMessage] = ()
    usage: AgentUsage | None = None
    model_call_metadata: ModelCallMetadata | None = None


AgentTurnOutcome = TurnCompleted | ToolCallsRequested | TurnContinued


@runtime_checkable
class EventWriter(Protocol):
    """Writes an event to the session's stream. Safe to call from any thread."""

    def write(self, type: str, payload: Mapping[str, Any]) -> None: ...


PolicyResolver = Callable[[str, "ToolEffect | None", "bool | None"], ToolPolicy]

ParsedT = TypeVar("ParsedT")
FoldT = TypeVar("FoldT")


class FrameworkItemCache:
    """What a runner made of one session's stored `framework_item`s, by message sequence.

    Stored messages never change, so a Worker keeps one of these per session beside its
    cached messages, and a RunModel parses only the messages appended since the last one
    (`parsed`) and extends the runner's history only by them (`folded`).
    A value is kept with the item text and the parse function it came from and is used only
    when both match. Cached values are shared between Steps: a runner must treat them as
    read-only and hand its framework copies of whatever the framework may change.
    """

    def __init__(self) -> None:
        self._items: dict[int, tuple[str, Callable[[str], Any], Any]] = {}
        # fold -> (the messages it has folded, its value for them)
        self._folds: dict[Callable[..., Any], tuple[list[AgentMessage], Any]] = {}

    def parsed(self, message: AgentMessage, parse: Callable[[str], ParsedT]) -> ParsedT:
        """`parse(message.framework_item)`, computed once per stored message."""
        item = message.framework_item
        entry = self._items.get(message.sequence)
        if entry is not None and entry[1] is parse and (entry[0] is item or entry[0] == item):
            value: ParsedT = entry[2]
            return value
        value = parse(item)
        self._items[message.sequence] = (item, parse, value)
        return value

    def folded(
        self,
        messages: Sequence[AgentMessage],
        fold: Callable[[FoldT | None, Sequence[AgentMessage]], FoldT],
    ) -> FoldT:
        """`fold(None, messages)`, computed from the messages appended since the last call.

        When `messages` begin with the messages of this fold's last call (the same stored
        messages: a session's history only grows between its Steps), the value is
        `fold(last_value, appended)`; otherwise, e.g. after a context summary moved the
        history's start, `fold(None, messages)`. `fold` must be one function (it keys the
        memo), must not change the earlier value it is given, and its result is shared by
        every later Step of the session: treat it as read-only.
        """
        earlier: FoldT | None = None
        start = 0
        memo = self._folds.get(fold)
        if memo is not None:
            done, cached = memo
            # List equality tries identity first: the same cached objects compare at C speed.
            if len(messages) >= len(done) and list(messages[: len(done)]) == done:
                if len(messages) == len(done):
                    unchanged: FoldT = cached
                    return unchanged
                earlier, start = cached, len(done)
        value = fold(earlier, messages[start:])
        self._folds[fold] = (list(messages), value)
        return value

    def retain(self, after: int, through: int) -> None:
        """Forgets the values of messages outside the sequences (after, through]."""
        if any(not after < sequence <= through for sequence in self._items):
            self._items = {
                sequence: entry
                for sequence, entry in self._items.items()
                if after < sequence <= through
            }
        if any(
            done and not (after < done[0].sequence and done[-1].sequence <= through)
            for done, _ in self._folds.values()
        ):
            self._folds.clear()

    def __len__(self) -> int:
        return len(self._items)


@dataclass(frozen=True)
class AgentTurnContext:
    flow_id: str
    turn_id: str
    attempt: int
    step_execution_id: str
    messages: Sequence[AgentMessage]
    framework_run_state: str | None
    tool_calls: Sequence[AgentToolCall]
    events: EventWriter
    # The contract's heartbeat. This engine fences each attempt by its Step-execution row and
    # each Worker by its lease, so a heartbeat renews nothing here: a runner may call it and
    # none needs to.
    heartbeat: Callable[[], None]
    tool_policies: Mapping[str, ToolPolicy]
    default_tool_effect: ToolEffect
    enabled_built_in_tools: tuple[str, ...] = ()
    session_settings: Mapping[str, Any] = field(default_factory=dict)
    interaction_mode: InteractionMode = "chat"
    plan: AgentPlan | None = None
    context_summary: ContextSummary | None = None
    framework_items: FrameworkItemCache = field(
        default_factory=FrameworkItemCache, compare=False, repr=False
    )
    """The session's parsed framework items; a Worker keeps it between Steps."""

    def parsed(self, message: AgentMessage, parse: Callable[[str], ParsedT]) -> ParsedT:
        """`parse(message.framework_item)`, parsed once per stored message of the session.

        `parse` must be one function (not a new lambda per call), and its result is shared
        by every later Step of the session: treat it as read-only."""
        return self.framework_items.parsed(message, parse)

    def folded(self, fold: Callable[[FoldT | None, Sequence[AgentMessage]], FoldT]) -> FoldT:
        """`fold(None, self.messages)`, extended from the last Step's value by the messages
        stored since (see `FrameworkItemCache.folded`): a runner's history, built in time
        that does not grow with the session. Treat the result as read-only."""
        return self.framework_items.folded(self.messages, fold)

    def resolve_tool_policy(
        self,
        tool_name: str,
        framework_effect: ToolEffect | None = None,
        framework_requires_approval: bool | None = None,
    ) -> ToolPolicy:
        """The complete policy of a tool: explicit ToolPolicy, then framework metadata, then
        the session's default effect; approval defaults to the effect's default."""
        return resolve_tool_policy(
            tool_name,
            self.tool_policies,
            self.default_tool_effect,
            framework_effect=framework_effect,
            framework_requires_approval=framework_requires_approval,
        )


@dataclass(frozen=True)
class ToolExecutionResult:
    output: str
    """What the model reads as the call's result."""
    framework_data: str | None = None
    """The runner's own data about the call (a JSON text of its choosing): framework state the
    tool wrote, actions it asked for. Stored with the record, given back to the runner on
    `AgentToolCall.framework_data` in the RunModel Steps that follow."""


@dataclass(frozen=True)
class ToolInputRequested:
    """The tool needs the user's answer before it takes any effect."""

    question: str
    choices: Sequence[str] = ()
    allows_free_text: bool = True
    continuation: str | None = None


@dataclass(frozen=True)
class ToolTaskStarted:
    """The tool started remote work that the session polls."""

    task_id: str
    poll_interval_seconds: float


@dataclass(frozen=True)
class ToolTaskPending:
    poll_interval_seconds: float
    continuation: str | None = None


DeferredToolOutcome = ToolExecutionResult | ToolInputRequested | ToolTaskStarted
ToolTaskPollOutcome = ToolExecutionResult | ToolInputRequested | ToolTaskPending


@dataclass(frozen=True)
class DeferredToolExecution:
    flow_id: str
    turn_id: str
    step_execution_id: str
    tool_call: AgentToolCall
    idempotency_key: str
    attempt: int
    events: EventWriter
    heartbeat: Callable[[], None]
    save_heartbeat_checkpoint: Callable[[str], Awaitable[None]]
    heartbeat_checkpoint: str | None = None
    input_answers: Sequence[QuestionAnswer] = ()
    supports_tool_tasks: bool = False
    turn: AgentTurnContext | None = None
    """The active turn as a RunModel Step would see it (its stored messages, and the run state
    of the RunModel Step that requested this call), for a runner with `ToolStepsReadTurn`;
    None for any other runner."""


@runtime_checkable
class ToolStepsReadTurn(Protocol):
    """A runner whose tool Steps read the active turn (`DeferredToolExecution.turn`), e.g. to
    give a tool the framework's state as it was when the model asked for the call."""

    tool_steps_read_turn: bool


@runtime_checkable
class WritesToolCallStarted(Protocol):
    """A runner that writes `tool_call_started` itself (through the call's `events`), once the
    call really started: a runner in another process, when it accepted the call. The tool Step
    then leaves the event out of its begin, so a call that never reached the runner has none."""

    writes_tool_call_started: bool


@dataclass(frozen=True)
class ToolTaskPoll:
    flow_id: str
    tool_call: AgentToolCall
    idempotency_key: str
    attempt: int
    input_answers: Sequence[QuestionAnswer]
    events: EventWriter
    heartbeat: Callable[[], None]
    pending_answer: QuestionAnswer | None = None


@dataclass(frozen=True)
class ToolTaskCancellation:
    flow_id: str
    tool_call: AgentToolCall
    idempotency_key: str
    attempt: int
    heartbeat: Callable[[], None]


@dataclass(frozen=True)
class ContextSummaryRequest:
    flow_id: str
    turn_id: str
    attempt: int
    previous_summary: ContextSummary | None
    messages: Sequence[AgentMessage]
    through_sequence: int
    events: EventWriter
    heartbeat: Callable[[], None]
    input_token_budget: int
    session_settings: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ContextSummaryResult:
    text: str
    usage: AgentUsage | None = None
    model_call_metadata: ModelCallMetadata | None = None


ToolOutcomeT = TypeVar("ToolOutcomeT", default=ToolExecutionResult, covariant=True)


@runtime_checkable
class AgentFrameworkRunner(Protocol[ToolOutcomeT]):
    def build_user_message(self, text: str) -> FrameworkMessage: ...

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome: ...

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolOutcomeT: ...


@runtime_checkable
class WarmUpRunner(Protocol):
    """A runner with work to do before its first model call: imports, client set-up, loading
    what its framework would otherwise load inside the first RunModel (a model's tokenizer, a
    provider's module). A Worker awaits `warm_up` of each runner it hosts before it reports
    ready and takes Steps, so a fresh Worker's first model call costs what later ones cost.

    `warm_up` must not call the model nor fetch anything over the network, and should run
    long blocking work (a heavy import) in a thread, as a Worker may share its event loop with
    an application. A Worker logs what it raises and starts anyway: the first model call then
    meets the problem again, as a Step error."""

    async def warm_up(self) -> None: ...


async def warm_up_runners(runners: Iterable[object]) -> None:
    """Awaits `warm_up` of every distinct runner that has one, concurrently, logging how long
    each took and what any raised."""
    distinct = {id(r): r for r in runners if isinstance(r, WarmUpRunner)}
    await asyncio.gather(*(_warm_up(r) for r in distinct.values()))


async def _warm_up(runner: WarmUpRunner) -> None:
    name = type(runner).__name__
    started = time.monotonic()
    try:
        await runner.warm_up()
    except Exception as error:
        log.warning("%s could not warm up (%s: %s)", name, type(error).__name__, error)
        return
    log.info("%s warmed up in %.2f s", name, time.monotonic() - started)


@runtime_checkable
class UnfinishedTurnMessageBuilder(Protocol):
    async def build_unfinished_turn_messages(
        self, turn: AgentTurnContext
    ) -> Sequence[FrameworkMessage]: ...


@runtime_checkable
class ToolTaskPoller(Protocol):
    async def poll_tool_task(self, poll: ToolTaskPoll) -> ToolTaskPollOutcome: ...


@runtime_checkable
class ToolTaskCanceller(Protocol):
    async def cancel_tool_task(self, cancellation: ToolTaskCancellation) -> None: ...


@runtime_checkable
class ContextCompactionRunner(Protocol):
    def estimate_input_tokens(self, turn: AgentTurnContext) -> int: ...

    def select_compaction_cutoff(
        self, turn: AgentTurnContext, retained_token_budget: int
    ) -> int | None: ...

    async def summarize_context(self, request: ContextSummaryRequest) -> ContextSummaryResult: ...


def earliest_cut_within_budget(
    messages: Sequence[AgentMessage],
    cuts: Sequence[int],
    sizes: Sequence[int],
    retained_token_budget: int,
) -> int | None:
    """For `select_compaction_cutoff`: the sequence of the earliest cut (an index into
    `messages`, in order) after which the messages' `sizes` (tokens, one per message) fit in
    the retained budget, else of the latest cut; None when there is no cut."""
    if not cuts:
        return None
    retained = sum(sizes)
    previous = -1
    for index in cuts:
        retained -= sum(sizes[previous + 1 : index + 1])
        previous = index
        if retained <= retained_token_budget:
            return messages[index].sequence
    return messages[cuts[-1]].sequence


def messages_left_out(
    sizes: Sequence[int], cuts: Sequence[int], budget: int, note_tokens: int
) -> int:
    """For `summarize_context`: how many of the oldest messages to leave out of the summary
    request so that the rest (`sizes`: their tokens, in order) and the note saying how many
    were left out (`note_tokens`) fit in `budget`. It leaves out only through a cut (an index
    into `sizes`, in order: the message after it begins a whole exchange), the earliest that
    fits, else the latest; 0 when every message fits."""
    total = sum(sizes)
    if total <= budget:
        return 0
    dropped = 0
    for index in cuts:
        total -= sum(sizes[dropped : index + 1])
        dropped = index + 1
        if total + note_tokens <= budget:
            break
    return dropped


@runtime_checkable
class PlanModeRunner(Protocol):
    supports_plan_mode: bool


BuiltInToolName = Literal["ask_user", "durable_wait", "write_todos"]
