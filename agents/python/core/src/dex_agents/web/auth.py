"""Who may call the API: a bearer token, an application's own check, or nobody asked.

Requests send `Authorization: Bearer <token>`: the server's token (every route), or a session
token (`session_token.py`: one session's reads, messages, steering, cancellation and
interrupts). A GET of an event stream (a path ending in `/events` or `/chat/stream`) may send
`?access_token=<session token>` instead, because a browser's EventSource cannot set headers;
the server's token is refused there, since a URL lands in logs and history.

Every /api route also authenticates a request before anything reads its body
(`authenticate_before_body`, run by `guards.GuardedRoute`), since FastAPI reads a body before
it solves the route's dependencies.
"""

from __future__ import annotations

import inspect
import secrets
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from .errors import ApiError, ErrorBody
from .session_token import InvalidSessionToken, is_session_token, verify_session_token

AuthCheck = Callable[[Request], bool | Awaitable[bool]]

# The GET routes whose token may come as `?access_token=`: the event streams.
STREAM_PATH_SUFFIXES = ("/events", "/chat/stream")
# The scope key authenticate_before_body sets to the Authenticator that let the request in.
AUTHENTICATED_SCOPE_KEY = "dex_agents.authenticated_by"

NO_AUTH_CONFIGURED = (
    "create_app needs a way to authenticate requests: pass token='<secret>' (clients send "
    "'Authorization: Bearer <secret>'), auth=<a callable (Request) -> bool, async or not>, "
    "or allow_unauthenticated=True for a server no one else can reach"
)

# The routes a session token opens, for its own session only: reading the session and its
# streams, sending, steering, cancelling, and answering or resolving its interrupts. Keyed by
# the route's name (its endpoint function's), which stays the same wherever the app is mounted.
SESSION_TOKEN_ROUTES: dict[str, tuple[str, str]] = {
    "get_snapshot": ("GET", "/api/sessions/{session_id}/snapshot"),
    "list_messages": ("GET", "/api/sessions/{session_id}/messages"),
    "send_message": ("POST", "/api/sessions/{session_id}/messages"),
    "steer": ("POST", "/api/sessions/{session_id}/steer"),
    "cancel_turn": ("POST", "/api/sessions/{session_id}/cancel"),
    "resolve_interrupt": ("POST", "/api/sessions/{session_id}/interrupts/{interrupt_id}/resolve"),
    "answer_question": ("POST", "/api/sessions/{session_id}/interrupts/{interrupt_id}/answer"),
    "follow_events": ("GET", "/api/sessions/{session_id}/events"),
    "chat": ("POST", "/api/sessions/{session_id}/chat"),
    "resume": ("GET", "/api/sessions/{session_id}/chat/stream"),
    "ui_messages": ("GET", "/api/sessions/{session_id}/ui-messages"),
}

SERVER_TOKEN_IN_URL = (
    "the server's token is not accepted in a URL (URLs land in logs and browser history): "
    "send it as 'Authorization: Bearer <token>', or mint a session token (POST "
    "/api/sessions/{session_id}/tokens with the server's token) and pass that as "
    "?access_token=<session token>"
)
ROUTE_NOT_FOR_SESSION_TOKENS = (
    "a session token opens only its session's snapshot, messages, events and UI stream, and "
    "sending, steering, cancelling and interrupts; this route needs the server's token"
)
OTHER_SESSION = "this session token is for another session: mint one for this session"

# The 403 every /api route may answer (a session token on a route it does not open).
ACCESS_ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    403: {
        "model": ErrorBody,
        "description": "A session token for another session, or on a route it does not open",
    }
}

_bearer = HTTPBearer(
    auto_error=False,
    description="The server's token, or a session token (POST /api/sessions/{id}/tokens). "
    "GET event streams also take a session token as ?access_token=<token>, never the "
    "server's token.",
)


class Authenticator:
    """The dependency every /api route runs first; raises a 401 ApiError when refused."""

    def __init__(
        self,
        *,
        token: str | None,
        auth: AuthCheck | None,
        allow_unauthenticated: bool,
        session_token_secret: str | None = None,
    ) -> None:
        if token is None and auth is None and not allow_unauthenticated:
            raise ValueError(NO_AUTH_CONFIGURED)
        if token is not None and not token:
            raise ValueError("token must not be empty")
        if session_token_secret is not None and not session_token_secret:
            raise ValueError("session_token_secret must not be empty")
        self.token = token
        self.auth = auth
        self.open = allow_unauthenticated and token is None and auth is None
        # What session tokens are signed with: the server's token unless given its own.
        self.session_token_secret = session_token_secret or token

    async def __call__(
        self,
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> None:
        if request.scope.get(AUTHENTICATED_SCOPE_KEY) is self:
            return
        if self.open:
            return
        in_url = credentials is None
        presented = credentials.credentials if credentials else _query_token(request)
        if self._token_matches(presented):
            if in_url:
                raise _unauthorized(SERVER_TOKEN_IN_URL, "access_token")
            return
        if presented is not None and is_session_token(presented):
            self._check_session_token(request, presented)
            return
        if self.auth is not None:
            verdict = self.auth(request)
            if inspect.isawaitable(verdict):
                verdict = await verdict
            if verdict:
                return
        message = (
            "missing credentials: send 'Authorization: Bearer <token>'"
            if presented is None
            else "the token is not valid for this server"
        )
        raise _unauthorized(message)

    def _token_matches(self, presented: str | None) -> bool:
        if self.token is None or presented is None:
            return False
        return secrets.compare_digest(presented.encode(), self.token.encode())

    def _check_session_token(self, request: Request, presented: str) -> None:
        """Lets a session token through to a route it opens, of its own session; raises a
        401 for a token this server did not sign or that expired, a 403 elsewhere."""
        if self.session_token_secret is None:
            raise _unauthorized("this server does not accept session tokens")
        try:
            claims = verify_session_token(self.session_token_secret, presented)
        except InvalidSessionToken as error:
            raise _unauthorized(str(error)) from None
        name = getattr(request.scope.get("route"), "name", None)
        opened = SESSION_TOKEN_ROUTES.get(name) if isinstance(name, str) else None
        if opened is None or opened[0] != request.method:
            raise ApiError(403, "forbidden", ROUTE_NOT_FOR_SESSION_TOKENS)
        if request.path_params.get("session_id") != claims.session_id:
            raise ApiError(403, "forbidden", OTHER_SESSION, "session_id")


def _unauthorized(message: str, field: str | None = None) -> ApiError:
    return ApiError(401, "unauthorized", message, field, headers={"WWW-Authenticate": "Bearer"})


def _query_token(request: Request) -> str | None:
    if request.method != "GET" or not request.url.path.endswith(STREAM_PATH_SUFFIXES):
        return None
    return request.query_params.get("access_token")


async def authenticate_before_body(request: Request) -> None:
    """Raises the Authenticator's 401 ApiError, or marks the request as authenticated so that
    the route's dependency does not ask again."""
    authenticate = getattr(request.app.state, "dex_authenticate", None)
    if not isinstance(authenticate, Authenticator):
        return
    await authenticate(request, await _bearer(request))
    request.scope[AUTHENTICATED_SCOPE_KEY] = authenticate
