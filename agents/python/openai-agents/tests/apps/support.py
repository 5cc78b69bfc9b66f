"""The Worker app of the integration tests: OpenAI Agents SDK agents on a scripted model.

A Worker process loads `tests.apps.support:flows`. The SDK reaches the scripted server through
its own OpenAI client (Responses API, the SDK's default); every tool logs each real run to the
ToolRunLog at $TOOL_LOG, so a test can count runs across Worker processes.
"""

from __future__ import annotations

import json
import os
from typing import Any

from agents import (
    Agent,
    GuardrailFunctionOutput,
    RunConfig,
    RunContextWrapper,
    function_tool,
    handoff,
    input_guardrail,
    set_tracing_disabled,
)
from agents.models.openai_provider import OpenAIProvider
from dex_agents import AgentSessionFlow, AgentSessionOptions, ToolExecutionError, ToolPolicy
from dex_agents.testing import MODEL_URL_ENV, ToolRunLog
from openai import AsyncOpenAI
from pydantic import BaseModel

from dex_agents_openai_agents import OpenAIAgentsRunner, RunContextRequest, current_tool_execution

set_tracing_disabled(True)
LOG = ToolRunLog(os.environ.get("TOOL_LOG", "/tmp/dex-agents-openai-tool-log.jsonl"))
MODEL = "gpt-4.1"


def _key() -> str:
    return current_tool_execution().idempotency_key


@function_tool
def get_weather(ctx: RunContextWrapper[dict[str, str]], city: str) -> str:
    """The weather in a city."""
    LOG.record("get_weather", city=city, user=ctx.context["user"])
    return json.dumps({"city": city, "forecast": "sunny"})


@function_tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    LOG.record("send_email", to=to, key=_key())
    return f"sent to {to}"


@function_tool
def lookup_order(order_id: str) -> str:
    """Look up an order."""
    LOG.record("lookup_order", order_id=order_id)
    if order_id == "missing":
        raise ToolExecutionError(f"order {order_id} does not exist")
    return f"order {order_id}: paid"


@function_tool
def refund(order_id: str) -> str:
    """Refund an order."""
    LOG.record("refund", order_id=order_id, key=_key())
    return f"refunded {order_id}"


@input_guardrail(run_in_parallel=False)  # blocking: a tripped turn makes no model call
def no_passwords(
    ctx: RunContextWrapper[Any], agent: Agent[Any], user_input: str | list[Any]
) -> GuardrailFunctionOutput:
    # The input is the whole replayed conversation; only the newest user message is checked.
    items = [user_input] if isinstance(user_input, str) else user_input
    users = [i for i in items if isinstance(i, str) or i.get("role") == "user"]
    text = json.dumps(users[-1] if users else "")
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered="password" in text)


class Ticket(BaseModel):
    category: str
    priority: int


billing = Agent(
    name="Billing",
    instructions="You handle refunds.",
    tools=[refund, lookup_order],
    model=MODEL,
)
support = Agent(
    name="Support",
    instructions="You are a support agent.",
    tools=[get_weather, send_email, lookup_order],
    handoffs=[handoff(billing)],
    input_guardrails=[no_passwords],
    model=MODEL,
)
classifier = Agent(name="Classifier", instructions="Classify.", output_type=Ticket, model=MODEL)

POLICIES = {
    "get_weather": ToolPolicy(effect="read"),
    "lookup_order": ToolPolicy(effect="read"),
    "refund": ToolPolicy(effect="idempotent_write"),
    "send_email": ToolPolicy(effect="non_idempotent_write"),
}


def _context(request: RunContextRequest) -> dict[str, str]:
    return {"user": "ada", "session": request.flow_id}


def _run_config() -> RunConfig:
    client = AsyncOpenAI(base_url=os.environ[MODEL_URL_ENV], api_key="test", max_retries=0)
    return RunConfig(model_provider=OpenAIProvider(openai_client=client))


def _options() -> AgentSessionOptions:
    return AgentSessionOptions(tool_policies=POLICIES)


def flows() -> list[AgentSessionFlow]:
    run_config = _run_config()
    return [
        AgentSessionFlow(
            OpenAIAgentsRunner(support, context_factory=_context, run_config=run_config),
            flow_type="SupportAgent",
            options=_options(),
        ),
        AgentSessionFlow(
            OpenAIAgentsRunner(classifier, context_factory=_context, run_config=run_config),
            flow_type="Classifier",
        ),
    ]
