"""The built-in tools: their definitions for the model, argument validation, and their texts.

The session's RunModel commit validates a built-in call with `validate_built_in_call` and
records an invalid one `failed` with `BuiltInArgumentError.message`. Everything here is pure,
so both the runner (which offers the tools) and the session (which runs them) can use it, and
nothing here imports LiteLLM.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, get_args

from .runner import BuiltInToolName
from .types import AgentPlan, AgentPlanTask, InteractionMode

BUILT_IN_TOOL_NAMES: Final[tuple[BuiltInToolName, ...]] = get_args(BuiltInToolName)
TODO_STATUSES: Final = ("pending", "in_progress", "completed")

NOT_AN_OBJECT: Final = "arguments must be a JSON object"
WRITE_TODOS_CALLED_TWICE: Final = "write_todos was called more than once in one response"
PLANNING_TURN_REJECTION: Final = (
    "The tool call was not run: a planning turn can only call write_todos."
)
PLAN_NOTE_PLANNING_LINE: Final = (
    "This turn only plans: write or revise the plan with write_todos, and do not do or claim "
    "any of its tasks. The user reviews the plan before it runs."
)
NO_PLAN_YET: Final = "[Dex] There is no plan yet."


def _function(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


BUILT_IN_TOOL_DEFINITIONS: Final[Mapping[BuiltInToolName, dict[str, Any]]] = {
    "ask_user": _function(
        "ask_user",
        "Ask the user a question and wait for the answer. Use it when only the user can give "
        "the information or decision you need. The answer may take a long time to arrive.",
        {
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question to ask."},
                "choices": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Answers the user can pick from.",
                },
                "allows_free_text": {
                    "type": "boolean",
                    "description": "Whether the user may answer with any text (default true).",
                },
            },
            "required": ["question"],
            "additionalProperties": False,
        },
    ),
    "durable_wait": _function(
        "durable_wait",
        "Wait for a number of seconds before going on, for example before checking again on "
        "work that takes time. The wait survives restarts.",
        {
            "type": "object",
            "properties": {
                "seconds": {"type": "number", "description": "How long to wait, in seconds."},
                "reason": {"type": "string", "description": "Why you wait, shown to the user."},
            },
            "required": ["seconds", "reason"],
            "additionalProperties": False,
        },
    ),
    "write_todos": _function(
        "write_todos",
        "Write the plan: the complete list of tasks, which replaces the previous one. Keep each "
        "task's status current. An empty list clears the plan.",
        {
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "description": "What the task does."},
                            "status": {"type": "string", "enum": list(TODO_STATUSES)},
                        },
                        "required": ["content", "status"],
                        "additionalProperties": False,
                    },
                }
            },
            "required": ["todos"],
            "additionalProperties": False,
        },
    ),
}


# -- parsed calls ----------------------------------------------------------------------------


@dataclass(frozen=True)
class AskUserArguments:
    question: str
    choices: tuple[str, ...] = ()
    allows_free_text: bool = True


@dataclass(frozen=True)
class DurableWaitArguments:
    seconds: float
    reason: str


@dataclass(frozen=True)
class WriteTodosArguments:
    todos: tuple[AgentPlanTask, ...]


ParsedBuiltIn = AskUserArguments | DurableWaitArguments | WriteTodosArguments


@dataclass(frozen=True)
class BuiltInArgumentError:
    """Why a built-in call's arguments are invalid; `message` is the record's error."""

    tool_name: BuiltInToolName
    reason: str

    @property
    def message(self) -> str:
        if self.tool_name == "write_todos":
            return f"invalid todos: {self.reason}"
        return f"invalid {self.tool_name} arguments: {self.reason}"


class _Invalid(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def validate_built_in_call(
    tool_name: BuiltInToolName, arguments_text: str, *, max_wait_seconds: float | None = None
) -> ParsedBuiltIn | BuiltInArgumentError:
    """Parses a built-in call's arguments, or says why they are invalid.

    `max_wait_seconds` bounds durable_wait (the session's max_durable_wait), when set.
    """
    if tool_name not in BUILT_IN_TOOL_NAMES:
        raise ValueError(f"{tool_name!r} is not a built-in tool")
    try:
        arguments = _strict_object(arguments_text)
        if tool_name == "ask_user":
            return _ask_user(arguments)
        if tool_name == "durable_wait":
            return _durable_wait(arguments, max_wait_seconds)
        return _write_todos(arguments)
    except _Invalid as invalid:
        return BuiltInArgumentError(tool_name, invalid.reason)


def _reject_constant(name: str) -> Any:
    raise _Invalid(NOT_AN_OBJECT)


def _strict_object(text: str) -> dict[str, Any]:
    """Strict JSON only: NaN and Infinity are refused, as in JavaScript's JSON.parse."""
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, TypeError, RecursionError):
        raise _Invalid(NOT_AN_OBJECT) from None
    if not isinstance(value, dict):
        raise _Invalid(NOT_AN_OBJECT)
    return value


def _check_names(arguments: Mapping[str, Any], known: Sequence[str], what: str) -> None:
    unknown = [name for name in arguments if name not in known]
    if unknown:
        # The lowest by code point, so both cores report the same name.
        raise _Invalid(f"{what} {json.dumps(min(unknown), ensure_ascii=False)}")


def _ask_user(arguments: dict[str, Any]) -> AskUserArguments:
    _check_names(arguments, ("question", "choices", "allows_free_text"), "unknown argument")
    if "question" not in arguments:
        raise _Invalid("question is required")
    question = arguments["question"]
    if not isinstance(question, str):
        raise _Invalid("question must be a string")
    if not question.strip():
        raise _Invalid("question must not be blank")
    # null for an optional argument means the argument is absent.
    choices = arguments.get("choices")
    if choices is None:
        choices = []
    if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        raise _Invalid("choices must be a list of strings")
    if any(not choice.strip() for choice in choices):
        raise _Invalid("choices must not contain a blank string")
    free_text = arguments.get("allows_free_text")
    if free_text is None:
        free_text = True
    if not isinstance(free_text, bool):
        raise _Invalid("allows_free_text must be a boolean")
    if not free_text and not choices:
        raise _Invalid("choices must not be empty when allows_free_text is false")
    return AskUserArguments(question, tuple(choices), free_text)


def _durable_wait(
    arguments: dict[str, Any], max_wait_seconds: float | None
) -> DurableWaitArguments:
    _check_names(arguments, ("seconds", "reason"), "unknown argument")
    if "seconds" not in arguments:
        raise _Invalid("seconds is required")
    seconds = arguments["seconds"]
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise _Invalid("seconds must be a number")
    if not math.isfinite(seconds) or seconds <= 0:
        raise _Invalid("seconds must be a positive number")
    if max_wait_seconds is not None and seconds > max_wait_seconds:
        raise _Invalid(f"seconds must be at most {_number_text(max_wait_seconds)}")
    if "reason" not in arguments:
        raise _Invalid("reason is required")
    reason = arguments["reason"]
    if not isinstance(reason, str):
        raise _Invalid("reason must be a string")
    return DurableWaitArguments(float(seconds), reason)


def _write_todos(arguments: dict[str, Any]) -> WriteTodosArguments:
    _check_names(arguments, ("todos",), "unknown argument")
    if "todos" not in arguments:
        raise _Invalid("todos is required")
    todos = arguments["todos"]
    if not isinstance(todos, list):
        raise _Invalid("todos must be a list")
    return WriteTodosArguments(tuple(_todo(i, item) for i, item in enumerate(todos)))


def _todo(index: int, item: Any) -> AgentPlanTask:
    where = f"todos[{index}]"
    if not isinstance(item, dict):
        raise _Invalid(f"{where} must be an object")
    _check_names(item, ("content", "status"), f"{where} has unknown field")
    content, status = item.get("content"), item.get("status")
    if "content" not in item:
        raise _Invalid(f"{where}.content is required")
    if not isinstance(content, str):
        raise _Invalid(f"{where}.content must be a string")
    if not content.strip():
        raise _Invalid(f"{where}.content must not be blank")
    if "status" not in item:
        raise _Invalid(f"{where}.status is required")
    if status not in TODO_STATUSES:
        raise _Invalid(f"{where}.status must be one of {', '.join(TODO_STATUSES)}")
    return AgentPlanTask(content=content, status=status)


# -- results and plan ------------------------------------------------------------------------


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def ask_user_result(answer: str) -> str:
    """The output of an answered ask_user call."""
    return _compact({"status": "answered", "answer": answer})


def durable_wait_result(waited_seconds: int, reason: str) -> str:
    """The output of a durable_wait call whose Timer fired."""
    return _compact({"status": "completed", "waited_seconds": waited_seconds, "reason": reason})


def plan_after_write_todos(
    previous: AgentPlan | None,
    todos: Sequence[AgentPlanTask],
    interaction_mode: InteractionMode,
    updated_at: str,
) -> AgentPlan:
    """The plan a successful write_todos call stores: revision + 1, status by the contract."""
    if not todos:
        status = "cleared"
    elif interaction_mode == "planning":
        status = "draft"
    elif all(task.status == "completed" for task in todos):
        status = "completed"
    else:
        status = "active"
    revision = (previous.revision if previous else 0) + 1
    return AgentPlan(revision=revision, status=status, tasks=list(todos), updated_at=updated_at)


def write_todos_result(plan: AgentPlan) -> str:
    """The output of a write_todos call that stored `plan`."""
    if plan.status == "cleared":
        return _compact({"status": "cleared", "revision": plan.revision})
    return _compact({"status": "updated", "revision": plan.revision, "task_count": len(plan.tasks)})


def build_plan_note(plan: AgentPlan | None, interaction_mode: InteractionMode) -> str | None:
    """The plan as the model sees it, shown as user text before the turn's messages."""
    planning = interaction_mode == "planning"
    if plan is None or plan.status == "cleared":
        return f"{NO_PLAN_YET}\n{PLAN_NOTE_PLANNING_LINE}" if planning else None
    lines = [f"[Dex] The current plan, revision {plan.revision}, is {plan.status}:"]
    lines += [f"- [{task.status}] {task.content}" for task in plan.tasks]
    if planning:
        lines.append(PLAN_NOTE_PLANNING_LINE)
    return "\n".join(lines)
