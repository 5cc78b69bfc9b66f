"""The session service a Step runs ADK on: one session, held in memory for the Step.

ADK's `InMemorySessionService` deep-copies the whole session on every read, which a Step
would pay for the whole stored history several times. A Step's session is rebuilt from the
stored messages and dropped when the Step ends, so nothing else reads it: this service hands
ADK the one session object and applies events to it with ADK's own `append_event` (state
deltas included).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.adk.events import Event
from google.adk.sessions import BaseSessionService, Session
from google.adk.sessions.base_session_service import GetSessionConfig, ListSessionsResponse

from .artifacts import StepArtifactService

USER_ID = "dex-agents"


class StepSessionService(BaseSessionService):
    def __init__(self, app_name: str, session_id: str) -> None:
        self.session = Session(id=session_id, app_name=app_name, user_id=USER_ID)
        self.artifacts = StepArtifactService(lambda: len(self.session.events))
        """The session's artifacts, from the same events (`artifacts.py`)."""

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        raise NotImplementedError("a Step's session service holds its one session")

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        session = self.session
        if (app_name, user_id, session_id) == (session.app_name, session.user_id, session.id):
            return session
        return None

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        return ListSessionsResponse(sessions=[self.session])

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        raise NotImplementedError("a Step's session service holds its one session")


async def step_session(
    app_name: str, session_id: str, events: Sequence[Event]
) -> StepSessionService:
    """A service whose session holds `events`, their state deltas applied, and whose
    artifact service holds the artifacts they saved."""
    service = StepSessionService(app_name, session_id)
    for event in events:
        await service.append_event(service.session, event)
    service.artifacts.load_events(events)
    return service
