"""The matrix app (`dex_agents.testing.matrix`) on the Claude Agent SDK: the Claude Code CLI
against the scripted Anthropic server at $DEX_AGENTS_SCRIPTED_MODEL_URL, with the matrix's four
tools as the in-process SDK MCP server `matrix` (the model sees `mcp__matrix__<tool>`, so the
matrix's tool policies are keyed by those names). `get_weather` is read-only by its annotations
and runs inside the CLI run; the writes run in tool Steps."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, ToolAnnotations, create_sdk_mcp_server, tool
from dex_agents import AgentSessionFlow
from dex_agents.testing import MODEL_URL_ENV
from dex_agents.testing.claude_matrix import SERVER_KEY, model_name
from dex_agents.testing.matrix_app import (
    charge_card,
    get_weather,
    matrix_flows,
    send_email,
    update_ticket,
)

from dex_agents_claude_agent_sdk import ClaudeAgentRunner


def _text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


@tool("get_weather", "The weather in a city.", {"city": str}, ToolAnnotations(readOnlyHint=True))
async def weather(args: dict[str, Any]) -> dict[str, Any]:
    return _text(await get_weather(args["city"]))


@tool("send_email", "Send an email.", {"to": str, "body": str})
async def email(args: dict[str, Any]) -> dict[str, Any]:
    return _text(send_email(args["to"], args["body"]))


@tool(
    "update_ticket",
    "Set a ticket's status.",
    {"ticket_id": str, "status": str},
    ToolAnnotations(idempotentHint=True),
)
async def ticket(args: dict[str, Any]) -> dict[str, Any]:
    return _text(update_ticket(args["ticket_id"], args["status"]))


@tool("charge_card", "Charge the customer's card.", {"amount": int, "seconds": float})
async def charge(args: dict[str, Any]) -> dict[str, Any]:
    return _text(await charge_card(args["amount"], args["seconds"]))


TOOLS = [weather, email, ticket, charge]


def options() -> ClaudeAgentOptions:
    return ClaudeAgentOptions(
        model="claude-sonnet-4-5",
        system_prompt="You help customers.",
        cwd=tempfile.gettempdir(),
        tools=[],
        mcp_servers={SERVER_KEY: create_sdk_mcp_server(SERVER_KEY, tools=TOOLS)},
        allowed_tools=[model_name(t.name) for t in TOOLS],
        max_turns=10,
        env={
            "ANTHROPIC_BASE_URL": os.environ[MODEL_URL_ENV],
            "ANTHROPIC_AUTH_TOKEN": "scripted",
            "ANTHROPIC_API_KEY": "",
        },
    )


def flows() -> list[AgentSessionFlow]:
    return matrix_flows(
        lambda framework_retries: ClaudeAgentRunner(
            options=options(), framework_retries=framework_retries
        ),
        model_name=model_name,
    )
