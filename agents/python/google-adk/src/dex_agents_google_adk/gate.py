"""A copy of an ADK agent whose every tool asks for a confirmation instead of running.

ADK runs all the function calls of one model response in the same step, so an ungated tool
would run inside RunModel. The copy's tools are `GatedTool`s: the first time ADK calls one it
calls `tool_context.request_confirmation()` and returns without running anything, which pauses
a resumable invocation after that one model call. The confirmation sent on resume carries the
call's recorded result in its payload, and the gate returns that result instead of running the
tool again. The real tool runs in the tool Step (`runner.execute_deferred_tool_call`).

A toolset (an MCP toolset, ...) lists its tools at run time: the copy holds a `GatedToolset`
whose listing is the real toolset's, each tool gated the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dex_agents.errors import DexAgentsError
from google.adk.agents import BaseAgent, LlmAgent
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.models.llm_request import LlmRequest
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


class GatedToolset(BaseToolset):
    """`toolset` as the model sees it: its tools as its own listing gives them (filter and
    name prefix applied), each a `GatedTool`. It caches nothing itself, so the real
    toolset's own per-invocation cache is the only one."""

    def __init__(self, toolset: BaseToolset) -> None:
        super().__init__()
        self._use_invocation_cache = False
        self.toolset = toolset

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        tools = await self.toolset.get_tools_with_prefix(readonly_context)
        return [GatedTool(t) for t in tools]

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        await self.toolset.process_llm_request(tool_context=tool_context, llm_request=llm_request)

    async def close(self) -> None:
        await self.toolset.close()


@dataclass(frozen=True)
class RealTools:
    """The agent's real tools: the plain ones by name, and its toolsets, listed when a
    Step needs them."""

    tools: dict[str, BaseTool]
    toolsets: Sequence[BaseToolset]

    async def find(self, name: str, context: ReadonlyContext) -> BaseTool | None:
        """The tool the model calls `name`: a plain tool, else the first toolset tool of
        that name in the toolsets' listing for `context` (None when nothing has it)."""
        tool = self.tools.get(name)
        if tool is not None or not self.toolsets:
            return tool
        for toolset in self.toolsets:
            for listed in await toolset.get_tools_with_prefix(context):
                if listed.name == name:
                    return listed
        return None


def as_tool(tool: Any) -> BaseTool:
    """A tool union of `LlmAgent.tools` that is not a toolset as one BaseTool (a function
    becomes a FunctionTool)."""
    if isinstance(tool, BaseTool):
        return tool
    if callable(tool):
        return FunctionTool(tool)
    raise UnsupportedAgentError(f"unknown tool {tool!r}")


def real_tools(agent: LlmAgent) -> RealTools:
    """The agent's plain tools by name, as ADK would call them, and its toolsets."""
    toolsets = [t for t in agent.tools if isinstance(t, BaseToolset)]
    plain = [as_tool(t) for t in agent.tools if not isinstance(t, BaseToolset)]
    return RealTools({t.name: t for t in plain}, toolsets)


def _gate(tool: Any) -> BaseTool | BaseToolset:
    if isinstance(tool, BaseToolset):
        return GatedToolset(tool)
    return GatedTool(as_tool(tool))


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


def gated_agent(agent: BaseAgent) -> tuple[LlmAgent, RealTools]:
    """A copy of `agent` whose tools and toolsets are gated, and its real tools; `agent` is
    not changed."""
    llm_agent = _refuse(agent)
    gated: list[Callable[..., Any] | BaseTool | BaseToolset] = [_gate(t) for t in llm_agent.tools]
    return llm_agent.clone(update={"tools": gated}), real_tools(llm_agent)
