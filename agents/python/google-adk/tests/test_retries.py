"""The runner's copy of the agent's model sends each request once; the agent's own model keeps
its retries, and a model class whose retries the runner cannot reach is refused. (The matrix
checks the LiteLlm copy against the scripted server: one request per RunModel attempt.)"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import pytest
from google.adk.agents import LlmAgent
from google.adk.models import BaseLlm, Gemini, LlmRequest, LlmResponse
from google.adk.models.lite_llm import LiteLlm
from google.genai import types

from dex_agents_google_adk import AdkRunner, UnsupportedAgentError
from dex_agents_google_adk.retries import without_client_retries


class EchoLlm(BaseLlm):
    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        yield LlmResponse()


def test_a_lite_llm_copy_sends_each_request_once_and_the_original_keeps_its_arguments() -> None:
    model = LiteLlm(model="openai/gpt-test", api_base="http://127.0.0.1:9", max_retries=5)
    copy = without_client_retries(model)
    assert isinstance(copy, LiteLlm)
    assert copy._additional_args["max_retries"] == 0
    assert copy._additional_args["num_retries"] == 0
    assert copy._additional_args["api_base"] == "http://127.0.0.1:9"
    assert model._additional_args["max_retries"] == 5


def test_a_gemini_copy_makes_one_attempt() -> None:
    retries = types.HttpRetryOptions(attempts=4)
    model = Gemini(model="gemini-2.5-flash", retry_options=retries)
    copy = without_client_retries(model)
    assert isinstance(copy, Gemini)
    assert copy.retry_options == types.HttpRetryOptions(attempts=1)
    assert model.retry_options == retries


def test_another_model_is_refused_unless_the_framework_keeps_its_retries() -> None:
    agent = LlmAgent(name="helper", model=EchoLlm(model="echo"))
    with pytest.raises(UnsupportedAgentError, match="framework_retries=True"):
        AdkRunner(agent)
    assert AdkRunner(agent, framework_retries=True).agent is agent
