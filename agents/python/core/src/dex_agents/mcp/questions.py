"""A task's input request as a user question, and the question's resolution as the input
response that `tasks/update` sends.

Only one form elicitation with a single string, enum or boolean field becomes a question;
anything else is described for the error that stops the call.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mcp.types import ElicitRequest, ElicitRequestFormParams, ElicitResult

from ..types import QuestionAnswer

FieldKind = Literal["string", "enum", "boolean"]
_YES = ("yes", "true")


@dataclass(frozen=True)
class TaskQuestion:
    """The task's one input request, as the session asks it."""

    key: str
    fingerprint: str
    text: str
    field: str
    kind: FieldKind
    choices: Sequence[str]

    @property
    def allows_free_text(self) -> bool:
        return self.kind == "string"

    def response(self, answer: QuestionAnswer) -> dict[str, Any]:
        """The input response for the question's resolution: accept with the answer,
        decline, or cancel for a passed deadline."""
        if answer.resolution == "declined":
            return ElicitResult(action="decline").model_dump(by_alias=True, exclude_none=True)
        if answer.resolution == "deadline_passed":
            return ElicitResult(action="cancel").model_dump(by_alias=True, exclude_none=True)
        value: str | bool = answer.answer
        if self.kind == "boolean":
            value = answer.answer.strip().lower() in _YES
        result = ElicitResult(action="accept", content={self.field: value})
        return result.model_dump(by_alias=True, exclude_none=True)


class UnsupportedInput(Exception):
    """The task asks for input the session cannot ask the user; the text names it."""


def fingerprint(request: Any) -> str:
    """SHA-256 of the request's canonical JSON."""
    text = json.dumps(request, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def read_question(raw: Mapping[str, Any], parsed: Mapping[str, Any]) -> TaskQuestion:
    """The question of a task's input requests (`raw` from the wire, `parsed` by the SDK's
    InputRequest types); raises UnsupportedInput naming anything else."""
    if len(raw) != 1:
        names = ", ".join(describe(parsed.get(key), raw[key]) for key in sorted(raw))
        raise UnsupportedInput(f"{len(raw)} input requests: {names}" if raw else "no request")
    key = next(iter(raw))
    request = parsed.get(key)
    if not isinstance(request, ElicitRequest) or not isinstance(
        request.params, ElicitRequestFormParams
    ):
        raise UnsupportedInput(describe(request, raw[key]))
    properties = request.params.requested_schema.get("properties") or {}
    if len(properties) != 1:
        raise UnsupportedInput(describe(request, raw[key]))
    name, schema = next(iter(properties.items()))
    kind, choices = _field(schema)
    if kind is None:
        raise UnsupportedInput(describe(request, raw[key]))
    return TaskQuestion(
        key=key,
        fingerprint=fingerprint(raw[key]),
        text=request.params.message,
        field=name,
        kind=kind,
        choices=choices,
    )


def _field(schema: Any) -> tuple[FieldKind | None, Sequence[str]]:
    if not isinstance(schema, Mapping):
        return None, ()
    options = schema.get("enum")
    if schema.get("type") == "string" and isinstance(options, list) and options:
        return "enum", [str(option) for option in options]
    if schema.get("type") == "string" and options is None and "format" not in schema:
        return "string", ()
    if schema.get("type") == "boolean":
        return "boolean", ["yes", "no"]
    return None, ()


def describe(request: Any, raw: Any) -> str:
    """Names a requested input for the error text."""
    if isinstance(request, ElicitRequest):
        params = request.params
        if isinstance(params, ElicitRequestFormParams):
            properties = params.requested_schema.get("properties") or {}
            fields = ", ".join(f"{name} ({_kind(schema)})" for name, schema in properties.items())
            return f"a form asking {fields or 'nothing'}: {params.message!r}"
        return f"a URL elicitation: {params.message!r}"
    method = raw.get("method") if isinstance(raw, Mapping) else None
    return f"a {method} request" if isinstance(method, str) else "an unreadable request"


def _kind(schema: Any) -> str:
    if isinstance(schema, Mapping):
        return str(schema.get("type", "?"))
    return "?"


def describe_all(raw: Mapping[str, Any], parsed: Mapping[str, Any]) -> str:
    """Names every input request a task lists."""
    return "; ".join(describe(parsed.get(key), raw[key]) for key in sorted(raw)) or "no request"
