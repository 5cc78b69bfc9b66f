"""What a fresh Worker loads before it reports ready, so the first model call costs what later
ones cost. For a LiteLlm model: LiteLLM itself (imported the way ADK imports it), its bundled
model cost map instead of a network fetch, the model's tokenizer and the OpenAI SDK's
resources (`dex_agents.stepwise.model.warm_up_litellm`), then one turn through ADK's own run
loop whose model answers from LiteLLM's `mock_response`: the modules ADK and LiteLLM import on
a first call are loaded, and no model is called, nothing logged, nothing fetched.

The warm-up turn runs a copy of the gated agent without what is the application's own code or
reaches out: no callbacks, no plugins, no toolsets (an MCP toolset would connect), a fixed
instruction; its session is a throwaway one in memory.

Importing this module has LiteLLM use its local cost map (unless the application set
LITELLM_LOCAL_MODEL_COST_MAP itself): ADK imports LiteLLM only on the first model call, after
the adapter is imported.
"""

from __future__ import annotations

import asyncio
from contextlib import aclosing

from dex_agents.stepwise.model import use_local_cost_map, warm_up_litellm
from google.adk.agents import LlmAgent, RunConfig
from google.adk.agents.run_config import StreamingMode
from google.adk.apps import App
from google.adk.models import lite_llm
from google.adk.runners import Runner
from google.adk.tools.base_toolset import BaseToolset
from google.genai import types

from ._compat import import_litellm_as_adk_does, with_request_args
from .session_service import USER_ID, step_session

use_local_cost_map()

WARM_UP_TEXT = "warm-up"


async def warm_up_app(app: App, agent: LlmAgent) -> None:
    """Loads what the first model call of `agent` (the root agent of `app`) would; a model
    other than LiteLlm has nothing to load."""
    model = agent.canonical_model
    if not isinstance(model, lite_llm.LiteLlm):
        return
    await asyncio.to_thread(_import_litellm_as_adk_does)
    await warm_up_litellm(model.model)
    await _mocked_turn(app, agent, model)


def _import_litellm_as_adk_does() -> None:
    """ADK's own import of LiteLLM (in production mode: no `.env` loaded), which its first
    call would do."""
    import_litellm_as_adk_does()


async def _mocked_turn(app: App, agent: LlmAgent, model: lite_llm.LiteLlm) -> None:
    mocked = with_request_args(model, {"mock_response": WARM_UP_TEXT, "no-log": True})
    quiet = agent.clone(
        update={
            "model": mocked,
            "instruction": WARM_UP_TEXT,
            "tools": [t for t in agent.tools if not isinstance(t, BaseToolset)],
            "before_model_callback": None,
            "after_model_callback": None,
            "before_agent_callback": None,
            "after_agent_callback": None,
            "before_tool_callback": None,
            "after_tool_callback": None,
            "on_model_error_callback": None,
            "on_tool_error_callback": None,
            "sub_agents": [],
        }
    )
    warm_app = app.model_copy(update={"root_agent": quiet, "plugins": []})
    service = await step_session(warm_app.name, WARM_UP_TEXT, [])
    runner = Runner(app=warm_app, session_service=service, auto_create_session=False)
    stream = runner.run_async(
        user_id=USER_ID,
        session_id=service.session.id,
        new_message=types.Content(role="user", parts=[types.Part(text=WARM_UP_TEXT)]),
        run_config=RunConfig(streaming_mode=StreamingMode.SSE),
    )
    async with aclosing(stream) as events:
        async for _ in events:
            pass
