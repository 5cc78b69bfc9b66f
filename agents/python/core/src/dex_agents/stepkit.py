"""The shape of a Step as the generic driver runs it.

A Step type is a `StepHandler`: an optional wait condition (`check`), an optional Execute
that runs user code outside any transaction (`begin` decides in the attempt's first commit
whether it runs at all), and `commit`, which records the outcome and names the next Steps in
one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, ClassVar, Generic, Protocol, TypedDict, final

from sqlalchemy.engine import Connection
from typing_extensions import TypeVar

from . import store
from .events import StreamingEventWriter
from .runner import FrameworkItemCache
from .store import EventRecord, Session
from .types import AgentMessage

if TYPE_CHECKING:
    from .flow import AgentSessionFlow, AgentSessionOptions
    from .otel import StepTracer


@final
class CompactionInput(TypedDict):
    """CompactContext's input: the last message sequence its summary covers."""

    through_sequence: int


# A Step execution's input as stored (JSON): None, the ID of the tool call or turn it acts
# on, ResumeTurn's count of the tool results it waits for, or CompactContext's input.
StepInput = str | int | CompactionInput | None


class RecoveryJson(TypedDict):
    detail: str
    attempt_progress: str
    error_type: str


# A next Step a commit names: its Step type and its input.
Successor = tuple[str, StepInput]


@dataclass(frozen=True)
class StepOptions:
    max_attempts: int = 1
    timeout_seconds: float | None = None
    failure_route: str | None = None
    # Whether the Step waits for a condition before it runs (shown as "waiting").
    waits: bool = False
    # Whether the session may move to a less busy Worker once the Step ends (see balance.py):
    # only after a wait between turns, so a turn's own Steps stay where it runs.
    moves_session_after: bool = False


@dataclass(frozen=True)
class Transition:
    """What a commit decided: the next Step executions, or to wait again. With `error`, the
    Step ends `failed` with that text though it names its next Steps (an attempt that never
    reached its runner: the history shows it failed, and a new Step tries again)."""

    next: Sequence[Successor] = ()
    wait_again: bool = False
    error: str | None = None


END = Transition()
WAIT_AGAIN = Transition(wait_again=True)


def go(*steps: Successor) -> Transition:
    return Transition(next=steps)


@dataclass(frozen=True)
class Wait:
    """A wait condition's answer: ready now, or look again at `deadline` (epoch seconds)
    or when the session is woken."""

    ready: bool
    deadline: float | None = None


READY = Wait(True)
NOT_READY = Wait(False)


@dataclass(frozen=True)
class Recovery:
    """Why a Step's attempts ran out, handed to its failure route."""

    detail: str
    attempt_progress: str  # NOT_STARTED or NOT_COMPLETED
    error_type: str

    def to_json(self) -> RecoveryJson:
        return {
            "detail": self.detail,
            "attempt_progress": self.attempt_progress,
            "error_type": self.error_type,
        }

    @staticmethod
    def from_json(value: RecoveryJson) -> Recovery:
        return Recovery(value["detail"], value["attempt_progress"], value["error_type"])


def stored_input(row: store.StepRow) -> tuple[StepInput, Recovery | None]:
    """A Step row's input and, on a failure route, its recovery. A Worker of a version before
    schema 6 still running during a rolling upgrade writes a failure route's recovery inside
    its input, `{"input": ..., "recovery": ...}`; such a row reads as if written in two fields
    (migration 6 moved those written before it)."""
    value = row.input_value
    if row.recovery is not None:
        return value, Recovery.from_json(json.loads(row.recovery))
    if isinstance(value, dict) and set(value) == {"input", "recovery"}:
        return value["input"], Recovery.from_json(value["recovery"])
    return value, None


class NonRetryableError(Exception):
    """An Execute failure that another attempt cannot fix, such as a runner defect."""


@dataclass(frozen=True)
class RetryAdvice:
    """A Step's judgement of a failed attempt: whether another attempt may help, and the
    least time to wait before it (the driver's backoff applies too)."""

    retry: bool
    delay: float | None = None
    # Why not, for the Worker's log line.
    reason: str | None = None


class MessageLoader(Protocol):
    """A session's stored messages as a Step loads them (the Worker caches them per session)."""

    def load(
        self, conn: Connection, session_id: str, through: int, after: int = 0
    ) -> list[AgentMessage]: ...

    def framework_items(self, session_id: str) -> FrameworkItemCache: ...


class StepServices(Protocol):
    """What a Step gets from the Worker that runs it, and nothing else of the Worker's."""

    @property
    def messages(self) -> MessageLoader: ...

    def event_writer(self, ctx: StepScope, turn_id: str | None) -> StreamingEventWriter: ...

    def checkpoint_saver(self, ctx: StepScope) -> Callable[[str], Awaitable[None]]: ...

    @property
    def tracer(self) -> StepTracer | None:
        """The Worker's tracer; None while tracing is off."""
        ...


# What a Step's `begin` loads for its Execute and commit (a frozen value per Step type).
LoadedT = TypeVar("LoadedT")
# What a Step's Execute returns to its commit.
ResultT = TypeVar("ResultT", default=None)


@dataclass
class StepScope:
    """What the context of every Step holds, whatever its Step type loads: the helpers that
    several Step types share take this."""

    services: StepServices
    flow: AgentSessionFlow
    session_id: str
    step_execution_id: str
    step_type: str
    # The Step's input; a failure route's is the failing Step's.
    step_input: StepInput
    # Why the Step that routed here failed: set on a failure route only.
    recovery: Recovery | None = None
    attempt: int = 0
    checkpoint: str | None = None
    scheduled_at: str = ""
    # Whether an earlier attempt passed its point of no return (a tool took effect).
    progress_started: bool = False
    # Events the attempt streamed and left unwritten, written first in its commit.
    unflushed: list[EventRecord] = field(default_factory=list)
    # The rows of the successors the Step's last commit scheduled (for the driver).
    successors: dict[str, store.StepRow] = field(default_factory=dict)
    # The session's AgentTraceContext as the attempt began; read only while tracing is on.
    trace_context: str | None = None

    def id_input(self) -> str:
        """The input of a Step that acts on one tool call or turn: its ID."""
        value = self.step_input
        if not isinstance(value, str):
            raise NonRetryableError(f"{self.step_execution_id}: input {value!r} is not an ID")
        return value

    def count_input(self) -> int:
        """The input of a Step that counts (ResumeTurn: the tool results it waits for)."""
        value = self.step_input
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise NonRetryableError(f"{self.step_execution_id}: input {value!r} is not a count")
        return int(value)

    def compaction_input(self) -> CompactionInput:
        value = self.step_input
        if not isinstance(value, dict) or "through_sequence" not in value:
            raise NonRetryableError(
                f"{self.step_execution_id}: input {value!r} names no through_sequence"
            )
        return value


@dataclass
class StepContext(StepScope, Generic[LoadedT]):
    """A Step's context as its own handler sees it: with what its `begin` loaded."""

    # What `begin` loaded for Execute and commit; retries of the same run reuse it.
    loaded: LoadedT | None = None

    def need_loaded(self) -> LoadedT:
        """The value `begin` loaded; Execute and commit run only after a begin that loads it."""
        if self.loaded is None:
            raise RuntimeError(f"{self.step_execution_id}: nothing was loaded for this attempt")
        return self.loaded


@dataclass
class StepTx:
    """A Step's view of its transaction: the locked session plus what it will write."""

    conn: Connection
    session: Session
    ctx: StepScope
    events: list[EventRecord] = field(default_factory=list)
    progress_started: bool = False

    def event(
        self, type: str, payload: Mapping[str, object], *, turn_id: str | None = None
    ) -> None:
        state = self.session.state
        self.events.append(
            EventRecord(
                type=type,
                turn_id=turn_id
                if turn_id is not None
                else (state.active_turn_id if state else None),
                attempt=max(self.ctx.attempt, 1),
                payload=dict(payload),
                step_execution_id=self.ctx.step_execution_id,
            )
        )

    def publish(self, channel: str, payload: str, key: str = "") -> int:
        return store.publish(self.conn, self.session.session_id, channel, payload, key)

    def activate(self) -> str | None:
        """This Step consumed an input from outside the session: with tracing on, it emits
        the activation's root span and stores its traceparent in the session (returned);
        None while tracing is off or when the root has no valid context."""
        tracer = self.ctx.services.tracer
        return None if tracer is None else tracer.activate(self)

    def mark_started(self) -> None:
        """The attempt passed its point of no return (a tool may now take effect)."""
        self.progress_started = True


class StepHandler(Generic[LoadedT, ResultT]):
    """A Step type; LoadedT is what its `begin` loads for Execute and commit (None when it
    loads nothing), ResultT what its Execute returns to its commit (None without Execute)."""

    step_type: ClassVar[str]
    options: ClassVar[StepOptions] = StepOptions()
    has_execute: ClassVar[bool] = False
    # Whether cancel_turn cancels an open execution of this Step, a running attempt included.
    cancelled_by_cancel_turn: ClassVar[bool] = False

    def retry_advice(self, error: BaseException) -> RetryAdvice:
        """Whether a failed Execute is worth another attempt (while attempts remain)."""
        return RetryAdvice(retry=not isinstance(error, NonRetryableError))

    def failure_route(self, ctx: StepContext[LoadedT], tx: StepTx) -> str | None:
        """Where the Step goes once its attempts ran out."""
        return self.options.failure_route

    def check(self, ctx: StepContext[LoadedT], conn: Connection) -> Wait:
        """The wait condition, from committed state (read-only)."""
        return READY

    def begin(self, ctx: StepContext[LoadedT], tx: StepTx) -> Transition | None:
        """Runs in the attempt's first commit; a Transition finishes the Step without Execute."""
        return None

    def timeout(self, options: AgentSessionOptions) -> timedelta | None:
        """What bounds one Execute (an option of the session's flow); None: nothing."""
        return None

    async def execute(self, ctx: StepContext[LoadedT]) -> ResultT:
        """Runs outside any transaction; only Steps with `has_execute` have one."""
        raise NotImplementedError(f"{self.step_type} has no Execute")

    def commit(self, ctx: StepContext[LoadedT], tx: StepTx, result: ResultT) -> Transition:
        raise NotImplementedError
