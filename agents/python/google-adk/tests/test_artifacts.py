"""ADK artifacts kept in the session (`artifacts.py`), in the runner harness: a real ADK agent
on LiteLlm against the scripted Chat Completions server, driven as the session Flow drives a
runner. A tool saves in its tool Step; a model callback of the same turn and a tool of a later
turn load it; a part over the limit fails the tool with a message the model reads."""

from __future__ import annotations

import json
from typing import Any

from dex_agents.testing import RunnerDriver, ScriptedModelServer, reply_text, reply_tools
from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.models import LlmRequest
from google.adk.models.lite_llm import LiteLlm
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from dex_agents_google_adk import AdkRunner
from dex_agents_google_adk.artifacts import ARTIFACTS_KEY, MAX_ARTIFACT_BYTES
from dex_agents_google_adk.events import decode_event


async def test_a_tool_steps_artifact_is_kept_and_loaded_later(model: ScriptedModelServer) -> None:
    seen: list[tuple[str, Any]] = []

    async def write_report(title: str, tool_context: ToolContext) -> str:
        """Write a report."""
        first = await tool_context.save_artifact("report.txt", types.Part(text=f"v1 {title}"))
        second = await tool_context.save_artifact("report.txt", types.Part(text=f"v2 {title}"))
        return f"saved versions {first} and {second}"

    async def read_report(tool_context: ToolContext) -> str:
        """Read the report."""
        names = await tool_context.list_artifacts()
        first = await tool_context.load_artifact("report.txt", version=0)
        latest = await tool_context.load_artifact("report.txt")
        assert first is not None and latest is not None
        seen.append(("tool", (names, first.text, latest.text)))
        return str(latest.text)

    async def save_huge(tool_context: ToolContext) -> str:
        """Save a huge file."""
        data = b"x" * (MAX_ARTIFACT_BYTES + 1)
        await tool_context.save_artifact(
            "huge.bin", types.Part.from_bytes(data=data, mime_type="a/b")
        )
        return "saved"

    async def peek(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
        part = await callback_context.load_artifact("report.txt")
        seen.append(("callback", part.text if part else None))

    llm = LiteLlm(model="openai/gpt-test", api_base=model.base_url, api_key="test")
    agent = LlmAgent(
        name="writer",
        model=llm,
        tools=[write_report, read_report, save_huge],
        before_model_callback=peek,
    )
    driver = RunnerDriver(AdkRunner(agent), default_tool_effect="read")
    model.enqueue(reply_tools(("w1", "write_report", {"title": "Q3"})), reply_text("Written."))
    first = await driver.turn("Write the Q3 report.")
    # The tool Step saved two versions; the RunModel that resumed the turn saw the latest.
    assert [r.output for r in first.records] == ["saved versions 0 and 1"]
    assert json.loads(first.records[0].framework_data or "")["artifacts"] == [
        ["report.txt", {"text": "v1 Q3"}],
        ["report.txt", {"text": "v2 Q3"}],
    ]
    assert seen == [("callback", None), ("callback", "v2 Q3")]
    # Both versions are stored on the call's function response, with the turn's messages.
    [response] = [m for m in first.new_messages if m.role == "tool"]
    stored = decode_event(response.framework_item).custom_metadata or {}
    assert stored[ARTIFACTS_KEY] == {"report.txt": [{"text": "v1 Q3"}, {"text": "v2 Q3"}]}

    model.enqueue(reply_tools(("r1", "read_report", {})), reply_text("It says v2."))
    await driver.turn("What does it say?")
    assert seen[-2] == ("tool", (["report.txt"], "v1 Q3", "v2 Q3"))

    model.enqueue(reply_tools(("h1", "save_huge", {})), reply_text("Too big."))
    huge = await driver.turn("Save a huge file.")
    assert [r.status for r in huge.records] == ["failed"]
    failure = json.loads(model.requests[-1].body["messages"][-1]["content"])["result"]
    assert f"of at most {MAX_ARTIFACT_BYTES} bytes" in failure


async def count_up(callback_context: CallbackContext, filename: str) -> None:
    """Saves the next number in `filename`: 0, then one more than its latest version."""
    latest = await callback_context.load_artifact(filename)
    number = int(latest.text or "0") + 1 if latest else 0
    await callback_context.save_artifact(filename, types.Part(text=str(number)))


async def before_agent(callback_context: CallbackContext) -> None:
    await count_up(callback_context, "before.txt")


async def after_agent(callback_context: CallbackContext) -> None:
    await count_up(callback_context, "after.txt")


async def read_counts(tool_context: ToolContext) -> str:
    """Read the counts."""
    counts: dict[str, list[str | None]] = {}
    for filename in ("before.txt", "after.txt"):
        versions = counts.setdefault(filename, [])
        while (
            part := await tool_context.load_artifact(filename, version=len(versions))
        ) is not None:
            versions.append(part.text)
    return json.dumps(counts)


async def test_an_agent_callbacks_artifacts_are_stored_and_loaded_in_later_turns(
    model: ScriptedModelServer,
) -> None:
    """`before_agent_callback` and `after_agent_callback` save where ADK records no event:
    the saves are stored with the turn's messages all the same, in order, and a tool of the
    same turn and of later turns loads every version."""
    llm = LiteLlm(model="openai/gpt-test", api_base=model.base_url, api_key="test")
    agent = LlmAgent(
        name="counter",
        model=llm,
        tools=[read_counts],
        before_agent_callback=before_agent,
        after_agent_callback=after_agent,
    )
    driver = RunnerDriver(AdkRunner(agent), default_tool_effect="read")
    model.enqueue(reply_text("Hello."))
    first = await driver.turn("Hi")
    [hello] = first.new_messages
    stored = decode_event(hello.framework_item).custom_metadata or {}
    assert stored[ARTIFACTS_KEY] == {"before.txt": [{"text": "0"}], "after.txt": [{"text": "0"}]}

    model.enqueue(reply_tools(("c1", "read_counts", {})), reply_text("Counted."))
    second = await driver.turn("Count.")
    # Turn 1's saves and this turn's first RunModel Step's, before the tool Step.
    assert json.loads(second.records[0].output or "") == {
        "before.txt": ["0", "1"],
        "after.txt": ["0", "1"],
    }

    model.enqueue(reply_tools(("c2", "read_counts", {})), reply_text("Counted again."))
    third = await driver.turn("Count again.")
    # Turn 2 stored both of its RunModel Steps' saves.
    assert json.loads(third.records[0].output or "") == {
        "before.txt": ["0", "1", "2", "3"],
        "after.txt": ["0", "1", "2", "3"],
    }


async def test_an_artifact_saved_beside_another_call_is_stored_once(
    model: ScriptedModelServer,
) -> None:
    """Two calls of one response: their function responses are one ADK event, stored as one
    message per response; the parts one call's tool saved are stored on one of them only, so
    a later turn counts each version once."""

    async def save_note(text: str, tool_context: ToolContext) -> str:
        """Save a note."""
        await tool_context.save_artifact("note.txt", types.Part(text=text))
        return "saved"

    def ping() -> str:
        """Ping."""
        return "pong"

    async def count_notes(tool_context: ToolContext) -> str:
        """Count the note's versions."""
        latest = await tool_context.get_artifact_version("note.txt")
        return str(latest.version + 1 if latest else 0)

    llm = LiteLlm(model="openai/gpt-test", api_base=model.base_url, api_key="test")
    agent = LlmAgent(name="notes", model=llm, tools=[save_note, ping, count_notes])
    driver = RunnerDriver(AdkRunner(agent), default_tool_effect="read")
    model.enqueue(
        reply_tools(("s1", "save_note", {"text": "hello"}), ("p1", "ping", {})),
        reply_text("Saved."),
    )
    first = await driver.turn("Save a note and ping.")
    stored = [
        (decode_event(m.framework_item).custom_metadata or {}).get(ARTIFACTS_KEY)
        for m in first.new_messages
        if m.role == "tool"
    ]
    assert sorted(stored, key=bool) == [None, {"note.txt": [{"text": "hello"}]}]

    model.enqueue(reply_tools(("c1", "count_notes", {})), reply_text("One."))
    second = await driver.turn("How many versions?")
    assert [r.output for r in second.records] == ["1"]
