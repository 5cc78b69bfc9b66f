"""dex_agents.web: sessions over HTTP for UIs (extra `web`).

`create_app()` returns an ASGI application (FastAPI) with the session API under `/api`, a
session's events as Server-Sent Events, the AI SDK UI message stream for `useChat`, and the
session viewer at `/`. `dex-agents serve` runs it; an application can mount it instead.
"""

from .app import create_app
from .session_token import SessionToken, mint_session_token

__all__ = ["SessionToken", "create_app", "mint_session_token"]
