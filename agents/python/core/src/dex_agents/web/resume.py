"""Resume tokens as the stream routes read them: one parser, so every malformed token, however
long, is the same 400 (`invalid_resume_token`) and never reaches `int()` or the database.

A reconnecting EventSource sends `Last-Event-ID`, which wins over the query parameter a first
request may carry (`?after=` for events, `?token=` for the UI message stream).
"""

from __future__ import annotations

from ..errors import InvalidResumeTokenError
from ..validation import MAX_INTEGER

# An event offset is at most MAX_INTEGER (10 digits); longer text is refused before int().
MAX_OFFSET_DIGITS = len(str(MAX_INTEGER))
LAST_EVENT_ID = "Last-Event-ID"


def chosen_token(
    last_event_id: str | None, query_value: str | None, query_field: str
) -> tuple[str, str | None]:
    """`(field, text)`: the `Last-Event-ID` header when sent, else the query parameter."""
    if last_event_id:
        return LAST_EVENT_ID, last_event_id
    return query_field, query_value


def event_offset(text: str, field: str) -> int:
    """The event offset `text` spells: ASCII digits only (no sign, space or `_`), at most
    MAX_OFFSET_DIGITS of them, and at most MAX_INTEGER; else InvalidResumeTokenError."""
    if not (0 < len(text) <= MAX_OFFSET_DIGITS and text.isascii() and text.isdigit()):
        raise InvalidResumeTokenError(not_an_offset(text), field)
    offset = int(text)
    if offset > MAX_INTEGER:
        raise InvalidResumeTokenError(not_an_offset(text), field)
    return offset


def not_an_offset(text: str) -> str:
    shown = repr(text[:40]) + ("..." if len(text) > 40 else "")
    return (
        f"the resume token {shown} is not an event's id: send a non-negative integer of at "
        f"most {MAX_OFFSET_DIGITS} digits, the `id` of an event this stream sent"
    )
