"""Who may call the API: a bearer token, an application's own check, or nobody asked.

Requests send `Authorization: Bearer <token>`. A GET of an event stream (a path ending in
`/events` or `/chat/stream`) may send `?access_token=<token>` instead, because a browser's
EventSource cannot set headers.

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

from .errors import ApiError

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

_bearer = HTTPBearer(
    auto_error=False,
    description="The server's token; GET event streams also take ?access_token=<token>.",
)


class Authenticator:
    """The dependency every /api route runs first; raises a 401 ApiError when refused."""

    def __init__(
        self, *, token: str | None, auth: AuthCheck | None, allow_unauthenticated: bool
    ) -> None:
        if token is None and auth is None and not allow_unauthenticated:
            raise ValueError(NO_AUTH_CONFIGURED)
        if token is not None and not token:
            raise ValueError("token must not be empty")
        self.token = token
        self.auth = auth
        self.open = allow_unauthenticated and token is None and auth is None

    async def __call__(
        self,
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> None:
        if request.scope.get(AUTHENTICATED_SCOPE_KEY) is self:
            return
        presented = credentials.credentials if credentials else _query_token(request)
        if self.open or self._token_matches(presented):
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
        raise ApiError(401, "unauthorized", message, headers={"WWW-Authenticate": "Bearer"})

    def _token_matches(self, presented: str | None) -> bool:
        if self.token is None or presented is None:
            return False
        return secrets.compare_digest(presented.encode(), self.token.encode())


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
