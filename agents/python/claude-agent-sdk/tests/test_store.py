"""RecordSessionStore passes the SDK's SessionStore conformance suite, and reports what a turn
appended apart from what it was preloaded with."""

from __future__ import annotations

from claude_agent_sdk import SessionKey
from claude_agent_sdk.testing import run_session_store_conformance

from dex_agents_claude_agent_sdk import RecordSessionStore


async def test_the_sdk_conformance_suite_passes() -> None:
    await run_session_store_conformance(RecordSessionStore)  # type: ignore[arg-type]


async def test_appended_holds_only_this_runs_entries_once_each() -> None:
    store = RecordSessionStore()
    key = SessionKey(project_key="p", session_id="s")
    store.preload(key, [{"type": "user", "uuid": "a"}])
    await store.append(
        key, [{"type": "assistant", "uuid": "a"}, {"type": "assistant", "uuid": "b"}]
    )
    await store.append(key, [{"type": "assistant", "uuid": "b"}, {"type": "title"}])
    assert store.appended() == {"": [{"type": "assistant", "uuid": "b"}, {"type": "title"}]}
    assert [e.get("uuid") for e in await store.load(key) or []] == ["a", "b", None]
    assert await store.load(SessionKey(project_key="p", session_id="other")) is None
