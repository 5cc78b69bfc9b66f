"""The UI message stream's resume token: where in a turn's stream a chunk stands.

Each chunk of the stream carries one as its SSE `id`. It is opaque to the browser: base64url
(no padding) of compact JSON with
- `v`: the format version (1);
- `turn`: the turn's ID, and `start`: the session's event offset just before its
  `turn_started` event (where a replay starts);
- `o`: the event offset (the session's resume token) of the last event whose chunks were all
  sent, and `k`: how many chunks of the next event were sent already;
- `step`: the RunModel Step execution whose AI SDK step is open, or null;
- `text` and `reasoning`: the IDs of the text and reasoning parts the browser holds open.
"""

from __future__ import annotations

import base64
import binascii
import json

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import InvalidResumeTokenError
from ..validation import MAX_INTEGER

MAX_TOKEN_LENGTH = 8_192


class UIStreamToken(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    v: int = 1
    turn: str = Field(min_length=1, max_length=64)
    start: int = Field(ge=0, le=MAX_INTEGER)
    o: int = Field(ge=0, le=MAX_INTEGER)
    k: int = Field(0, ge=0, le=MAX_INTEGER)
    step: str | None = None
    text: tuple[str, ...] = ()
    reasoning: tuple[str, ...] = ()

    def encode(self) -> str:
        value = self.model_dump(mode="json")
        raw = json.dumps(value, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    @classmethod
    def decode(cls, text: str, field: str = "token") -> UIStreamToken:
        """The token, or InvalidResumeTokenError (a 400) for text that is not one this server
        wrote."""
        problem = f"{field} is not a UI stream resume token (an `id` of a chunk of this stream)"
        if len(text) > MAX_TOKEN_LENGTH:
            raise InvalidResumeTokenError(problem, field)
        try:
            padded = text + "=" * (-len(text) % 4)
            raw = base64.b64decode(padded, altchars=b"-_", validate=True)
            token = cls.model_validate_json(raw)
        except (binascii.Error, ValueError, ValidationError, UnicodeDecodeError):
            raise InvalidResumeTokenError(problem, field) from None
        if token.v != 1 or token.o < token.start:
            raise InvalidResumeTokenError(problem, field)
        return token
