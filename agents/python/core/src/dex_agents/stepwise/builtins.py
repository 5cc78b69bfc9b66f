"""The built-in tools, as the session defines them in `dex_agents.builtins`.

Re-exported here so a Stepwise application finds them beside the runner that offers them;
there is one definition, which the session's Steps and StepwiseRunner share.
"""

from ..builtins import (
    BUILT_IN_TOOL_DEFINITIONS,
    BUILT_IN_TOOL_NAMES,
    NO_PLAN_YET,
    NOT_AN_OBJECT,
    PLAN_NOTE_PLANNING_LINE,
    PLANNING_TURN_REJECTION,
    TODO_STATUSES,
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

__all__ = [
    "BUILT_IN_TOOL_DEFINITIONS",
    "BUILT_IN_TOOL_NAMES",
    "NOT_AN_OBJECT",
    "NO_PLAN_YET",
    "PLANNING_TURN_REJECTION",
    "PLAN_NOTE_PLANNING_LINE",
    "TODO_STATUSES",
    "WRITE_TODOS_CALLED_TWICE",
    "AskUserArguments",
    "BuiltInArgumentError",
    "DurableWaitArguments",
    "ParsedBuiltIn",
    "WriteTodosArguments",
    "ask_user_result",
    "build_plan_note",
    "durable_wait_result",
    "plan_after_write_todos",
    "validate_built_in_call",
    "write_todos_result",
]
