"""RemoteRunner: a framework runner that lives in another process, called over HTTP.

The engine checks a runner's optional capabilities with `isinstance` against runtime
protocols, so a RemoteRunner must have exactly the methods its remote side advertises.
`RemoteRunner(...)` therefore returns an instance of a class composed for those
capabilities: the base class carries the required methods, one mixin per capability adds
its methods, and `_runner_class` builds (and caches) the subclass of the mixins chosen. Each
mixin is an ordinary typed class, so mypy checks every method; only the composition is
dynamic.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any, ClassVar

from ..errors import RunnerUnavailableError
from ..runner import (
    AgentTurnContext,
    AgentTurnOutcome,
    ContextSummaryRequest,
    ContextSummaryResult,
    DeferredToolExecution,
    DeferredToolOutcome,
    FrameworkMessage,
    ToolTaskCancellation,
    ToolTaskPoll,
    ToolTaskPollOutcome,
    earliest_cut_within_budget,
)
from ..types import AgentMessage
from . import wire
from .call import SILENCE_TIMEOUT_SECONDS, Endpoint, LineHandlers, NeedHistory, post

logger = logging.getLogger("dex_agents.remote")

# While a runner is unavailable, a model call is made again after this wait, doubled each
# time up to the longest.
RETRY_FIRST_SECONDS = 0.5
RETRY_MAX_SECONDS = 30.0
# Sessions whose last sent sequence a runner remembers (least recently used forgotten).
HISTORY_MEMORY_SESSIONS = 10_000
# About this many characters of text make one token, for the local estimates.
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class RemoteCapabilities:
    """The optional runner capabilities a remote flow advertises in `describe`."""

    unfinished_turn_messages: bool = False
    tool_tasks: bool = False
    tool_task_cancellation: bool = False
    context_compaction: bool = False
    plan_mode: bool = False
    tool_steps_read_turn: bool = False

    @staticmethod
    def from_wire(value: Mapping[str, Any]) -> RemoteCapabilities:
        known = {name for name in RemoteCapabilities.__dataclass_fields__}
        return RemoteCapabilities(**{k: bool(v) for k, v in value.items() if k in known})


class _SentHistory:
    """Per session, the last message sequence this runner sent to its URL (bounded LRU)."""

    def __init__(self, limit: int = HISTORY_MEMORY_SESSIONS) -> None:
        self._sent: OrderedDict[str, int] = OrderedDict()
        self._limit = limit

    def messages_after(self, session_id: str, messages: Sequence[AgentMessage]) -> int:
        """What to send: only messages after the last one sent, when that is safe; else 0."""
        first, last, contiguous = wire.history_range(messages)
        sent = self._sent.get(session_id)
        if sent is None or not contiguous or not messages or sent < first - 1:
            return 0
        return min(sent, last)

    def remember(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
        _, last, _ = wire.history_range(messages)
        self._sent[session_id] = last
        self._sent.move_to_end(session_id)
        while len(self._sent) > self._limit:
            self._sent.popitem(last=False)


class RemoteRunner:
    """Implements the runner protocol by calling a runner served at `url` for `flow_type`.

    `RemoteRunner(url, flow_type, capabilities=...)` returns an instance of a subclass that
    has exactly the optional methods of `capabilities` (see the module docstring). Usually
    built by `remote_flow`, which reads the capabilities from the runner's `describe`.
    """

    capabilities: ClassVar[RemoteCapabilities] = RemoteCapabilities()
    # `tool_call_started` is written when the runner accepts the call, not when the tool Step
    # begins: a call that never reached the runner has none (see WritesToolCallStarted).
    writes_tool_call_started: ClassVar[bool] = True

    def __new__(
        cls,
        url: str,
        flow_type: str,
        *,
        token: str | None = None,
        capabilities: RemoteCapabilities = RemoteCapabilities(),
        silence_timeout: float = SILENCE_TIMEOUT_SECONDS,
    ) -> RemoteRunner:
        return super().__new__(_runner_class(capabilities))

    def __init__(
        self,
        url: str,
        flow_type: str,
        *,
        token: str | None = None,
        capabilities: RemoteCapabilities = RemoteCapabilities(),
        silence_timeout: float = SILENCE_TIMEOUT_SECONDS,
    ) -> None:
        self.url = url
        self.flow_type = flow_type
        self.endpoint = Endpoint(url, token, silence_timeout)
        self._history = _SentHistory()

    def __repr__(self) -> str:
        return f"RemoteRunner({self.url!r}, {self.flow_type!r})"

    # -- required methods ------------------------------------------------------------------

    def build_user_message(self, text: str) -> FrameworkMessage:
        """No call: a Step's transaction is no place for one. The serving side turns this
        neutral item into its framework's message when it reads the history."""
        return FrameworkMessage(role="user", text=text, framework_item=wire.user_item(text))

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        return wire.turn_outcome(await self._turn_call("run_model_step", turn))

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> DeferredToolOutcome:
        record = call.tool_call
        started = {"tool_call_id": record.tool_call_id, "tool_name": record.tool_name}
        handlers = LineHandlers(
            call.events,
            call.heartbeat,
            call.save_heartbeat_checkpoint,
            accepted=lambda: call.events.write("tool_call_started", started),
        )
        turn = call.turn
        messages = () if turn is None else turn.messages

        def body(after: int) -> dict[str, Any]:
            turn_object = None if turn is None else wire.turn_body(self.flow_type, turn, after)
            return wire.tool_call_body(self.flow_type, call, turn_object)

        result = await self._with_history(
            "execute_deferred_tool_call", call.flow_id, messages, body, handlers
        )
        return wire.deferred_outcome(result)

    async def _turn_call(self, method: str, turn: AgentTurnContext) -> Any:
        """A call whose body is the turn, with the history the runner lacks."""
        return await self._until_available(
            method,
            turn.flow_id,
            turn.messages,
            lambda after: wire.turn_body(self.flow_type, turn, after),
            LineHandlers(turn.events, turn.heartbeat),
        )

    async def _until_available(
        self,
        method: str,
        session_id: str,
        messages: Sequence[AgentMessage],
        body: Any,
        handlers: LineHandlers,
    ) -> Any:
        """Calls again, with backoff, while the runner is unavailable: such a call never
        started, and these methods may run again, so a restarting runner costs the Step no
        attempt. The Step's method timeout bounds the wait. Logs the wait once per call, and
        the runner's return."""
        delay = RETRY_FIRST_SECONDS
        waited = False
        while True:
            try:
                answer = await self._with_history(method, session_id, messages, body, handlers)
            except RunnerUnavailableError as error:
                if not waited:
                    logger.warning(
                        "%s of session %s: the runner is unavailable; calling again with "
                        "backoff (%g s doubling to %g s): %s",
                        method,
                        session_id,
                        delay,
                        RETRY_MAX_SECONDS,
                        error,
                    )
                    waited = True
                await asyncio.sleep(delay)
                delay = min(RETRY_MAX_SECONDS, delay * 2)
                continue
            if waited:
                logger.info("%s of session %s: the runner answered", method, session_id)
            return answer

    # -- the history delta -----------------------------------------------------------------

    async def _with_history(
        self,
        method: str,
        session_id: str,
        messages: Sequence[AgentMessage],
        body: Any,
        handlers: LineHandlers,
    ) -> Any:
        """Sends only the messages the runner lacks; answers one `need_history` by resending
        from the sequence it names. A second one means the runner cannot take the call."""
        after = self._history.messages_after(session_id, messages)
        answer = await post(self.endpoint, method, body(after), handlers)
        if isinstance(answer, NeedHistory):
            first, _, _ = wire.history_range(messages)
            resend = answer.after_sequence if answer.after_sequence >= first else 0
            answer = await post(self.endpoint, method, body(resend), handlers)
            if isinstance(answer, NeedHistory):
                raise RunnerUnavailableError(
                    f"the runner at {self.endpoint.method_url(method)} asked twice for the "
                    f"history of session {session_id!r}"
                )
        if messages:
            self._history.remember(session_id, messages)
        return answer


class _UnfinishedTurnMessages(RemoteRunner):
    async def build_unfinished_turn_messages(
        self, turn: AgentTurnContext
    ) -> Sequence[FrameworkMessage]:
        result = await self._turn_call("build_unfinished_turn_messages", turn)
        return wire.unfinished_messages(result)


class _ToolTasks(RemoteRunner):
    async def poll_tool_task(self, poll: ToolTaskPoll) -> ToolTaskPollOutcome:
        handlers = LineHandlers(poll.events, poll.heartbeat)
        result = await post(
            self.endpoint, "poll_tool_task", wire.poll_body(self.flow_type, poll), handlers
        )
        return wire.poll_outcome(_no_history_answer(result))


class _ToolTaskCancellation(RemoteRunner):
    async def cancel_tool_task(self, cancellation: ToolTaskCancellation) -> None:
        body = wire.cancel_body(self.flow_type, cancellation)
        handlers = LineHandlers(heartbeat=cancellation.heartbeat)
        _no_history_answer(await post(self.endpoint, "cancel_tool_task", body, handlers))


class _ContextCompaction(RemoteRunner):
    """Estimates and the cutoff are answered here, from the stored texts (they run before
    every model call and are synchronous); only the summary is a call."""

    def estimate_input_tokens(self, turn: AgentTurnContext) -> int:
        return sum(_message_tokens(message) for message in turn.messages)

    def select_compaction_cutoff(
        self, turn: AgentTurnContext, retained_token_budget: int
    ) -> int | None:
        return select_cutoff(turn.messages, retained_token_budget)

    async def summarize_context(self, request: ContextSummaryRequest) -> ContextSummaryResult:
        result = await self._until_available(
            "summarize_context",
            request.flow_id,
            request.messages,
            lambda after: wire.summary_body(self.flow_type, request, after),
            LineHandlers(request.events, request.heartbeat),
        )
        return wire.summary_result(result)


class _PlanMode(RemoteRunner):
    supports_plan_mode: bool = True


class _ToolStepsReadTurn(RemoteRunner):
    tool_steps_read_turn: bool = True


def _no_history_answer(answer: Any) -> Any:
    if isinstance(answer, NeedHistory):
        raise RunnerUnavailableError("a runner asked for history in a call that carries none")
    return answer


_MIXINS: tuple[tuple[str, type[RemoteRunner]], ...] = (
    ("unfinished_turn_messages", _UnfinishedTurnMessages),
    ("tool_tasks", _ToolTasks),
    ("tool_task_cancellation", _ToolTaskCancellation),
    ("context_compaction", _ContextCompaction),
    ("plan_mode", _PlanMode),
    ("tool_steps_read_turn", _ToolStepsReadTurn),
)


@cache
def _runner_class(capabilities: RemoteCapabilities) -> type[RemoteRunner]:
    """The RemoteRunner subclass with exactly the methods of `capabilities`."""
    chosen = asdict(capabilities)
    bases = tuple(mixin for name, mixin in _MIXINS if chosen[name])
    if not bases:
        return RemoteRunner
    names = "".join(mixin.__name__.title().replace("_", "") for mixin in bases)
    return type(f"RemoteRunner{names}", bases, {"capabilities": capabilities})


# -- local compaction estimates ------------------------------------------------------------


def _message_tokens(message: AgentMessage) -> int:
    text = "".join(
        part or ""
        for part in (message.text, message.tool_name, message.tool_arguments, message.tool_output)
    )
    return max(1, len(text) // CHARS_PER_TOKEN)


def _cut_points(messages: Sequence[AgentMessage]) -> list[int]:
    """Indexes i such that a cut after messages[i] separates no tool call from its result
    (the Stepwise runner's rule, read from the stored projections)."""
    cuts: list[int] = []
    open_calls: set[str] = set()
    for index, message in enumerate(messages):
        if message.tool_call_id is not None:
            if message.role == "tool":
                open_calls.discard(message.tool_call_id)
            else:
                open_calls.add(message.tool_call_id)
        following = messages[index + 1] if index + 1 < len(messages) else None
        if not open_calls and following is not None and following.role != "tool":
            cuts.append(index)
    return cuts


def select_cutoff(messages: Sequence[AgentMessage], retained_token_budget: int) -> int | None:
    """The last sequence to summarize: the earliest cut whose later messages fit in the
    retained budget, else the latest cut; None when the history has no cut."""
    cuts = _cut_points(messages)
    if not cuts:  # no sizes to count
        return None
    sizes = [_message_tokens(message) for message in messages]
    return earliest_cut_within_budget(messages, cuts, sizes, retained_token_budget)
