"""How an ADK agent's Chat Completions request shows what the model saw: LiteLlm sends each
function response as the JSON of ADK's response dict, `{"result": <the tool's return value>}`
for a tool that returns plain text."""

from __future__ import annotations

import json

from dex_agents.testing.model_server import RecordedRequest
from dex_agents.testing.shared_worker import ModelView, chat_completions


class _AdkChatCompletions:
    def tool_outputs(self, request: RecordedRequest) -> dict[str, str]:
        return {
            call_id: _result(text)
            for call_id, text in chat_completions.tool_outputs(request).items()
        }

    def user_texts(self, request: RecordedRequest) -> list[str]:
        return chat_completions.user_texts(request)


def _result(text: str) -> str:
    response = json.loads(text)
    assert isinstance(response, dict) and set(response) == {"result"}, text
    result = response["result"]
    return result if isinstance(result, str) else json.dumps(result)


adk_chat_completions: ModelView = _AdkChatCompletions()
