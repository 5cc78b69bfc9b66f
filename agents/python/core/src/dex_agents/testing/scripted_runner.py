"""ScriptedRunner: a small runner that speaks Chat Completions to a model server.

It exists so the core can be tested and demonstrated without a framework or a model key:
pointed at `ScriptedModelServer`, every model call is a real streamed HTTP request whose
reply the test scripted. Tools are plain Python functions called with the JSON arguments.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import httpx

from ..results import model_visible_result
from ..runner import (
    AgentTurnContext,
    AgentTurnOutcome,
    DeferredToolCall,
    DeferredToolExecution,
    DeferredToolOutcome,
    FrameworkMessage,
    ModelCallMetadata,
    ToolCallsRequested,
    ToolExecutionError,
    ToolExecutionResult,
    ToolInputRequested,
    ToolTaskStarted,
    TurnCompleted,
)
from ..tool_context import running_tool
from ..types import AgentUsage

MODEL_URL_ENV = "DEX_AGENTS_SCRIPTED_MODEL_URL"


class ScriptedRunner:
    """Runs one Chat Completions request per model Step; tools run only in tool Steps."""

    def __init__(
        self,
        tools: Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]] = (),
        *,
        base_url: str | None = None,
        model: str = "scripted-model",
        instructions: str | None = None,
        timeout: float = 120.0,
    ) -> None:
        self.tools = dict(tools) if isinstance(tools, Mapping) else {t.__name__: t for t in tools}
        self._base_url = base_url
        self.model = model
        self.instructions = instructions
        self.timeout = timeout

    @property
    def base_url(self) -> str:
        url = self._base_url or os.environ.get(MODEL_URL_ENV)
        if not url:
            raise RuntimeError(f"set {MODEL_URL_ENV} or pass base_url to ScriptedRunner")
        return url.rstrip("/")

    def build_user_message(self, text: str) -> FrameworkMessage:
        item = {"role": "user", "content": text}
        return FrameworkMessage(role="user", text=text, framework_item=json.dumps(item))

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        pending = self._pending_items(turn)
        request = {
            "model": self.model,
            "messages": self._history(turn) + pending,
            "tools": [self._schema(name, fn) for name, fn in self.tools.items()],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        reply, usage, metadata = await self._stream(request, turn)
        if reply.get("tool_calls"):
            calls = [
                DeferredToolCall(
                    tool_call_id=call["id"],
                    tool_name=call["function"]["name"],
                    arguments=call["function"]["arguments"],
                )
                for call in reply["tool_calls"]
            ]
            state = json.dumps({"items": [*pending, reply]})
            return ToolCallsRequested(
                framework_run_state=state,
                tool_calls=calls,
                usage=usage,
                model_call_metadata=metadata,
            )
        return TurnCompleted(
            new_messages=self._to_messages([*pending, reply]),
            usage=usage,
            model_call_metadata=metadata,
        )

    async def build_unfinished_turn_messages(
        self, turn: AgentTurnContext
    ) -> Sequence[FrameworkMessage]:
        """The turn's items kept in run state, with a result for every final tool call."""
        return self._to_messages(self._pending_items(turn))

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> DeferredToolOutcome:
        record = call.tool_call
        function = self.tools.get(record.tool_name)
        if function is None:
            raise ToolExecutionError(f"unknown tool {record.tool_name!r}")
        try:
            arguments = json.loads(record.arguments)
        except ValueError:
            raise ToolExecutionError("arguments must be a JSON object") from None
        if not isinstance(arguments, dict):
            raise ToolExecutionError("arguments must be a JSON object")
        try:
            with running_tool(call):
                result = function(**arguments)
                if inspect.isawaitable(result):
                    result = await result
        except TypeError as error:
            raise ToolExecutionError(f"invalid arguments for {record.tool_name}: {error}") from None
        if isinstance(result, ToolExecutionResult | ToolInputRequested | ToolTaskStarted):
            return result  # the tool's own outcome: with framework data, a question, a task
        return ToolExecutionResult(result if isinstance(result, str) else json.dumps(result))

    # Chat Completions ---------------------------------------------------------------------

    def _history(self, turn: AgentTurnContext) -> list[dict[str, Any]]:
        system = [{"role": "system", "content": self.instructions}] if self.instructions else []
        return system + [json.loads(message.framework_item) for message in turn.messages]

    def _pending_items(self, turn: AgentTurnContext) -> list[dict[str, Any]]:
        """This turn's unstored items: run state plus the results of its final tool calls."""
        if not turn.framework_run_state:
            return []
        items: list[dict[str, Any]] = json.loads(turn.framework_run_state)["items"]
        answered = {item.get("tool_call_id") for item in items if item["role"] == "tool"}
        for record in sorted(turn.tool_calls, key=lambda r: r.deferral_order):
            if record.is_final and record.tool_call_id not in answered:
                items.append(
                    {
                        "role": "tool",
                        "tool_call_id": record.tool_call_id,
                        "name": record.tool_name,
                        "content": model_visible_result(record),
                    }
                )
        return items

    def _to_messages(self, items: list[dict[str, Any]]) -> list[FrameworkMessage]:
        return [self._to_message(item) for item in items]

    @staticmethod
    def _to_message(item: dict[str, Any]) -> FrameworkMessage:
        if item["role"] == "tool":
            return FrameworkMessage(
                role="tool",
                framework_item=json.dumps(item),
                tool_call_id=item["tool_call_id"],
                tool_name=item.get("name"),
                tool_output=item["content"],
            )
        calls = item.get("tool_calls") or []
        single = calls[0]["function"] if len(calls) == 1 else None
        return FrameworkMessage(
            role=item["role"],
            text=item.get("content"),
            framework_item=json.dumps(item),
            tool_call_id=calls[0]["id"] if single else None,
            tool_name=single["name"] if single else None,
            tool_arguments=single["arguments"] if single else None,
        )

    @staticmethod
    def _schema(name: str, function: Callable[..., Any]) -> dict[str, Any]:
        parameters = inspect.signature(function).parameters
        return {
            "type": "function",
            "function": {
                "name": name,
                "description": inspect.getdoc(function) or name,
                "parameters": {
                    "type": "object",
                    "properties": {p: {} for p in parameters},
                    "required": [
                        p for p, v in parameters.items() if v.default is inspect.Parameter.empty
                    ],
                },
            },
        }

    async def _stream(
        self, request: dict[str, Any], turn: AgentTurnContext
    ) -> tuple[dict[str, Any], AgentUsage | None, ModelCallMetadata]:
        text: list[str] = []
        # The response's id, model and finish reasons, which name the model call's span.
        answer: dict[str, Any] = {"finish_reasons": []}
        calls: dict[int, dict[str, Any]] = {}
        usage: AgentUsage | None = None
        # ASCII JSON, so texts with an unpaired surrogate (which UTF-8 cannot encode) still go.
        payload = json.dumps(request).encode()
        headers = {"content-type": "application/json"}
        url = f"{self.base_url}/chat/completions"
        async with (
            httpx.AsyncClient(timeout=self.timeout) as client,
            client.stream("POST", url, content=payload, headers=headers) as response,
        ):
            if response.status_code != 200:
                body = (await response.aread()).decode(errors="replace")
                raise RuntimeError(f"model call failed with HTTP {response.status_code}: {body}")
            async for line in response.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                answer.setdefault("id", chunk.get("id"))
                answer.setdefault("model", chunk.get("model"))
                if chunk.get("usage"):
                    usage = _usage(chunk["usage"])
                for choice in chunk.get("choices", []):
                    delta = choice.get("delta", {})
                    if delta.get("content"):
                        text.append(delta["content"])
                        turn.events.write("text_delta", {"text": delta["content"]})
                    for part in delta.get("tool_calls") or []:
                        _merge_tool_call(calls, part)
                    if choice.get("finish_reason"):
                        answer["finish_reasons"].append(choice["finish_reason"])
        reply: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
        if calls:
            reply["tool_calls"] = [calls[i] for i in sorted(calls)]
        metadata = ModelCallMetadata(
            request_model=self.model,
            response_model=answer.get("model"),
            provider_name="openai",
            response_id=answer.get("id"),
            finish_reasons=tuple(answer["finish_reasons"]),
        )
        return reply, usage, metadata


def _merge_tool_call(calls: dict[int, dict[str, Any]], part: dict[str, Any]) -> None:
    call = calls.setdefault(
        part["index"], {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
    )
    call["id"] = part.get("id") or call["id"]
    function = part.get("function") or {}
    call["function"]["name"] += function.get("name") or ""
    call["function"]["arguments"] += function.get("arguments") or ""


def _usage(raw: dict[str, Any]) -> AgentUsage:
    return AgentUsage(
        model_calls=1,
        input_tokens=raw.get("prompt_tokens", 0),
        output_tokens=raw.get("completion_tokens", 0),
        cached_input_tokens=(raw.get("prompt_tokens_details") or {}).get("cached_tokens", 0),
        reasoning_tokens=(raw.get("completion_tokens_details") or {}).get("reasoning_tokens", 0),
    )
