"""Session tokens: a browser's access to one session, without the server's token.

The server's token opens every session, so it belongs to the application's backend. The
backend authenticates its user, mints a session token for the one session that user may
use (`mint_session_token`, or `POST /api/sessions/{id}/tokens` with the server's token) and
hands it to the browser, which sends it as `Authorization: Bearer <token>` or, on an event
stream, as `?access_token=<token>`. A session token reads its session (snapshot, messages,
events, UI stream) and sends, steers, cancels and answers or resolves its interrupts; every
other route, and every other session, refuses it.

A token is `dxs1.<payload>.<signature>`: the payload is base64url (no padding) of compact
JSON `{"v": 1, "sid": <session ID>, "exp": <expiry, Unix seconds>}`, and the signature is
base64url of HMAC-SHA256 over `dxs1.<payload>`, keyed by a key derived from the server's
secret (HMAC-SHA256 of a fixed label under the secret), so a token never reveals the secret.
It is checked in constant time, then for its version and expiry. There is no revocation
list: a token lives until it expires, and changing the server's token ends every one.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from .. import validation
from ..errors import InvalidInputError

PREFIX = "dxs1"
VERSION = 1
# How long a token lives unless asked otherwise, and the longest it may live.
DEFAULT_EXPIRES_IN = 3_600
MAX_EXPIRES_IN = 86_400
# Longer text is refused before it is decoded (a 255-character ID escapes to ~1,600).
MAX_TOKEN_LENGTH = 4_096
_KEY_LABEL = b"dex-agents session token v1"


@dataclass(frozen=True)
class SessionToken:
    """A minted token: `token` for the browser, the session it opens, and when it expires."""

    token: str
    session_id: str
    expires_at: datetime


class InvalidSessionToken(Exception):
    """A session token this server cannot accept; the message says why and what to do."""


def is_session_token(text: str) -> bool:
    """Whether `text` has a session token's form (it may still be refused)."""
    return text.startswith(PREFIX + ".")


def mint_session_token(
    secret: str, session_id: str, *, expires_in: int = DEFAULT_EXPIRES_IN, now: float | None = None
) -> SessionToken:
    """A token for `session_id`, valid for `expires_in` seconds (1 to MAX_EXPIRES_IN), signed
    with `secret`: the server's token (`create_app(token=...)`, `dex-agents serve --token`),
    or the `session_token_secret` it was given."""
    if not secret:
        raise InvalidInputError("the secret must not be empty", "secret")
    validation.identifier(session_id, "session_id")
    expires_in = validation.integer(expires_in, "expires_in", minimum=1)
    if expires_in > MAX_EXPIRES_IN:
        raise InvalidInputError(
            f"expires_in is {expires_in:,} seconds; a session token lives at most "
            f"{MAX_EXPIRES_IN:,} seconds (mint a new one before it expires)",
            "expires_in",
        )
    expiry = int(time.time() if now is None else now) + expires_in
    claims = {"v": VERSION, "sid": session_id, "exp": expiry}
    payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
    signed = f"{PREFIX}.{payload}"
    token = f"{signed}.{_b64(_signature(secret, signed))}"
    return SessionToken(token, session_id, datetime.fromtimestamp(expiry, UTC))


def verify_session_token(secret: str, token: str, *, now: float | None = None) -> SessionToken:
    """The session and expiry of a token `secret` signed that has not expired; raises
    InvalidSessionToken otherwise."""
    not_ours = InvalidSessionToken("the session token is not valid for this server")
    parts = token.split(".")
    if len(token) > MAX_TOKEN_LENGTH or not token.isascii() or len(parts) != 3:
        raise not_ours
    if parts[0] != PREFIX:
        raise not_ours
    signed = f"{parts[0]}.{parts[1]}"
    try:
        signature = _unb64(parts[2])
    except ValueError:
        raise not_ours from None
    if not hmac.compare_digest(signature, _signature(secret, signed)):
        raise not_ours
    claims = _claims(parts[1])
    if claims is None:
        raise not_ours
    session_id, expiry = claims
    if expiry <= (time.time() if now is None else now):
        raise InvalidSessionToken(
            "the session token has expired: ask the application for a new one (it mints them "
            "with POST /api/sessions/{session_id}/tokens)"
        )
    return SessionToken(token, session_id, datetime.fromtimestamp(expiry, UTC))


def _claims(payload: str) -> tuple[str, int] | None:
    """(session ID, expiry) of a signed payload, or None when it is not version 1's form."""
    try:
        value = json.loads(_unb64(payload))
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(value, dict) or value.get("v") != VERSION:
        return None
    session_id, expiry = value.get("sid"), value.get("exp")
    if not isinstance(session_id, str) or isinstance(expiry, bool) or not isinstance(expiry, int):
        return None
    return session_id, expiry


def _signature(secret: str, signed: str) -> bytes:
    key = hmac.new(secret.encode(), _KEY_LABEL, hashlib.sha256).digest()
    return hmac.new(key, signed.encode(), hashlib.sha256).digest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not base64url") from None
