"""A tool Step's whole Pydantic AI result, carried in the core's text output.

The core stores a tool call's result as one text (`ToolExecutionResult.output`). A tool that
returns only a value keeps that text as Pydantic AI would send it. A tool whose result holds
more (files or images in its return value, `ToolReturn.content`, `ToolReturn.metadata`) gets
its output as a JSON envelope: a readable `text` for the UI and history views, and the native
parts (`ToolReturnPart`, and the `UserPromptPart` of `ToolReturn.content`) in Pydantic AI's own
JSON, files as base64. The next model step turns the envelope back into a `ToolReturn`, so
Pydantic AI builds the very request it would have built had the tool run inside its own run,
in whichever Worker process runs that step.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pydantic_core
from dex_agents.runner import ToolExecutionError
from pydantic_ai import ToolReturn
from pydantic_ai.messages import (
    BinaryContent,
    FileUrl,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ToolReturnPart,
    UploadedFile,
    UserContent,
    UserPromptPart,
)

from .messages import dump_message, load_message, sendable_message

ENVELOPE_KEY = "dex_agents_pydantic_ai_tool_return"
"""The key that marks an output as an envelope; its value is the envelope's format version."""
ENVELOPE_VERSION = 1
DEFAULT_MAX_TOOL_RESULT_BYTES = 5 * 1024 * 1024

TOOL_RESULT_TOO_LARGE = (
    "the tool's result is {size} bytes once encoded, over the {limit}-byte limit of a stored tool "
    "result; return smaller files (or a URL such as ImageUrl or DocumentUrl instead of the bytes), "
    "or raise PydanticAiRunner(max_tool_result_bytes=...)"
)
METADATA_NOT_JSON = (
    "the tool's ToolReturn.metadata cannot be stored: {error}; give it JSON-serializable values"
)


@dataclass(frozen=True)
class NativeToolResult:
    """A tool Step's result as Pydantic AI's parts: the return, and the user part after it."""

    return_part: ToolReturnPart
    user_part: UserPromptPart | None
    tools: tuple[str, ...] | None = None
    """`ToolReturn.tools`: the deferred-loading tools the result reveals."""

    def as_tool_return(self) -> ToolReturn[Any]:
        """What a deferred result must be for Pydantic AI to rebuild these same parts."""
        content: Sequence[UserContent] | str | None = None
        if self.user_part is not None:
            content = self.user_part.content
        return ToolReturn(
            return_value=self.return_part.content,
            content=content,
            metadata=self.return_part.metadata,
            tools=list(self.tools) if self.tools is not None else None,
        )

    def request(self) -> ModelRequest:
        """The parts as the request Pydantic AI sends them in: the return, then the user part."""
        parts: list[ModelRequestPart] = [self.return_part]
        if self.user_part is not None:
            parts.append(self.user_part)
        return ModelRequest(parts=parts)

    def text(self) -> str:
        """The readable text: what the model reads as the tool result, then a line per file."""
        files = [*self.return_part.files, *_files_of(self.user_part)]
        lines = [self.return_part.model_response_str(), *map(_file_line, files)]
        if self.user_part is not None and isinstance(self.user_part.content, str):
            lines.append(self.user_part.content)
        return "\n".join(line for line in lines if line)


def encode_tool_result(result: NativeToolResult, max_bytes: int) -> str:
    """The output a tool Step stores: plain text when the result is only a value the model
    reads as text, else the envelope. Past `max_bytes`, a failure the model reads
    (ToolExecutionError)."""
    try:
        output = _output(result)
    except pydantic_core.PydanticSerializationError as error:
        # Pydantic AI's JSON cannot hold an unpaired surrogate; the model is sent U+FFFD anyway.
        sendable = _sendable(result)
        if sendable is not None:
            output = _output(sendable)
        elif _is_plain(result):
            raise
        else:
            raise ToolExecutionError(METADATA_NOT_JSON.format(error=error)) from error
    # An unpaired surrogate (a file name decoded with surrogateescape, say) counts its 3 bytes.
    size = len(output.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise ToolExecutionError(TOOL_RESULT_TOO_LARGE.format(size=size, limit=max_bytes))
    return output


def _is_plain(result: NativeToolResult) -> bool:
    """Whether the result is only a value the model reads as text (no envelope)."""
    part = result.return_part
    return (
        result.user_part is None
        and part.metadata is None
        and result.tools is None
        and not part.files
    )


def _output(result: NativeToolResult) -> str:
    part = result.return_part
    return part.model_response_str() if _is_plain(result) else _envelope(result)


def _sendable(result: NativeToolResult) -> NativeToolResult | None:
    """`result` with each unpaired surrogate replaced by U+FFFD; None when it has none."""
    request = sendable_message(result.request())
    return _from_request(request, result.tools) if request is not None else None


def _from_request(request: ModelMessage, tools: tuple[str, ...] | None) -> NativeToolResult | None:
    if not isinstance(request, ModelRequest) or not request.parts:
        return None
    return_part, *rest = request.parts
    if not isinstance(return_part, ToolReturnPart):
        return None
    user_part = next((part for part in rest if isinstance(part, UserPromptPart)), None)
    return NativeToolResult(return_part, user_part, tools)


def decode_tool_result(output: str | None) -> NativeToolResult | None:
    """The native result an envelope holds; None for a plain text output."""
    if not output or not output.startswith("{") or ENVELOPE_KEY not in output:
        return None
    try:
        envelope = json.loads(output)
    except ValueError:
        return None
    if not isinstance(envelope, dict) or envelope.get(ENVELOPE_KEY) != ENVELOPE_VERSION:
        return None
    request = load_message(json.dumps(envelope["request"]))
    tools = envelope.get("tools")
    return _from_request(request, tuple(tools) if tools is not None else None)


def readable_output(output: str | None) -> str:
    """An output as text: an envelope's readable text, any other output as it is."""
    native = decode_tool_result(output)
    return native.text() if native is not None else output or ""


def _envelope(result: NativeToolResult) -> str:
    request = dump_message(result.request())
    text = json.dumps(result.text())
    tools = f', "tools": {json.dumps(list(result.tools))}' if result.tools is not None else ""
    return f'{{"text": {text}, "{ENVELOPE_KEY}": {ENVELOPE_VERSION}, "request": {request}{tools}}}'


File = BinaryContent | UploadedFile | FileUrl


def _files_of(part: UserPromptPart | None) -> list[File]:
    if part is None or isinstance(part.content, str):
        return []
    return [
        item for item in part.content if isinstance(item, BinaryContent | UploadedFile | FileUrl)
    ]


def _file_line(file: File) -> str:
    if isinstance(file, BinaryContent):
        return f"[file: {file.media_type}, {len(file.data)} bytes]"
    if isinstance(file, FileUrl):
        return f"[file: {file.url}]"
    return f"[file: {file.file_id}]"
