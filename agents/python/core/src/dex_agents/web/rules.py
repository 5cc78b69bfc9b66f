"""validation.py's input rules as JSON Schema, so the OpenAPI document states what the
server refuses.

The schema only states the rules: the request models and parameters do not enforce them
through FastAPI, so a refused value still gets the client's own 400 with its message (which
names the field and says what is allowed). An unpaired surrogate, which no UTF-8 request can
carry and only a JSON `\\udXXX` escape can spell, is refused too; regular expressions of
some JSON Schema dialects cannot name one, so the descriptions say it.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI, Path
from pydantic import BeforeValidator, PlainValidator, WithJsonSchema
from typing_extensions import TypeAliasType

from .. import texts
from ..validation import MAX_IDENTIFIER_CHARS, MAX_INTEGER, MAX_JSON_DEPTH, MAX_JSON_INTEGER

_CONTROL = "\\u0000-\\u001f\\u007f-\\u009f"
# Non-blank (a character that is not whitespace), no control character.
IDENTIFIER_PATTERN = f"^[^{_CONTROL}]*[^\\s{_CONTROL}][^{_CONTROL}]*$"
# ...and one URL path segment as it is: no '/', not '.' or '..'.
PATH_IDENTIFIER_PATTERN = f"^(?!\\.\\.?$)[^{_CONTROL}/]*[^\\s{_CONTROL}/][^{_CONTROL}/]*$"

IDENTIFIER_RULE = (
    f"Not blank, at most {MAX_IDENTIFIER_CHARS} characters, no control characters "
    "(U+0000-U+001F, U+007F-U+009F) or unpaired surrogates."
)
PATH_IDENTIFIER_RULE = f"{IDENTIFIER_RULE} No '/', and not '.' or '..'."
TEXT_RULE = f"At most {texts.MAX_USER_MESSAGE_BYTES:,} UTF-8 bytes (413 beyond)."


def identifier(*, path_segment: bool = False) -> dict[str, Any]:
    """The JSON Schema keywords of an ID (`validation.identifier`, or `path_identifier`)."""
    pattern = PATH_IDENTIFIER_PATTERN if path_segment else IDENTIFIER_PATTERN
    return {"minLength": 1, "maxLength": MAX_IDENTIFIER_CHARS, "pattern": pattern}


def integer(minimum: int = -MAX_INTEGER) -> dict[str, Any]:
    """The JSON Schema keywords of `validation.integer`: a 32-bit column's range."""
    return {"minimum": minimum, "maximum": MAX_INTEGER}


# Not blank: some character is not whitespace (a search, as JSON Schema patterns are).
NOT_BLANK: dict[str, Any] = {"pattern": "\\S"}


def _json_integer(value: object) -> object:
    """JSON has one number type: `3.0` is the integer 3 (as JSON Schema says), while a bool
    or a str stays what it is and the strict model refuses it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# An integer field of a strict request body that takes `3.0` as JSON Schema's integer 3.
JSONInt = Annotated[int, BeforeValidator(_json_integer)]


def _path_id(description: str) -> Any:
    return Path(description=description, json_schema_extra=identifier(path_segment=True))


# The IDs of the routes' paths, with their rules in the schema.
SessionIdPath = Annotated[str, _path_id(f"The session's ID. {PATH_IDENTIFIER_RULE}")]
InterruptIdPath = Annotated[str, _path_id(f"The interrupt's ID. {PATH_IDENTIFIER_RULE}")]
MessageIdPath = Annotated[str, _path_id(f"The queued message's ID. {PATH_IDENTIFIER_RULE}")]


def _any_object(value: object) -> dict[str, Any]:
    """Session settings reach `validation.session_settings` as parsed: any object (its 400
    says what in it is refused); anything else is a 422, as a wrong type is."""
    if not isinstance(value, dict):
        raise ValueError("session_settings must be a JSON object")
    return value


# A JSON value as every core reads it alike: integers within 64 bits, finite numbers.
_Integer = Annotated[
    int,
    # Exclusive bounds of ±2**63, which a float (as OpenAPI's numbers are read) holds exactly.
    WithJsonSchema(
        {
            "type": "integer",
            "exclusiveMinimum": -(MAX_JSON_INTEGER + 1),
            "exclusiveMaximum": MAX_JSON_INTEGER + 1,
        }
    ),
]
# A number with a fraction, in the same range (JSON Schema reads `1e19` as an integer).
_Fraction = Annotated[
    float,
    WithJsonSchema(
        {
            "type": "number",
            "exclusiveMinimum": -(MAX_JSON_INTEGER + 1),
            "exclusiveMaximum": MAX_JSON_INTEGER + 1,
        }
    ),
]
JSONValue = TypeAliasType(
    "JSONValue",
    "bool | _Integer | _Fraction | str | list[JSONValue] | dict[str, JSONValue] | None",
)
SETTINGS_RULE = (
    f"A JSON object of at most {texts.MAX_SESSION_SETTINGS_BYTES:,} bytes of compact UTF-8 "
    f"JSON, nested at most {MAX_JSON_DEPTH} levels, integers within 64 bits, strings without "
    "unpaired surrogates; other settings get 400."
)
# The session settings field of a request body: its rules in the schema, checked by
# validation.session_settings.
SessionSettings = Annotated[
    dict[str, Any],
    PlainValidator(_any_object, json_schema_input_type=dict[str, JSONValue]),
]


_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})


def keep_exact_bounds(app: FastAPI) -> None:
    """Writes the schema's integral bounds as JSON integers: FastAPI's OpenAPI model reads
    them as floats, which cannot hold 2**63 - 1 (a validator comparing exactly then admits
    integers the server refuses)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _exact(generate())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _exact(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: int(item)
            if key in _BOUNDS and isinstance(item, float) and item.is_integer()
            else _exact(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_exact(item) for item in value]
    return value
