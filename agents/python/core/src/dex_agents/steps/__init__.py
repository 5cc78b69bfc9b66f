"""The Session Flow's Steps, one handler per Step type of the contract."""

from typing import Any

from ..stepkit import StepHandler
from .compaction import CompactContext
from .model import RecordTurnFailure, RunModel
from .tools import (
    CallSingleAttemptTool,
    CallTool,
    CancelToolTask,
    PollToolTask,
    RecordToolFailure,
    RecordToolOutcomeUnknown,
)
from .turns import ApplyTurnControl, AwaitUserMessage, FinishTurnCancellation, StartAgentSession
from .waits import AwaitQuestionAnswer, AwaitTimer, AwaitToolApproval, ResumeTurn

# Each handler has its own Loaded and Result types; the driver hands each only the context it
# built for that handler and the result that handler's Execute returned, so the table holds
# them as Any.
STEP_HANDLERS: dict[str, StepHandler[Any, Any]] = {
    handler.step_type: handler
    for handler in (
        StartAgentSession(),
        AwaitUserMessage(),
        RunModel(),
        CompactContext(),
        CallTool(),
        CallSingleAttemptTool(),
        AwaitToolApproval(),
        AwaitQuestionAnswer(),
        AwaitTimer(),
        ResumeTurn(),
        PollToolTask(),
        CancelToolTask(),
        ApplyTurnControl(),
        FinishTurnCancellation(),
        RecordToolFailure(),
        RecordToolOutcomeUnknown(),
        RecordTurnFailure(),
    )
}

__all__ = ["STEP_HANDLERS"]
