"""ModelClient: one streamed LiteLLM Chat Completions call per model Step.

LiteLLM is imported on first use only, so `dex_agents.stepwise` loads without it and the
core's main entry point never loads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..runner import ModelCallMetadata
from ..types import AgentUsage
from ..warm_up import load_openai_client

INSTALL_HINT: Final = (
    "from a clone of the repository, add `--extra stepwise` to `uv run --project "
    "agents/python/core`; from the wheels scripts/build.sh builds, "
    "`pip install --find-links dist 'dex-agents[stepwise]'`"
)
_HEARTBEAT_SECONDS: Final = 10.0
_litellm_module: Any = None
LOCAL_COST_MAP_ENV: Final = "LITELLM_LOCAL_MODEL_COST_MAP"


def use_local_cost_map() -> None:
    """Has LiteLLM read the model cost map it ships with, which it otherwise fetches over the
    network when it is imported (a Worker must not wait on that, nor on its timeout, offline).
    Call it before LiteLLM is imported; an application that sets the variable keeps its value."""
    if not os.environ.get(LOCAL_COST_MAP_ENV):
        os.environ[LOCAL_COST_MAP_ENV] = "True"


def litellm() -> Any:
    """The litellm module, imported on first use, with an error naming the extra."""
    global _litellm_module
    if _litellm_module is None:
        use_local_cost_map()
        try:
            _litellm_module = importlib.import_module("litellm")
        except ImportError as error:
            raise ImportError(
                f"dex_agents.stepwise needs LiteLLM, which the stepwise extra installs: "
                f"{INSTALL_HINT}"
            ) from error
    return _litellm_module


async def warm_up_litellm(model: str) -> None:
    """Loads what LiteLLM's first call of `model` would: LiteLLM itself, the model's tokenizer
    (LiteLLM counts a stream's tokens with it), the OpenAI SDK's resources, and the modules of
    its completion and streaming path, by one mocked call that reaches no model, is logged
    nowhere and fetches nothing. Blocking work runs in a thread. An empty `model` (chosen per
    session) loads LiteLLM and the OpenAI SDK's resources only."""
    await asyncio.to_thread(_load_litellm, model)
    if not model:
        return
    stream = await litellm().acompletion(
        model=model,
        messages=[{"role": "user", "content": "warm-up"}],
        stream=True,
        stream_options={"include_usage": True},
        mock_response="warm-up",
        **{"no-log": True},
    )
    async for _ in stream:
        pass


def _load_litellm(model: str) -> None:
    module = litellm()
    if model:
        with contextlib.suppress(Exception):  # a model LiteLLM has no tokenizer for
            module.token_counter(model=model, text="warm-up")
    openai = importlib.import_module("openai")
    with openai.OpenAI(api_key="warm-up", base_url="http://127.0.0.1:9/v1") as client:
        load_openai_client(client)  # no request


@dataclass(frozen=True)
class ModelClient:
    """A LiteLLM model: any provider LiteLLM speaks, such as ``anthropic/claude-sonnet-4-5``.

    `settings` are extra `litellm.acompletion` keywords (temperature, reasoning_effort, ...),
    merged over AgentDefinition.model_settings. `forced_tool_choice` overrides what LiteLLM's
    model information says about forcing a tool choice.
    """

    model: str
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    settings: Mapping[str, Any] = field(default_factory=dict)
    timeout: float | None = None
    forced_tool_choice: bool | None = None

    @property
    def provider(self) -> tuple[str, str | None]:
        """The model name without its provider prefix, and LiteLLM's provider name."""
        try:
            model, provider, _, _ = litellm().get_llm_provider(
                model=self.model, api_base=self.api_base
            )
        except Exception:
            return self.model, None
        return str(model), str(provider) if provider else None

    def supports_forced_tool_choice(self, settings: Mapping[str, Any]) -> bool:
        """Whether the model accepts a forced tool choice with these settings.

        LiteLLM's model information decides (`supports_tool_choice`); a model it does not
        know counts as not supporting it. Anthropic refuses a forced tool with extended
        thinking on.
        """
        if self.forced_tool_choice is not None:
            return self.forced_tool_choice
        model, provider = self.provider
        if provider in _ANTHROPIC_PROVIDERS or "claude" in model:
            thinking = settings.get("thinking")
            if isinstance(thinking, Mapping) and thinking.get("type") not in (None, "disabled"):
                return False
            if settings.get("reasoning_effort") not in (None, "none"):
                return False
        try:
            utils = importlib.import_module("litellm.utils")
            return bool(utils.supports_tool_choice(self.model, provider))
        except Exception:
            return False


_ANTHROPIC_PROVIDERS: Final = frozenset({"anthropic", "bedrock", "vertex_ai"})


def as_model_client(model: ModelClient | str) -> ModelClient:
    return model if isinstance(model, ModelClient) else ModelClient(model)


@dataclass
class ModelReply:
    """One model response: the assistant item to store, usage and metadata."""

    item: dict[str, Any]
    usage: AgentUsage
    metadata: ModelCallMetadata

    @property
    def text(self) -> str:
        content = self.item.get("content")
        return content if isinstance(content, str) else ""

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        calls = self.item.get("tool_calls")
        return list(calls) if isinstance(calls, list) else []


@dataclass
class ModelRequest:
    messages: Sequence[Mapping[str, Any]]
    settings: Mapping[str, Any]
    tools: Sequence[Mapping[str, Any]] = ()
    tool_choice: Any = None
    max_output_tokens: int | None = None
    on_text: Callable[[str], None] | None = None
    on_reasoning: Callable[[str], None] | None = None
    heartbeat: Callable[[], None] | None = None


async def stream_completion(client: ModelClient, request: ModelRequest) -> ModelReply:
    """Exactly one streamed `litellm.acompletion` call, one HTTP request: LiteLLM's own retries
    are off unless the settings set `max_retries` or `num_retries`, since the Step's attempts
    are the retries (docs/design/retries.md).

    Cancelling the awaiting coroutine stops the call: the stream is closed in `finally`, which
    closes the HTTP response, so the provider sees the client go away.
    """
    stream = await litellm().acompletion(**_completion_kwargs(client, request))
    reply = _ReplyBuilder(request)
    try:
        async for chunk in stream:
            reply.add(chunk)
    finally:
        await stream.aclose()
    return reply.build(client)


def _completion_kwargs(client: ModelClient, request: ModelRequest) -> dict[str, Any]:
    kwargs: dict[str, Any] = dict(request.settings)
    if "max_retries" not in kwargs and "num_retries" not in kwargs:
        kwargs["max_retries"] = 0
    kwargs.update(
        model=client.model,
        messages=list(request.messages),
        stream=True,
        stream_options={"include_usage": True},
    )
    for name, value in (
        ("api_base", client.api_base),
        ("api_key", client.api_key),
        ("timeout", client.timeout),
        ("max_tokens", request.max_output_tokens),
        ("tool_choice", request.tool_choice),
    ):
        if value is not None:
            kwargs[name] = value
    if request.tools:
        kwargs["tools"] = list(request.tools)
    return kwargs


class _ReplyBuilder:
    """Accumulates streamed chunks into one assistant item."""

    def __init__(self, request: ModelRequest) -> None:
        self.request = request
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.thinking: dict[int, dict[str, Any]] = {}
        self.usage = AgentUsage(model_calls=1)
        self.response_id: str | None = None
        self.response_model: str | None = None
        self.finish_reasons: list[str] = []
        self.last_heartbeat = time.monotonic()

    def add(self, chunk: Any) -> None:
        self.response_id = getattr(chunk, "id", None) or self.response_id
        self.response_model = getattr(chunk, "model", None) or self.response_model
        usage = getattr(chunk, "usage", None)
        if usage:
            self.usage = _usage(usage)
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "finish_reason", None):
                self.finish_reasons.append(str(choice.finish_reason))
            delta = getattr(choice, "delta", None)
            if delta is not None:
                self._add_delta(delta)
        self._beat()

    def _add_delta(self, delta: Any) -> None:
        reasoning = getattr(delta, "reasoning_content", None)
        if reasoning and self.request.on_reasoning:
            self.request.on_reasoning(reasoning)
        content = getattr(delta, "content", None)
        if content:
            self.text.append(content)
            if self.request.on_text:
                self.request.on_text(content)
        for block in getattr(delta, "thinking_blocks", None) or []:
            self._add_thinking(block)
        for part in getattr(delta, "tool_calls", None) or []:
            self._add_tool_call(part)

    def _add_thinking(self, block: Any) -> None:
        # Anthropic's signed thinking must go back with the tool results of the same turn.
        block = dict(block) if isinstance(block, Mapping) else {}
        index = int(block.pop("index", None) or 0)
        current = self.thinking.setdefault(index, {"type": block.get("type", "thinking")})
        if block.get("thinking"):
            current["thinking"] = current.get("thinking", "") + str(block["thinking"])
        for key in ("signature", "data"):
            if block.get(key):
                current[key] = block[key]

    def _add_tool_call(self, part: Any) -> None:
        index = getattr(part, "index", None) or 0
        call = self.calls.setdefault(
            index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
        )
        call["id"] = getattr(part, "id", None) or call["id"]
        function = getattr(part, "function", None)
        if function is not None:
            call["function"]["name"] += getattr(function, "name", None) or ""
            call["function"]["arguments"] += getattr(function, "arguments", None) or ""

    def _beat(self) -> None:
        if self.request.heartbeat and time.monotonic() - self.last_heartbeat > _HEARTBEAT_SECONDS:
            self.last_heartbeat = time.monotonic()
            self.request.heartbeat()

    def build(self, client: ModelClient) -> ModelReply:
        # Content may be null only beside tool calls; LiteLLM adapts "" for providers that
        # refuse empty text.
        text = "".join(self.text)
        item: dict[str, Any] = {
            "role": "assistant",
            "content": text or (None if self.calls else ""),
        }
        if self.calls:
            item["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        blocks = [self.thinking[i] for i in sorted(self.thinking)]
        if blocks:
            item["thinking_blocks"] = blocks
        model, provider = client.provider
        metadata = ModelCallMetadata(
            request_model=model,
            response_model=self.response_model,
            provider_name=provider,
            response_id=self.response_id,
            finish_reasons=tuple(self.finish_reasons),
        )
        return ModelReply(item=item, usage=self.usage, metadata=metadata)


def _usage(raw: Any) -> AgentUsage:
    prompt_details = getattr(raw, "prompt_tokens_details", None)
    completion_details = getattr(raw, "completion_tokens_details", None)
    return AgentUsage(
        model_calls=1,
        input_tokens=getattr(raw, "prompt_tokens", 0) or 0,
        output_tokens=getattr(raw, "completion_tokens", 0) or 0,
        cached_input_tokens=getattr(prompt_details, "cached_tokens", 0) or 0,
        reasoning_tokens=getattr(completion_details, "reasoning_tokens", 0) or 0,
    )


def count_tokens(
    model: str, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()
) -> int:
    """LiteLLM's token count for a request, or about four characters a token without one."""
    try:
        counted = litellm().token_counter(
            model=model, messages=list(messages), tools=list(tools) or None
        )
        return int(counted)
    except ImportError:
        raise
    except Exception:
        text = json.dumps(list(messages)) + json.dumps(list(tools))
        return len(text) // 4 + 1


def count_text_tokens(model: str, text: str) -> int:
    try:
        return int(litellm().token_counter(model=model, text=text))
    except ImportError:
        raise
    except Exception:
        return len(text) // 4 + 1
