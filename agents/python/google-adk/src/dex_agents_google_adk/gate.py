"""A copy of an ADK agent whose every tool asks for a confirmation instead of running.

ADK runs all the function calls of one model response in the same step, so an ungated tool
would run inside RunModel. The copy's tools are `GatedTool`s: the first time ADK calls one it
calls `tool_context.request_confirmation()` and returns without running anything, which pauses
a resumable invocation after that one model call. The confirmation sent on resume carries the
call's recorded result in its payload, and the gate returns that result instead of running the
tool again. The real tool runs in the tool Step (`runner.execute_deferred_tool_call`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dex_agents.errors import DexAgentsError
from google.adk.agents import BaseAgent, LlmAgent
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

PAYLOAD_RESULT = "dex_agents_result"
"""The key of a confirmation payload that holds the call's recorded, model-visible result."""

PENDING = {"status": "pending", "detail": "this tool call runs in its own durable Step"}


class UnsupportedAgentError(DexAgentsError, TypeError):
    """The agent is not one the ADK runner can drive one model call per Step."""


class GatedTool(BaseTool):
    """`tool` as the model sees it; calling it asks for a confirmation, and a confirmation
    returns the recorded result it carries."""

    def __init__(self, tool: BaseTool) -> None:
        super().__init__(
            name=tool.name,
            description=tool.description,
            custom_metadata=tool.custom_metadata,
        )
        self.tool = tool

    def _get_declaration(self) -> types.FunctionDeclaration | None:
        return self.tool._get_declaration()

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        confirmation = tool_context.tool_confirmation
        if confirmation is None:
            tool_context.request_confirmation(hint=f"dex-agents runs {self.name} in a tool Step")
            tool_context.actions.skip_summarization = True
            return PENDING
        payload = confirmation.payload
        if not isinstance(payload, dict) or PAYLOAD_RESULT not in payload:
            raise UnsupportedAgentError(
                f"the confirmation of {self.name!r} carries no recorded result: only the "
                "dex-agents runner may confirm the calls of a gated agent"
            )
        return payload[PAYLOAD_RESULT]


def as_tool(tool: Any) -> BaseTool:
    """A tool union of `LlmAgent.tools` as one BaseTool (a function becomes a FunctionTool)."""
    if isinstance(tool, BaseTool):
        return tool
    if isinstance(tool, BaseToolset):
        raise UnsupportedAgentError(
            f"toolset {type(tool).__name__} lists its tools at run time; the ADK runner gates "
            "tools it knows when it is built: pass the toolset's tools to the agent instead"
        )
    if callable(tool):
        return FunctionTool(tool)
    raise UnsupportedAgentError(f"unknown tool {tool!r}")


def tools_of(agent: LlmAgent) -> dict[str, BaseTool]:
    """The agent's tools by name, as ADK would call them."""
    return {t.name: t for t in map(as_tool, agent.tools)}


def _refuse(agent: BaseAgent) -> LlmAgent:
    if not isinstance(agent, LlmAgent):
        raise UnsupportedAgentError(
            f"the ADK runner drives an LlmAgent; {type(agent).__name__} runs its own loop"
        )
    if agent.sub_agents:
        raise UnsupportedAgentError(
            f"agent {agent.name!r} has sub-agents: transfer_to_agent would run another "
            "agent's model calls inside the same Step; give it the sub-agents as AgentTools "
            "(google.adk.tools.AgentTool), which run in tool Steps"
        )
    return agent


def gated_agent(agent: BaseAgent) -> tuple[LlmAgent, dict[str, BaseTool]]:
    """A copy of `agent` whose tools are gated, and its real tools by name; `agent` is not
    changed."""
    llm_agent = _refuse(agent)
    tools = tools_of(llm_agent)
    gated: list[Callable[..., Any] | BaseTool | BaseToolset] = [
        GatedTool(t) for t in tools.values()
    ]
    return llm_agent.clone(update={"tools": gated}), tools
