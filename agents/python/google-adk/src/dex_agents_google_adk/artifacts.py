"""ADK artifacts kept in the session's own database, on the events that saved them.

Each Step runs ADK with a `StepArtifactService` built from the Step's session: every event of
the stored messages and of the turn that saved artifacts carries their parts in its
`custom_metadata` (`ARTIFACTS_KEY`: the parts saved, by filename, in the order saved), so
the service's versions are those of the session, whichever Worker runs the Step.

The service records each save itself, with where in the session it happened (how many events
the session held), rather than relying on ADK to mark an event for it: ADK marks one only
when it records an event there (`EventActions.artifact_delta`), which a
`before_agent_callback` or `after_agent_callback` that only saves does not get. After the
Step, each part goes on the first event the Step appended after its save (the model response
after a model callback's save, the function response after a tool's), else on the Step's
last event; so the events hold the saves in the order they were made. What a turn stores is
its messages (`events.kept_events`): the parts of an event that is not one (an agent's state
event, a confirmation) move onto the next stored event of the turn, before its own, or the
last one when none follows, keeping that order. Until the turn ends they stay in the run
state's events.

A tool saves in its tool Step: the parts it saved are carried with its other actions in the
record's framework data (`tool_actions.py`), and the call's gate saves them again, in the same
order, in the RunModel Step that resumes the turn, whose service holds the same versions, so
they get the versions the tool saw. A part is at most `MAX_ARTIFACT_BYTES` (its inline data,
or its text), since it is stored in a message that every later Step of the session reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

from dex_agents.errors import DexAgentsError
from google.adk.artifacts.base_artifact_service import (
    ArtifactVersion,
    BaseArtifactService,
    ensure_part,
)
from google.adk.events import Event
from google.genai import types

ARTIFACTS_KEY: Final = "dex_agents_artifacts"
"""The `custom_metadata` key of an event's saved artifacts: {filename: [part JSON, ...]}."""

MAX_ARTIFACT_BYTES: Final = 256 * 1024
"""The largest artifact a Step may save: its inline data's bytes, or its text's UTF-8 bytes."""


class ArtifactTooLargeError(DexAgentsError, ValueError):
    """An artifact over `MAX_ARTIFACT_BYTES`; nothing was saved."""


def part_json(part: types.Part) -> dict[str, Any]:
    return part.model_dump(mode="json", exclude_none=True)


def _size(part: types.Part) -> int:
    if part.inline_data is not None and part.inline_data.data is not None:
        return len(part.inline_data.data)
    return len((part.text or "").encode())


@dataclass(frozen=True)
class Save:
    """One save of a Step."""

    filename: str
    version: int
    part: types.Part
    position: int
    """How many events the Step's session held when the part was saved."""


class StepArtifactService(BaseArtifactService):
    """The session's artifacts for one Step: versions from 0 per filename, in save order.
    Every save of the Step is also in `saved`, in order, for the runner to store;
    `position()` is how many events the Step's session holds."""

    def __init__(self, position: Callable[[], int]) -> None:
        self.parts: dict[str, list[types.Part]] = {}
        self.saved: list[Save] = []
        self._position = position

    def load_events(self, events: Iterable[Event]) -> None:
        """Adds the artifacts `events` saved, in order."""
        for event in events:
            for filename, parts in saved_parts(event).items():
                self.parts.setdefault(filename, []).extend(parts)

    async def save_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        artifact: types.Part | dict[str, Any],
        session_id: str | None = None,
        custom_metadata: dict[str, Any] | None = None,
    ) -> int:
        part = ensure_part(artifact)
        size = _size(part)
        if size > MAX_ARTIFACT_BYTES:
            raise ArtifactTooLargeError(
                f"artifact {filename!r} is {size} bytes; a dex-agents session keeps artifacts "
                f"of at most {MAX_ARTIFACT_BYTES} bytes in its database: store larger files "
                "elsewhere and save a reference to them"
            )
        versions = self.parts.setdefault(filename, [])
        versions.append(part)
        self.saved.append(Save(filename, len(versions) - 1, part, self._position()))
        return len(versions) - 1

    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> types.Part | None:
        versions = self.parts.get(filename, [])
        index = len(versions) - 1 if version is None else version
        return versions[index] if 0 <= index < len(versions) else None

    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: str | None = None
    ) -> list[str]:
        return sorted(self.parts)

    async def delete_artifact(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> None:
        raise DexAgentsError(
            "a dex-agents session keeps every version of its artifacts: save a new version "
            f"of {filename!r} instead of deleting it"
        )

    async def list_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> list[int]:
        return list(range(len(self.parts.get(filename, []))))

    async def list_artifact_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> list[ArtifactVersion]:
        return [self._version(filename, v) for v in range(len(self.parts.get(filename, [])))]

    async def get_artifact_version(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> ArtifactVersion | None:
        count = len(self.parts.get(filename, []))
        index = count - 1 if version is None else version
        return self._version(filename, index) if 0 <= index < count else None

    def _version(self, filename: str, version: int) -> ArtifactVersion:
        part = self.parts[filename][version]
        mime = part.inline_data.mime_type if part.inline_data else None
        return ArtifactVersion(
            version=version,
            canonical_uri=f"dex-agents://artifacts/{filename}/{version}",
            mime_type=mime,
        )


def saved_parts(event: Event) -> dict[str, list[types.Part]]:
    """The artifacts an event saved, by filename, in save order."""
    stored = (event.custom_metadata or {}).get(ARTIFACTS_KEY)
    if not isinstance(stored, dict):
        return {}
    return {name: [types.Part.model_validate(p) for p in parts] for name, parts in stored.items()}


def attach_saved(events: list[Event], saved: list[Save], first_position: int) -> None:
    """Puts each part the Step saved on the first event appended after the save (`events`
    are the Step's, the first at `first_position` in the session), else on the last one."""
    for save in saved:
        if not events:
            return
        index = min(max(save.position - first_position, 0), len(events) - 1)
        event = events[index]
        add_parts(event, {save.filename: [part_json(save.part)]})


def stored_json(event: Event) -> dict[str, list[Any]]:
    """The parts an event saved, as stored: {filename: [part JSON, ...]}."""
    stored = (event.custom_metadata or {}).get(ARTIFACTS_KEY)
    return {k: list(v) for k, v in stored.items()} if isinstance(stored, dict) else {}


def add_parts(event: Event, parts: dict[str, list[Any]], *, before: bool = False) -> None:
    """Adds `parts` ({filename: [part JSON, ...]}) to what `event` saved: after its own
    parts, or before them (parts saved before the event's own)."""
    if not parts:
        return
    stored = stored_json(event)
    for filename, more in parts.items():
        own = stored.get(filename, [])
        stored[filename] = [*more, *own] if before else [*own, *more]
    event.custom_metadata = {**(event.custom_metadata or {}), ARTIFACTS_KEY: stored}


def without_parts(event: Event) -> Event:
    """A copy of `event` that saved nothing."""
    metadata = {k: v for k, v in (event.custom_metadata or {}).items() if k != ARTIFACTS_KEY}
    return event.model_copy(update={"custom_metadata": metadata or None})


def carried_json(saved: list[Save]) -> list[list[Any]]:
    """A tool Step's saves, for its framework data: [[filename, part JSON], ...]."""
    return [[save.filename, part_json(save.part)] for save in saved]


def carried_parts(data: Any) -> list[tuple[str, types.Part]]:
    """The saves `carried_json` wrote."""
    if not isinstance(data, list):
        return []
    return [(str(name), types.Part.model_validate(part)) for name, part in data]
