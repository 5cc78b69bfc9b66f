"""RunModel's attempts are the only retries of a model call: the agent's model is copied
without its client's own retries."""

from __future__ import annotations

from google.adk.agents import LlmAgent
from google.adk.models import BaseLlm, Gemini
from google.adk.models.lite_llm import LiteLlm
from google.genai import types

from ._compat import with_request_args
from .gate import UnsupportedAgentError


def without_client_retries(model: BaseLlm) -> BaseLlm:
    """A copy of `model` that sends each request once."""
    if isinstance(model, LiteLlm):
        return with_request_args(model, {"max_retries": 0, "num_retries": 0})
    if isinstance(model, Gemini):
        return model.model_copy(update={"retry_options": types.HttpRetryOptions(attempts=1)})
    raise UnsupportedAgentError(
        f"the ADK runner cannot turn off the retries of a {type(model).__name__} model; give "
        "it no retries of its own and pass AdkRunner(..., framework_retries=True)"
    )


def agent_without_client_retries(agent: LlmAgent) -> LlmAgent:
    return agent.clone(update={"model": without_client_retries(agent.canonical_model)})
