"""The stored form of a tool Step's result: plain text for a value, an envelope that gives
back Pydantic AI's own parts for files, ToolReturn.content and metadata, and the size limit."""

from __future__ import annotations

import json

import pytest
from dex_agents.runner import ToolExecutionError, ToolPolicy
from dex_agents.testing import RunnerDriver, ScriptedModelServer, reply_text, reply_tools
from pydantic_ai import Agent, BinaryContent, DocumentUrl
from pydantic_ai.messages import ToolReturnPart, UserPromptPart

from dex_agents_pydantic_ai import PydanticAiRunner
from dex_agents_pydantic_ai.tool_results import (
    NativeToolResult,
    decode_tool_result,
    encode_tool_result,
    readable_output,
)

from .apps.agents import PIXEL_PNG, build_files_agent, scripted_model

LIMIT = 1024 * 1024


def test_a_value_is_stored_as_the_text_the_model_reads() -> None:
    part = ToolReturnPart("lookup", {"status": "shipped"}, tool_call_id="c1")
    output = encode_tool_result(NativeToolResult(part, None), LIMIT)

    assert output == '{"status":"shipped"}'
    assert decode_tool_result(output) is None
    assert readable_output(output) == output


def test_files_content_and_metadata_come_back_as_the_tool_return() -> None:
    image = BinaryContent(PIXEL_PNG, media_type="image/png")
    part = ToolReturnPart("chart", "ready", tool_call_id="c1", metadata={"rows": 3})
    user = UserPromptPart(["See:", image, DocumentUrl("https://example.com/a.pdf")])
    output = encode_tool_result(NativeToolResult(part, user), LIMIT)

    assert json.loads(output)["text"] == (
        f"ready\n[file: image/png, {len(PIXEL_PNG)} bytes]\n[file: https://example.com/a.pdf]"
    )
    native = decode_tool_result(output)
    assert native is not None
    tool_return = native.as_tool_return()
    assert (tool_return.return_value, tool_return.metadata) == ("ready", {"rows": 3})
    assert tool_return.content is not None
    text, file, url = tool_return.content
    assert text == "See:"
    assert isinstance(file, BinaryContent) and file.data == PIXEL_PNG
    assert isinstance(url, DocumentUrl) and url.url == "https://example.com/a.pdf"


def test_a_file_returned_as_the_value_stays_the_value() -> None:
    part = ToolReturnPart("snapshot", BinaryContent(PIXEL_PNG, media_type="image/png"), "c1")
    native = decode_tool_result(encode_tool_result(NativeToolResult(part, None), LIMIT))

    assert native is not None and native.user_part is None
    value = native.as_tool_return().return_value
    assert isinstance(value, BinaryContent) and value.data == PIXEL_PNG


def test_a_result_over_the_limit_fails_with_the_limit_and_what_to_do() -> None:
    part = ToolReturnPart("snapshot", BinaryContent(b"\0" * 2048, media_type="image/png"), "c1")

    with pytest.raises(ToolExecutionError, match="over the 1024-byte limit") as raised:
        encode_tool_result(NativeToolResult(part, None), 1024)
    assert "max_tool_result_bytes" in str(raised.value)


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
def test_metadata_that_is_not_json_fails_with_what_to_do() -> None:
    part = ToolReturnPart("t", "ok", tool_call_id="c1", metadata={"at": object()})

    with pytest.raises(ToolExecutionError, match="JSON-serializable"):
        encode_tool_result(NativeToolResult(part, None), LIMIT)


def test_the_limit_must_be_positive() -> None:
    agent = build_files_agent(scripted_model("http://127.0.0.1:9/v1"))
    with pytest.raises(ValueError, match="max_tool_result_bytes"):
        PydanticAiRunner(agent, max_tool_result_bytes=0)


async def test_a_result_with_an_unpaired_surrogate_is_kept_and_the_model_reads_u_fffd(
    model: ScriptedModelServer,
) -> None:
    """A file name decoded with surrogateescape, say: the record keeps the result as the tool
    returned it (its size counts the surrogate's 3 bytes), the model is sent U+FFFD."""
    name = "report-\udce9.txt"
    agent = Agent(scripted_model(model.base_url))

    @agent.tool_plain
    def newest_file() -> str:
        """The newest file's name."""
        return name

    model.enqueue(reply_tools(("c1", "newest_file", {})), reply_text("Found it."))
    driver = RunnerDriver(PydanticAiRunner(agent), tool_policies={"newest_file": ToolPolicy()})
    result = await driver.turn("Which file is newest?")

    assert [(r.status, r.output) for r in result.records] == [("succeeded", name)]
    assert result.final.new_messages[-1].text == "Found it."
    tool_results = [m for m in model.requests[1].body["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_results] == ["report-\ufffd.txt"]


async def test_a_structured_result_with_an_unpaired_surrogate_reaches_the_model_as_u_fffd(
    model: ScriptedModelServer,
) -> None:
    """A listing of file names decoded with surrogateescape: Pydantic AI's JSON cannot hold the
    surrogate, so the result is stored and sent as that JSON with U+FFFD; the call succeeds."""
    agent = Agent(scripted_model(model.base_url))

    @agent.tool_plain
    def list_files() -> dict[str, list[str]]:
        """The files' names."""
        return {"files": ["report-\udce9.txt", "notes.txt"]}

    model.enqueue(reply_tools(("c1", "list_files", {})), reply_text("Two files."))
    driver = RunnerDriver(PydanticAiRunner(agent), tool_policies={"list_files": ToolPolicy()})
    result = await driver.turn("Which files are there?")

    sent = '{"files":["report-\ufffd.txt","notes.txt"]}'
    assert [(r.status, r.output) for r in result.records] == [("succeeded", sent)]
    tool_results = [m for m in model.requests[1].body["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_results] == [sent]


def test_an_envelope_with_unpaired_surrogates_keeps_its_files_and_holds_u_fffd() -> None:
    image = BinaryContent(PIXEL_PNG, media_type="image/png")
    part = ToolReturnPart("chart", "ready \udce9", tool_call_id="c1", metadata={"by": "\udce9"})
    user = UserPromptPart(["See \udce9:", image])
    output = encode_tool_result(NativeToolResult(part, user), LIMIT)

    native = decode_tool_result(output)
    assert native is not None
    tool_return = native.as_tool_return()
    assert (tool_return.return_value, tool_return.metadata) == ("ready \ufffd", {"by": "\ufffd"})
    assert tool_return.content is not None
    text, file = tool_return.content
    assert text == "See \ufffd:"
    assert isinstance(file, BinaryContent) and file.data == PIXEL_PNG
