"""The ASGI application: `create_app()`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from importlib.metadata import version
from pathlib import Path

from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles

from ..client import AgentClient
from ..health import DatabaseProbe, Health
from . import access, api, chat, methods, rules
from .auth import ACCESS_ERROR_RESPONSES, AuthCheck, Authenticator
from .errors import ERROR_RESPONSES, register_error_handlers
from .guards import LoopbackOnly

# The viewer's built files (`npm run build` in agents/python/core/web writes them here).
STATIC_DIR = Path(__file__).parent / "static"
# How often an idle event stream sends a comment, so proxies keep the connection open.
HEARTBEAT_SECONDS = 15.0
# The largest request body an /api route takes in: a chat request carries the whole
# conversation (`useChat` sends every message), and one user message may be 1 MiB of text,
# which JSON escaping can make several times longer.
MAX_BODY_BYTES = 16 * 1024 * 1024

VIEWER_NOT_BUILT = """<!doctype html>
<html><head><meta charset="utf-8"><title>dex-agents</title></head>
<body>
<h1>dex-agents</h1>
<p>The session API is at <code>/api</code> (see <a href="/docs">/docs</a>), but the viewer
is not built. Build it from the repository's root, then restart the server:</p>
<pre>npm --prefix agents/python/core/web ci && npm --prefix agents/python/core/web run build</pre>
</body></html>
"""


def create_app(
    database_url: str | None = None,
    *,
    client: AgentClient | None = None,
    token: str | None = None,
    auth: AuthCheck | None = None,
    cors_origins: Iterable[str] = (),
    allow_unauthenticated: bool = False,
    heartbeat_seconds: float = HEARTBEAT_SECONDS,
    max_body_bytes: int = MAX_BODY_BYTES,
    session_token_secret: str | None = None,
    metrics: Callable[[], tuple[bytes, str]] | None = None,
) -> FastAPI:
    """The web application over the sessions in `database_url` (default: as AgentClient's).

    Pass `client` to share an AgentClient the application already has; it is not closed.
    Every /api request must present `token` as `Authorization: Bearer <token>`, or pass
    `auth(request)` (a callable returning bool, or an awaitable of one); with neither,
    `allow_unauthenticated=True` must say that anyone who reaches the server may use it.
    `cors_origins` are the browser origins allowed to call the API from other pages.

    Each request is authenticated before its body is read, and a body longer than
    `max_body_bytes` gets 413 (`body_too_large`) while it streams in. Without any auth, only
    requests to a loopback Host name, from no page or a loopback or CORS origin, are
    answered (`guards.py`).

    Session tokens (`POST /api/sessions/{id}/tokens`, `mint_session_token`) are signed with
    `session_token_secret`, by default `token`; with neither, the server mints none.

    `/livez` and `/readyz` answer orchestrators without auth (they tell only whether the
    server and its database answer); `metrics` (the exposition text and its content type)
    is served at `/metrics`, with the API's auth.
    """
    authenticate = Authenticator(
        token=token,
        auth=auth,
        allow_unauthenticated=allow_unauthenticated,
        session_token_secret=session_token_secret,
    )
    owned = client is None
    agent_client = client if client is not None else AgentClient(database_url)

    probe = DatabaseProbe(agent_client.database_url)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            probe.close()
            if owned:
                await agent_client.close()

    app = FastAPI(
        title="dex-agents",
        summary="Durable agent sessions over HTTP: the session API, events as Server-Sent "
        "Events, and the AI SDK UI message stream.",
        version=version("dex-agents"),
        lifespan=lifespan,
    )
    app.state.dex_client = agent_client
    app.state.dex_heartbeat_seconds = heartbeat_seconds
    app.state.dex_authenticate = authenticate
    app.state.dex_max_body_bytes = max_body_bytes
    app.state.dex_session_token_secret = authenticate.session_token_secret
    register_error_handlers(app)
    for router in (api.router, chat.router, access.router):
        app.include_router(
            router,
            prefix="/api",
            dependencies=[Depends(authenticate)],
            responses={**ERROR_RESPONSES, **ACCESS_ERROR_RESPONSES},
        )
    _add_operations_routes(app, probe, metrics, authenticate)
    methods.install(app)
    rules.keep_exact_bounds(app)
    _mount_viewer(app)
    if authenticate.open:
        app.add_middleware(LoopbackOnly, origins=list(cors_origins))
    app.add_middleware(
        CORSMiddleware,
        allow_origins=list(cors_origins),
        allow_methods=["*"],
        allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
        expose_headers=["x-vercel-ai-ui-message-stream"],
    )
    return app


def _add_operations_routes(
    app: FastAPI,
    probe: DatabaseProbe,
    metrics: Callable[[], tuple[bytes, str]] | None,
    authenticate: Authenticator,
) -> None:
    """/livez, /readyz and (with metrics) /metrics: see `health.py` and `metrics.py`."""

    @app.get("/livez", include_in_schema=False)
    async def livez() -> JSONResponse:
        health = Health()
        health.check("event_loop", True, "ok")  # it runs this
        return JSONResponse(health.as_json(), status_code=health.status_code)

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> JSONResponse:
        health = Health()
        health.check("database", *await asyncio.to_thread(probe.check))
        return JSONResponse(health.as_json(), status_code=health.status_code)

    if metrics is not None:
        render = metrics

        @app.get("/metrics", include_in_schema=False, dependencies=[Depends(authenticate)])
        async def metrics_text() -> Response:
            body, content_type = await asyncio.to_thread(render)
            return Response(body, media_type=content_type)


def _mount_viewer(app: FastAPI) -> None:
    """The viewer's static files at `/`, without auth (they hold no data), after the API;
    a page that says how to build it when it is not built."""
    if (STATIC_DIR / "index.html").is_file():
        app.mount("/", StaticFiles(directory=STATIC_DIR, html=True), name="viewer")
        return

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def viewer_not_built() -> str:
        return VIEWER_NOT_BUILT
