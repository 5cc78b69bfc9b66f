"""The checks every Client RPC runs on its arguments before any transaction begins.

One function per kind of value, so the same kind gets the same rule and the same limit
everywhere. A refused argument raises `InvalidInputError` (or `MessageTooLargeError`), naming the
argument and what is allowed; nothing is read or written first. README's "Input rules"
lists every field.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from . import texts
from .errors import InvalidInputError, MessageTooLargeError
from .types import AgentUserMessage

# Identifiers share the 255-character columns they are stored in (Postgres counts characters).
MAX_IDENTIFIER_CHARS = 255
# Every free text has the user message's limit: UTF-8 bytes.
MAX_TEXT_BYTES = texts.MAX_USER_MESSAGE_BYTES
# Integers are stored in 32-bit columns.
MAX_INTEGER = texts.MAX_INT32
# JSON values: nested at most this deep; integers within 64 bits, as every core reads them.
MAX_JSON_DEPTH = 64
MAX_JSON_INTEGER = 2**63 - 1

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# An unpaired surrogate: UTF-8 cannot encode one (results.sendable_text replaces them).
UNPAIRED_SURROGATE = re.compile("[\ud800-\udfff]")


def _type_name(value: object) -> str:
    return type(value).__name__


def _require_str(value: object, argument: str) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{argument} must be a str, not {_type_name(value)}", argument)
    return value


def identifier(value: object, argument: str) -> str:
    """A non-blank str of at most 255 characters, without control characters or unpaired
    surrogates (session, interrupt, turn and message IDs, Flow types)."""
    text = _require_str(value, argument)
    if not text.strip():
        raise InvalidInputError(f"{argument} must not be blank", argument)
    if len(text) > MAX_IDENTIFIER_CHARS:
        raise InvalidInputError(
            f"{argument} is {len(text):,} characters; an ID holds at most "
            f"{MAX_IDENTIFIER_CHARS} characters",
            argument,
        )
    if _CONTROL.search(text) or UNPAIRED_SURROGATE.search(text):
        raise InvalidInputError(
            f"{argument} must not contain control characters or unpaired surrogates", argument
        )
    return text


def optional_identifier(value: object, argument: str) -> str | None:
    return None if value is None else identifier(value, argument)


def path_segment_problem(text: str, argument: str) -> str | None:
    """Why `text` cannot be one segment of a URL path as it is, or None: a `/` splits it in
    two (its `%2F` escape is no better, servers and proxies decode it), and `.` and `..`
    are removed or climb a level when a client or proxy normalizes the path."""
    if "/" in text:
        return f"{argument} {text[:40]!r} must not contain '/'"
    if text in (".", ".."):
        return f"{argument} must not be {text!r}"
    return None


def path_identifier(value: object, argument: str) -> str:
    """An identifier that every HTTP route can address: one path segment as it is (session
    and tool call IDs). The same rule as `identifier`, and `path_segment_problem`'s."""
    text = identifier(value, argument)
    problem = path_segment_problem(text, argument)
    if problem:
        raise InvalidInputError(problem, argument)
    return text


def free_text(value: object, argument: str) -> str:
    """Any str (NUL and unpaired surrogates included, stored losslessly) of at most
    MAX_TEXT_BYTES UTF-8 bytes (an unpaired surrogate counts 3)."""
    text = _require_str(value, argument)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise MessageTooLargeError(
            f"the {argument} is {size:,} bytes; a text holds at most {MAX_TEXT_BYTES:,} bytes "
            "(send large content as a file reference)",
            argument,
        )
    return text


def optional_free_text(value: object, argument: str) -> str | None:
    return None if value is None else free_text(value, argument)


def user_message(value: object, argument: str = "message") -> AgentUserMessage:
    """A str, or an AgentUserMessage whose text is free text."""
    if isinstance(value, str):
        return AgentUserMessage(text=free_text(value, argument))
    if not isinstance(value, AgentUserMessage):
        raise InvalidInputError(
            f"{argument} must be a str or an AgentUserMessage, not {_type_name(value)}",
            argument,
        )
    free_text(value.text, f"{argument}.text")
    flag(value.plan_mode, f"{argument}.plan_mode")
    return value


def flag(value: object, argument: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{argument} must be a bool, not {_type_name(value)}", argument)
    return value


def integer(value: object, argument: str, *, minimum: int = -MAX_INTEGER) -> int:
    """An int (not a bool) from `minimum` up that fits the database's 32-bit columns."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{argument} must be an int, not {_type_name(value)}", argument)
    if not minimum <= value <= MAX_INTEGER:
        raise InvalidInputError(
            f"{argument} is {value:,}; it must be between {minimum:,} and {MAX_INTEGER:,}",
            argument,
        )
    return value


def optional_integer(value: object, argument: str) -> int | None:
    return None if value is None else integer(value, argument)


def session_settings(value: object, argument: str = "session_settings") -> dict[str, Any]:
    """A strict JSON object whose compact UTF-8 JSON text is at most
    MAX_SESSION_SETTINGS_BYTES bytes."""
    if not isinstance(value, dict):
        raise InvalidInputError(
            f"{argument} must be a JSON object (a dict), not {_type_name(value)}", argument
        )
    strict_json(value, argument)
    size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
    limit = texts.MAX_SESSION_SETTINGS_BYTES
    if size > limit:
        raise InvalidInputError(
            f"{argument} are {size:,} bytes of JSON; at most {limit:,} bytes are allowed",
            argument,
        )
    return value


def strict_json(value: object, argument: str, depth: int = 0) -> None:
    """JSON that every core reads alike: objects with str keys, arrays as lists, str without
    unpaired surrogates, finite floats (no NaN or Infinity), 64-bit integers (and floats within
    their range, as JSON reads 1e19 as an integer), bool, None."""
    if depth > MAX_JSON_DEPTH:
        raise InvalidInputError(f"{argument} nests deeper than {MAX_JSON_DEPTH} levels", argument)
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, str):
        _json_string(value, argument)
    elif isinstance(value, int):
        if abs(value) > MAX_JSON_INTEGER:
            raise InvalidInputError(f"{argument} holds an integer beyond 64 bits", argument)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(
                f"{argument} holds {value}; JSON has no NaN or Infinity", argument
            )
        # JSON (and JSON Schema) reads 1e19 as the integer it is: the same range as an int's.
        if abs(value) > MAX_JSON_INTEGER:
            raise InvalidInputError(f"{argument} holds {value}, beyond 64-bit integers", argument)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            strict_json(item, f"{argument}[{index}]", depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInputError(
                    f"{argument} has a key of type {_type_name(key)}; JSON keys are str",
                    argument,
                )
            _json_string(key, argument)
            strict_json(item, f"{argument}[{key!r}]", depth + 1)
    else:
        raise InvalidInputError(
            f"{argument} holds a {_type_name(value)}; JSON holds dict, list, str, int, "
            "finite float, bool and None",
            argument,
        )


def _json_string(value: str, argument: str) -> None:
    if UNPAIRED_SURROGATE.search(value):
        raise InvalidInputError(f"{argument} holds a str with an unpaired surrogate", argument)
