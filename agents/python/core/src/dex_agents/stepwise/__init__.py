"""Stepwise: the core's own agent loop, for applications that use no agent framework.

    from dex_agents.stepwise import AgentDefinition, StepwiseRunner, tool

    @tool(effect="read")
    def get_weather(city: str) -> str:
        \"\"\"The weather in a city.

        Args:
            city: The city's name.
        \"\"\"

    agent = AgentDefinition(
        name="Assistant",
        instructions="You are helpful.",
        tools=[get_weather],
        model="anthropic/claude-sonnet-4-5",
    )
    flow = AgentSessionFlow(StepwiseRunner(agent), flow_type="Assistant")

Models are called through LiteLLM, which the stepwise extra installs
(``pip install 'dex-agents[stepwise]'``) and which is imported on the first model call.
"""

from ..tool_context import current_tool_execution
from .builtins import (
    BUILT_IN_TOOL_DEFINITIONS,
    BUILT_IN_TOOL_NAMES,
    PLANNING_TURN_REJECTION,
    WRITE_TODOS_CALLED_TWICE,
    AskUserArguments,
    BuiltInArgumentError,
    DurableWaitArguments,
    ParsedBuiltIn,
    WriteTodosArguments,
    ask_user_result,
    build_plan_note,
    durable_wait_result,
    plan_after_write_todos,
    validate_built_in_call,
    write_todos_result,
)
from .compaction import left_out_note
from .definition import (
    CONTINUATION_LIMIT_ERROR,
    MAX_CONSECUTIVE_CONTINUATIONS,
    AgentDefinition,
    InstructionContext,
    TurnContinuation,
    TurnContinuationContext,
    TurnContinuationDecision,
)
from .items import SUMMARY_PREFIX
from .model import INSTALL_HINT, ModelClient
from .runner import StepwiseRunner
from .tools import Tool, tool

__all__ = [
    "BUILT_IN_TOOL_DEFINITIONS",
    "BUILT_IN_TOOL_NAMES",
    "CONTINUATION_LIMIT_ERROR",
    "INSTALL_HINT",
    "MAX_CONSECUTIVE_CONTINUATIONS",
    "PLANNING_TURN_REJECTION",
    "SUMMARY_PREFIX",
    "WRITE_TODOS_CALLED_TWICE",
    "AgentDefinition",
    "AskUserArguments",
    "BuiltInArgumentError",
    "DurableWaitArguments",
    "InstructionContext",
    "ModelClient",
    "ParsedBuiltIn",
    "StepwiseRunner",
    "Tool",
    "TurnContinuation",
    "TurnContinuationContext",
    "TurnContinuationDecision",
    "WriteTodosArguments",
    "ask_user_result",
    "build_plan_note",
    "current_tool_execution",
    "durable_wait_result",
    "left_out_note",
    "plan_after_write_todos",
    "tool",
    "validate_built_in_call",
    "write_todos_result",
]
