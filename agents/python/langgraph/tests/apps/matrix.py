"""The matrix app (dex_agents.testing.matrix): one LangChain `create_agent` agent with the
contract's four tools (dex_agents.testing.matrix_app), on ChatOpenAI against the scripted Chat
Completions server; the ChatOpenAI client keeps its default retries."""

from __future__ import annotations

import os

from dex_agents.testing import MODEL_URL_ENV
from dex_agents.testing.matrix_app import MATRIX_TOOLS, matrix_flows
from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from dex_agents_langgraph import LangGraphRunner

model = ChatOpenAI(
    model="gpt-4.1",
    base_url=os.environ[MODEL_URL_ENV],
    api_key="test",  # type: ignore[arg-type]
    streaming=True,
    stream_usage=True,
)
agent = create_agent(
    model,
    [tool(f) for f in MATRIX_TOOLS],
    system_prompt="You help customers.",
)

flows = matrix_flows(
    lambda framework_retries: LangGraphRunner(agent, framework_retries=framework_retries)
)
