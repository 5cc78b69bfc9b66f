"""`POST /api/sessions/{id}/tokens`: the application's backend mints a session token.

The route takes the server's token (a session token is refused here, as on every route that
is not one session's); `session_token.py` says what a session token opens.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from ..validation import MAX_INTEGER
from .deps import Client
from .errors import ApiError, ErrorBody
from .rules import JSONInt, SessionIdPath
from .session_token import DEFAULT_EXPIRES_IN, MAX_EXPIRES_IN, mint_session_token
from .wire import WireJSONResponse

router = APIRouter(default_response_class=WireJSONResponse, tags=["access"])

NO_SECRET = (
    "this server has no secret to sign session tokens with: create it with "
    "create_app(token=...) or create_app(session_token_secret=...)"
)


class MintBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    expires_in: JSONInt = Field(
        DEFAULT_EXPIRES_IN,
        ge=1,
        le=MAX_EXPIRES_IN,
        description=f"Seconds the token lives (1 to {MAX_EXPIRES_IN:,}).",
    )


class MintedToken(BaseModel):
    token: str = Field(description="For the browser: `Authorization: Bearer` or `?access_token=`")
    session_id: str
    expires_at: str = Field(description="When it expires (ISO 8601, UTC).")


@router.post(
    "/sessions/{session_id}/tokens",
    response_model=MintedToken,
    summary="Mint a session token (for a browser)",
    responses={501: {"model": ErrorBody, "description": "The server signs no session tokens"}},
)
async def mint_token(
    session_id: SessionIdPath, request: Request, client: Client, body: MintBody | None = None
) -> WireJSONResponse:
    """A token that opens only this session: its snapshot, messages, events and UI stream,
    sending, steering, cancelling, and its interrupts. Needs the server's token."""
    secret: str | None = request.app.state.dex_session_token_secret
    if secret is None:
        raise ApiError(501, "session_tokens_unavailable", NO_SECRET)
    # Reads the session's row (404 for an unknown session) and no event.
    await client.read_events(session_id, after=MAX_INTEGER, limit=1)
    minted = mint_session_token(
        secret, session_id, expires_in=body.expires_in if body else DEFAULT_EXPIRES_IN
    )
    return WireJSONResponse(
        {
            "token": minted.token,
            "session_id": minted.session_id,
            "expires_at": minted.expires_at.isoformat().replace("+00:00", "Z"),
        }
    )
