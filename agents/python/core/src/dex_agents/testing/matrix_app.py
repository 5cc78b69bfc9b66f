"""What every adapter's matrix app shares (see `matrix`): the contract's four tools as plain
functions, which an adapter hands to its framework as they are or wrapped in its tool type
(`@tool`, `@function_tool`, ...), and the three flow types around a runner.

    from dex_agents.testing.matrix_app import MATRIX_TOOLS, matrix_flows

    agent = create_agent(model, [tool(f) for f in MATRIX_TOOLS], system_prompt="...")
    flows = matrix_flows(lambda framework_retries: LangGraphRunner(agent))

Each tool records its runs to the `ToolRunLog` at $TOOL_LOG, read when the tool runs.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from ..flow import AgentSessionFlow, AgentSessionOptions
from ..runner import AgentFrameworkRunner
from ..tool_context import current_tool_execution
from ..warm_states import DEFAULT_WARM_RUNS
from .matrix import CLIENT_RETRIES_FLOW_TYPE, DEADLINE_FLOW_TYPE, FLOW_TYPE, MATRIX_TOOL_POLICIES
from .tool_log import ToolRunLog

TOOL_LOG_ENV = "TOOL_LOG"
WARM_FLOW_TYPE = "MatrixWarm"
COLD_FLOW_TYPE = "MatrixCold"


def _log() -> ToolRunLog:
    return ToolRunLog(os.environ[TOOL_LOG_ENV])


def _key() -> str:
    return current_tool_execution().idempotency_key


async def get_weather(city: str) -> str:
    """The weather in a city."""
    _log().record("get_weather", city=city, phase="started")
    await asyncio.sleep(0.3)
    _log().record("get_weather", city=city, phase="finished")
    return f"Sunny in {city}"


def send_email(to: str, body: str) -> str:
    """Send an email."""
    _log().record("send_email", to=to, key=_key())
    return f"email sent to {to}"


def update_ticket(ticket_id: str, status: str) -> str:
    """Set a ticket's status."""
    _log().record("update_ticket", ticket_id=ticket_id, key=_key())
    return f"ticket {ticket_id} is {status}"


async def charge_card(amount: int, seconds: float) -> str:
    """Charge the customer's card."""
    _log().record("charge_card", phase="started", key=_key())
    await asyncio.sleep(seconds)
    _log().record("charge_card", phase="finished")
    return f"charged {amount}"


MATRIX_TOOLS: tuple[Callable[..., Any], ...] = (get_weather, send_email, update_ticket, charge_card)


def _plain(tool: str) -> str:
    return tool


def matrix_options(
    deadline: timedelta | None = None, model_name: Callable[[str], str] = _plain
) -> AgentSessionOptions:
    """The matrix's session options; `model_name(tool)`: the name the model sees for a tool,
    which keys its policy (a runner whose framework renames the tools, as the Claude Code CLI
    names an MCP server's `mcp__<server>__<tool>`)."""
    policies = {model_name(tool): policy for tool, policy in MATRIX_TOOL_POLICIES.items()}
    return AgentSessionOptions(tool_policies=policies, interrupt_deadline=deadline)


def matrix_flows(
    make_runner: Callable[[bool], AgentFrameworkRunner[Any]],
    warm: Callable[[int], AgentFrameworkRunner[Any]] | None = None,
    model_name: Callable[[str], str] = _plain,
) -> list[AgentSessionFlow]:
    """The three flow types of the matrix app; `make_runner(framework_retries)` builds the
    adapter's runner, keeping the framework's own model-call retries when asked. An adapter
    with a warm path (`dex_agents.warm_states`) gives `warm(warm_runs)`, its runner with that
    setting, and gets two more: `MatrixWarm` and `MatrixCold` (`testing.warm.WarmWorkerSuite`).
    `model_name`: as for `matrix_options`."""

    def options(deadline: timedelta | None = None) -> AgentSessionOptions:
        return matrix_options(deadline, model_name)

    flows = [
        AgentSessionFlow(make_runner(False), flow_type=FLOW_TYPE, options=options()),
        AgentSessionFlow(
            make_runner(False), flow_type=DEADLINE_FLOW_TYPE, options=options(timedelta(seconds=1))
        ),
        AgentSessionFlow(make_runner(True), flow_type=CLIENT_RETRIES_FLOW_TYPE, options=options()),
    ]
    if warm is not None:
        flows += [
            AgentSessionFlow(warm(DEFAULT_WARM_RUNS), flow_type=WARM_FLOW_TYPE, options=options()),
            AgentSessionFlow(warm(0), flow_type=COLD_FLOW_TYPE, options=options()),
        ]
    return flows
