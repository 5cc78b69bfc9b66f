"""Stepwise tools: plain Python functions whose JSON schema comes from their signature.

Type hints give the parameter schema (pydantic builds it), the docstring gives the
description, and a Google-style ``Args:`` section gives each parameter's description. The
effect and approval policy feed the session's effect table through ToolPolicy.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic_core import to_json

from ..policy import TOOL_EFFECTS
from ..runner import (
    ToolExecutionError,
    ToolExecutionResult,
    ToolInputRequested,
    ToolTaskStarted,
)
from ..types import ToolEffect

# The names every major provider accepts.
_TOOL_NAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_ARGS_HEADERS: Final = frozenset({"args", "arguments", "parameters", "params"})
_OTHER_HEADERS: Final = frozenset(
    [
        "returns",
        "return",
        "yields",
        "yield",
        "raises",
        "raise",
        "examples",
        "example",
        "note",
        "notes",
        "warning",
        "warnings",
        "references",
        "todo",
        "attributes",
    ]
)
_ARG_LINE: Final = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


class Tool:
    """A function the model can call, with its effect and approval policy.

    `effect=None` leaves the effect to the session's tool_policies and default_tool_effect;
    `requires_approval=None` uses the effect's default.
    """

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        effect: ToolEffect | None = None,
        requires_approval: bool | None = None,
    ) -> None:
        self.function = function
        self.name: str = name or str(getattr(function, "__name__", ""))
        if not _TOOL_NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} must be 1 to 64 letters, digits, '_' or '-'")
        summary, parameter_docs = parse_docstring(inspect.getdoc(function))
        self.description = description or summary or self.name
        if effect is not None and effect not in TOOL_EFFECTS:
            raise ValueError(f"tool {self.name}: effect must be one of {', '.join(TOOL_EFFECTS)}")
        self.effect = effect
        self.requires_approval = requires_approval
        self._signature = _signature(function)
        self._arguments_model = _arguments_model(self.name, self._signature, parameter_docs)
        self.parameters = _clean_schema(self._arguments_model.model_json_schema())
        self._is_async = _is_async_callable(function)

    def definition(self) -> dict[str, Any]:
        """The Chat Completions tool definition."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def validate(self, arguments_text: str) -> tuple[list[Any], dict[str, Any]]:
        """The positional and keyword arguments to call the function with."""
        try:
            arguments = json.loads(arguments_text or "{}", parse_constant=_no_constant)
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            raise ToolExecutionError(
                f"invalid arguments for tool {self.name}: arguments must be a JSON object"
            )
        try:
            validated = self._arguments_model.model_validate(arguments)
        except ValidationError as error:
            raise ToolExecutionError(
                f"invalid arguments for tool {self.name}: {_describe(error)}"
            ) from None
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for index, parameter in enumerate(self._signature.parameters.values()):
            value = getattr(validated, _field_name(index))
            if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
                args.append(value)
            else:
                kwargs[parameter.name] = value
        return args, kwargs

    async def run(self, arguments_text: str) -> ToolExecutionResult | ToolInputRequested:
        """Validates the arguments and calls the function once; sync functions run in a thread."""
        args, kwargs = self.validate(arguments_text)
        if self._is_async:
            result = await self.function(*args, **kwargs)
        else:
            # to_thread copies the context, so current_tool_execution() works in the thread.
            result = await asyncio.to_thread(self.function, *args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
        return tool_result(result)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the function directly, as if it were not a tool (in tests, say)."""
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, effect={self.effect!r})"


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    effect: ToolEffect | None = None,
    requires_approval: bool | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    effect: ToolEffect | None = None,
    requires_approval: bool | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Declares a tool: ``@tool`` or ``@tool(effect="read")``."""

    def wrap(fn: Callable[..., Any]) -> Tool:
        return Tool(
            fn,
            name=name,
            description=description,
            effect=effect,
            requires_approval=requires_approval,
        )

    return wrap(function) if function is not None else wrap


def as_tool(value: Tool | Callable[..., Any]) -> Tool:
    return value if isinstance(value, Tool) else Tool(value)


def tool_result(value: Any) -> ToolExecutionResult | ToolInputRequested:
    """What the session records for a tool's return value: text as is, anything else as JSON."""
    if isinstance(value, ToolExecutionResult | ToolInputRequested):
        return value
    if isinstance(value, ToolTaskStarted):
        raise TypeError("a Stepwise tool cannot return ToolTaskStarted: nothing polls the task")
    if isinstance(value, str):
        return ToolExecutionResult(value)
    if isinstance(value, BaseModel):
        return ToolExecutionResult(value.model_dump_json())
    try:
        return ToolExecutionResult(to_json(value).decode())
    except Exception as error:
        raise TypeError(f"a tool returned {type(value).__name__}, which is not JSON") from error


# -- schema ----------------------------------------------------------------------------------


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The description (text before the first section) and the Args: section's entries."""
    if not doc:
        return "", {}
    description: list[str] = []
    parameters: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    base_indent = 0
    for line in doc.splitlines():
        stripped = line.strip()
        header = stripped[:-1].lower() if stripped.endswith(":") else None
        indent = len(line) - len(line.lstrip())
        if header is not None and indent == 0 and header in _ARGS_HEADERS | _OTHER_HEADERS:
            section, current, base_indent = header, None, -1
            continue
        if section is None:
            description.append(line)
        elif section in _ARGS_HEADERS and stripped:
            if base_indent < 0:
                base_indent = indent
            match = _ARG_LINE.match(stripped)
            if indent <= base_indent and match:
                current = match.group(1)
                parameters[current] = match.group(2).strip()
            elif current is not None:
                parameters[current] = f"{parameters[current]} {stripped}".strip()
    return "\n".join(description).strip(), parameters


def _signature(function: Callable[..., Any]) -> inspect.Signature:
    """The signature with string parameter annotations (`from __future__ import annotations`)
    resolved in the function's module; the return annotation is not needed, so not resolved."""
    signature = inspect.signature(function)
    namespace = getattr(inspect.unwrap(function), "__globals__", {})
    parameters = []
    for parameter in signature.parameters.values():
        annotation = parameter.annotation
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, namespace)  # what inspect's eval_str does
            except NameError as error:
                raise ValueError(
                    f"tool {getattr(function, '__name__', function)!r}: the type hint of "
                    f"{parameter.name} names something its module does not define: {error}"
                ) from None
        parameters.append(parameter.replace(annotation=annotation))
    return signature.replace(parameters=parameters)


def _field_name(index: int) -> str:
    # Parameter names become aliases, so names like `json` or `_x` cannot clash with pydantic.
    return f"p{index}"


def _arguments_model(
    tool_name: str, signature: inspect.Signature, docs: Mapping[str, str]
) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for index, parameter in enumerate(signature.parameters.values()):
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise ValueError(f"tool {tool_name}: *args and **kwargs parameters are not supported")
        annotation = parameter.annotation
        if annotation is inspect.Parameter.empty:
            annotation = Any
        default = parameter.default
        extra: dict[str, Any] = {}
        if parameter.name in docs:
            # Only when documented, so an Annotated Field's own description is kept.
            extra["description"] = docs[parameter.name]
        field = Field(
            default=... if default is inspect.Parameter.empty else default,
            alias=parameter.name,
            **extra,
        )
        fields[_field_name(index)] = (annotation, field)
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=False)
    model: type[BaseModel] = create_model(f"{tool_name}_arguments", __config__=config, **fields)
    return model


def _clean_schema(node: Any, in_properties: bool = False) -> Any:
    """Drops pydantic's generated titles, keeping parameters that are named `title`."""
    if isinstance(node, list):
        return [_clean_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    if in_properties:
        return {key: _clean_schema(value) for key, value in node.items()}
    return {
        key: _clean_schema(value, key in ("properties", "$defs"))
        for key, value in node.items()
        if key != "title"
    }


def _describe(error: ValidationError) -> str:
    parts = []
    for detail in error.errors(include_url=False):
        location = ".".join(str(part) for part in detail["loc"])
        parts.append(f"{location}: {detail['msg']}" if location else detail["msg"])
    return "; ".join(parts)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _is_async_callable(function: Callable[..., Any]) -> bool:
    call = getattr(function, "__call__", None)  # noqa: B004 - async callable objects too
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(call)
