"""Wire types of the session contract.

Field names are the contract's snake_case JSON names, so a UI written against any core can read
a session. Every model ignores nothing: unknown fields are refused on the way in.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

ToolEffect = Literal["read", "idempotent_write", "non_idempotent_write", "unclassified"]
ToolCallStatus = Literal[
    "awaiting_approval",
    "approved",
    "awaiting_answer",
    "waiting_for_timer",
    "waiting_for_task",
    "rejected",
    "succeeded",
    "failed",
    "outcome_unknown",
]
FINAL_TOOL_CALL_STATUSES: frozenset[str] = frozenset(
    {"rejected", "succeeded", "failed", "outcome_unknown"}
)
SessionStatus = Literal[
    "waiting_for_user_message", "running_model", "running_tools", "compacting_context", "failed"
]
InteractionMode = Literal["chat", "planning", "executing"]
MessageRole = Literal["user", "assistant", "tool"]
InterruptKind = Literal["tool_approval", "question"]
CancellationReason = Literal["steered", "turn_cancelled"]
# What a session waits on a person for (an addition to the contract): derived from its pending
# interrupts, next to the contract's `status`, which stays `running_tools` meanwhile.
WaitingFor = Literal["approval", "answer"]


class WireModel(BaseModel):
    """JSON goes through the standard library both ways, because pydantic's own JSON refuses
    texts with an unpaired surrogate, which model and tool output may hold."""

    model_config = ConfigDict(extra="forbid")

    def to_json(self, indent: int | None = None) -> str:
        """JSON through the standard library, which keeps any str (pydantic's refuses a lone
        surrogate); compact unless `indent` is given."""
        value = self.model_dump(mode="json")
        separators = (",", ":") if indent is None else None
        return json.dumps(value, separators=separators, indent=indent, ensure_ascii=False)

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, **kwargs: Any) -> Self:
        return cls.model_validate(json.loads(json_data), **kwargs)


def json_text(value: Any) -> str:
    """Compact JSON that any str survives: a stored text may hold an unpaired surrogate, which
    UTF-8 cannot carry, so it is written as its JSON escape (`\\udc80`), which JSON.parse
    reads back as the same string."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    # Only a lone surrogate fails to encode; backslashreplace spells it `\\uXXXX`, which is
    # exactly its JSON escape (it can only occur inside a JSON string).
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class AgentSessionStartInput(WireModel):
    initial_message: str | None = None
    session_settings: dict[str, Any] | None = None


class AgentState(WireModel):
    status: SessionStatus = "waiting_for_user_message"
    turn_count: int = 0
    active_turn_id: str | None = None
    next_message_sequence: int = 1
    last_turn_error: str | None = None
    interaction_mode: InteractionMode = "chat"
    accepts_turn_control: bool = False


class AgentMessage(WireModel):
    sequence: int
    turn_id: str
    role: MessageRole
    text: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    tool_arguments: str | None = None
    tool_output: str | None = None
    framework_item: str
    created_at: str


class QuestionAnswer(WireModel):
    interrupt_id: str
    question: str
    answer: str
    resolution: Literal["answered", "declined", "deadline_passed"] = "answered"


class AgentToolCall(WireModel):
    tool_call_id: str
    turn_id: str
    tool_name: str
    arguments: str
    effect: ToolEffect
    requires_approval: bool
    status: ToolCallStatus
    output: str | None = None
    error: str | None = None
    rejection_message: str | None = None
    deferral_order: int
    tool_source_reference: str | None = None
    trace_context: str | None = None
    wait_until: str | None = None
    input_continuation: str | None = None
    input_answers: list[QuestionAnswer] = Field(default_factory=list)
    input_question: str | None = None
    input_choices: list[str] = Field(default_factory=list)
    input_allows_free_text: bool = True
    cancellation_reason: CancellationReason | None = None
    task_id: str | None = None
    task_poll_interval_seconds: int | None = None
    task_answer_pending: bool = False
    framework_data: str | None = None

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_TOOL_CALL_STATUSES


class AgentInterrupt(WireModel):
    interrupt_id: str
    kind: InterruptKind
    tool_call_id: str
    tool_name: str
    arguments: str
    created_at: str
    deadline: str | None = None
    question: str | None = None
    choices: list[str] = Field(default_factory=list)
    allows_free_text: bool = True


def waiting_for(interrupts: list[AgentInterrupt]) -> WaitingFor | None:
    """What the pending interrupts wait on a person for: an approval when any asks for one
    (it gates a tool call), else an answer when a question waits, else nothing."""
    kinds = {interrupt.kind for interrupt in interrupts}
    if "tool_approval" in kinds:
        return "approval"
    return "answer" if "question" in kinds else None


class AgentInterruptResolution(WireModel):
    approved: bool
    rejection_message: str | None = None
    answer: str | None = None


class AgentUsage(WireModel):
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0

    def plus(self, other: AgentUsage) -> AgentUsage:
        return AgentUsage(
            model_calls=self.model_calls + other.model_calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


class AgentUserMessage(WireModel):
    text: str
    plan_mode: bool = False


class PendingUserMessage(WireModel):
    message_id: str
    message: AgentUserMessage


class AgentPlanTask(WireModel):
    content: str
    status: Literal["pending", "in_progress", "completed"]


class AgentPlan(WireModel):
    revision: int
    status: Literal["draft", "active", "completed", "cleared"]
    tasks: list[AgentPlanTask] = Field(default_factory=list)
    updated_at: str


class PlanExecutionRequest(WireModel):
    revision: int


class ContextSummary(WireModel):
    generation: int
    first_sequence: int = 1
    last_sequence: int
    text: str
    created_at: str


class TurnCancellationRequest(WireModel):
    turn_id: str
    requested_at: str


class TurnReplySequence(WireModel):
    turn_id: str
    sequence: int


class TurnSessionSettings(WireModel):
    turn_id: str
    session_settings: dict[str, Any]


class AgentEvent(WireModel):
    type: str
    turn_id: str | None = None
    attempt: int = 1
    payload: str = "{}"
    step_execution_id: str = ""
    # Position of this event in the session's stream; resume after it.
    offset: int = 0
    created_at: str = ""


class AgentSnapshot(WireModel):
    state: AgentState | None
    messages: list[AgentMessage] = Field(default_factory=list)
    pending_interrupts: list[AgentInterrupt] = Field(default_factory=list)
    tool_calls: list[AgentToolCall] = Field(default_factory=list)
    usage: AgentUsage = Field(default_factory=AgentUsage)
    queued_message_count: int = 0
    plan: AgentPlan | None = None
    queued_messages: list[PendingUserMessage] = Field(default_factory=list)
    steered_messages: list[PendingUserMessage] = Field(default_factory=list)
    context_summary: ContextSummary | None = None
    session_settings: dict[str, Any] | None = None
    # Derived from `pending_interrupts` (an addition to the contract): "approval" or "answer"
    # while the session waits on a person, else None.
    waiting_for: WaitingFor | None = None

    @model_validator(mode="after")
    def _derive_waiting_for(self) -> Self:
        self.waiting_for = waiting_for(self.pending_interrupts)
        return self


class ResumableSnapshot(WireModel):
    """A snapshot with the resume token of the session's events at that snapshot: the events
    after `resume_token` are exactly those committed after it."""

    session_id: str
    flow_type: str
    snapshot: AgentSnapshot
    # The offset of the last event committed before the snapshot was read (0: none).
    resume_token: int


class QueuedUserMessage(WireModel):
    """A user message in the session's queue: the turn it begins is the first `turn_started`
    event after `event_offset` whose payload has this `message_id`."""

    message_id: str
    event_offset: int


TurnStatus = Literal["completed", "failed", "steered", "cancelled", "waiting_for_interrupts"]


class TurnResult(WireModel):
    """What `AgentClient.run_turn` returns: how one turn ended, or that it waits on
    interrupts (approvals, questions) until they are resolved."""

    session_id: str
    turn_id: str
    status: TurnStatus
    # The turn's last assistant text (None when the model produced none).
    text: str | None = None
    # Why a failed turn failed.
    error: str | None = None
    # The messages the turn stored so far, its user message first.
    messages: list[AgentMessage] = Field(default_factory=list)
    # The pending interrupts, when the status is waiting_for_interrupts.
    interrupts: list[AgentInterrupt] = Field(default_factory=list)
    # Usage of the turn's model calls (since `after`, for `wait_for_turn`).
    usage: AgentUsage = Field(default_factory=AgentUsage)
    # The resume token of the last event read: `wait_for_turn(..., after=event_offset)`
    # waits for what the turn does next.
    event_offset: int = 0


class AgentMessagesPage(WireModel):
    messages: list[AgentMessage]
    next_before_sequence: int | None
    deleted_before_sequence: int | None = None


class ResolveInterruptRequest(WireModel):
    interrupt_id: str
    approved: bool
    rejection_message: str | None = None


class AnswerQuestionRequest(WireModel):
    interrupt_id: str
    answer: str


class ListAgentMessagesRequest(WireModel):
    before_sequence: int | None = None
    limit: int = 50


class StepRecovery(WireModel):
    """Why the Step that routed to a failure route failed: its last error, whether its last
    attempt had passed its point of no return, and the error's type."""

    detail: str
    attempt_progress: Literal["NOT_STARTED", "NOT_COMPLETED"]
    error_type: str


class StepExecution(WireModel):
    """One entry of a session's Step history."""

    step_execution_id: str
    step_type: str
    # "parked": waiting in the database alone, held by no Worker (an addition to the contract).
    status: Literal["scheduled", "waiting", "parked", "running", "succeeded", "failed", "cancelled"]
    attempts: int
    input: str
    error: str | None = None
    next_steps: list[str] = Field(default_factory=list)
    scheduled_at: str
    started_at: str | None = None
    ended_at: str | None = None
    # On a failure route only (an addition to the contract): why the Step it handles failed.
    recovery: StepRecovery | None = None


class SessionSummary(WireModel):
    session_id: str
    flow_type: str
    status: SessionStatus | None
    turn_count: int
    active_turn_id: str | None
    created_at: str
    updated_at: str
    # What the session waits on a person for, from its pending interrupts (an addition to the
    # contract; `status` stays `running_tools`): "approval", "answer" or None.
    waiting_for: WaitingFor | None = None


class WorkerInfo(WireModel):
    """A Worker as its liveness row shows it (`heartbeat_at` is the Worker's own clock)."""

    worker_id: str
    state: Literal["running", "stopped"]
    beats: int
    flow_types: list[str]
    lease_seconds: float
    host: str
    pid: int
    started_at: str
    heartbeat_at: str
