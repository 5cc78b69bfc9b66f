"""How an ADK agent's Chat Completions request shows what the model saw: LiteLlm sends each
function response as the JSON of ADK's response dict, `{"result": <the tool's return value>}`
for a tool that returns plain text, and ADK adds its own identity line to the system
instruction ("You are an agent. Your internal name is ..."), after the agent's instruction."""

from __future__ import annotations

import json
import re

from dex_agents.testing.model_server import RecordedRequest
from dex_agents.testing.shared_worker import FeatureView, chat_completions

_IDENTITY = re.compile(
    r'\n\nYou are an agent\. Your internal name is "[^"]*"\.'
    r'( The description about you is "[^"]*"\.)?$'
)


class _AdkChatCompletions:
    def tool_outputs(self, request: RecordedRequest) -> dict[str, str]:
        return {
            call_id: _result(text)
            for call_id, text in chat_completions.tool_outputs(request).items()
        }

    def user_texts(self, request: RecordedRequest) -> list[str]:
        return chat_completions.user_texts(request)

    def model(self, request: RecordedRequest) -> str:
        return chat_completions.model(request)

    def instructions(self, request: RecordedRequest) -> str:
        """The agent's instruction: the system instruction without ADK's identity line,
        which must end it."""
        text = chat_completions.instructions(request)
        identity = _IDENTITY.search(text)
        assert identity is not None, f"no ADK identity line in {text!r}"
        return text[: identity.start()]

    def tool_names(self, request: RecordedRequest) -> list[str]:
        return chat_completions.tool_names(request)

    def tool_call_ids(self, request: RecordedRequest) -> list[str]:
        return chat_completions.tool_call_ids(request)

    def first_input_text(self, request: RecordedRequest) -> str:
        return chat_completions.first_input_text(request)


def _result(text: str) -> str:
    response = json.loads(text)
    assert isinstance(response, dict) and set(response) == {"result"}, text
    result = response["result"]
    return result if isinstance(result, str) else json.dumps(result)


adk_chat_completions: FeatureView = _AdkChatCompletions()
