"""AgentDefinition: an agent in plain Python, for StepwiseRunner."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..tool_source import ToolSource
from ..types import AgentToolCall, InteractionMode
from .model import ModelClient
from .tools import Tool

MAX_CONSECUTIVE_CONTINUATIONS: Final = 8
CONTINUATION_LIMIT_ERROR: Final = (
    f"decide_turn_continuation continued the turn more than {MAX_CONSECUTIVE_CONTINUATIONS} "
    "times in a row"
)


@dataclass(frozen=True)
class InstructionContext:
    """What an instructions function sees: the turn's settings and mode."""

    session_settings: Mapping[str, Any]
    interaction_mode: InteractionMode
    turn_id: str


@dataclass(frozen=True)
class TurnContinuation:
    """Continue the turn with another model call; `message` goes to the model as user text."""

    message: str

    def __post_init__(self) -> None:
        if not self.message.strip():
            raise ValueError("a TurnContinuation's message must not be blank")


@dataclass(frozen=True)
class TurnContinuationContext:
    """What decide_turn_continuation sees.

    `after` is "answer" when the model answered without tool calls (`answer` holds its text),
    and "tool_calls" when the results of its tool calls are in (`tool_calls` holds their final
    records), before the next model call.
    """

    after: Literal["answer", "tool_calls"]
    turn_id: str
    interaction_mode: InteractionMode
    session_settings: Mapping[str, Any]
    consecutive_continuations: int
    answer: str | None = None
    tool_calls: Sequence[AgentToolCall] = ()


TurnContinuationDecision = TurnContinuation | Literal["end"] | None
"""None goes on as usual; "end" after tool calls ends the turn with their results."""

Instructions = str | Callable[[InstructionContext], str]
ModelResolver = Callable[[Mapping[str, Any]], ModelClient | str]
ContinuationDecider = Callable[
    [TurnContinuationContext], TurnContinuationDecision | Awaitable[TurnContinuationDecision]
]


@dataclass(frozen=True)
class AgentDefinition:
    """An agent: instructions, tools and a model, with no framework.

    `instructions` is text or a function of InstructionContext. `tools` are Tool objects,
    plain functions (sync or async), or tool sources such as `dex_agents.mcp.McpToolSource`,
    whose tools are listed before the first model call and run in tool Steps. `model` is a
    LiteLLM model string or a ModelClient;
    `resolve_model` chooses the model of each call from the turn's session settings instead.
    `model_settings` are extra `litellm.acompletion` keywords; `max_output_tokens` bounds each
    response and sizes the compaction summary request.
    """

    name: str
    instructions: Instructions
    tools: Sequence[Tool | Callable[..., Any] | ToolSource] = ()
    model: ModelClient | str = ""
    resolve_model: ModelResolver | None = None
    decide_turn_continuation: ContinuationDecider | None = None
    planning_tool_choice: Literal["auto", "required"] = "auto"
    model_settings: Mapping[str, Any] | None = None
    max_output_tokens: int | None = None

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise ValueError("AgentDefinition.name must not be blank")
        if not self.model and self.resolve_model is None:
            raise ValueError("AgentDefinition needs a model or resolve_model")
        if self.planning_tool_choice not in ("auto", "required"):
            raise ValueError("planning_tool_choice must be 'auto' or 'required'")
        if self.max_output_tokens is not None and self.max_output_tokens <= 0:
            raise ValueError("max_output_tokens must be positive")
