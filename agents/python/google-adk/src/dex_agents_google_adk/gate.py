"""A copy of an ADK agent tree whose every tool asks for a confirmation instead of running.

ADK runs all the function calls of one model response in the same step, so an ungated tool
would run inside RunModel. The copy's tools are `GatedTool`s: the first time ADK calls one it
calls `tool_context.request_confirmation()` and returns without running anything, which pauses
a resumable invocation after that one model call. The confirmation sent on resume carries the
call's recorded result in its payload, and the gate returns that result instead of running the
tool again. The real tool runs in the tool Step (`runner.execute_deferred_tool_call`).

A toolset (an MCP toolset, ...) lists its tools at run time: the copy holds a `GatedToolset`
whose listing is the real toolset's, each tool gated the same way.

The tree is copied whole: every `LlmAgent` (the root, its sub-agents, the children of the
workflow agents `SequentialAgent`, `ParallelAgent` and `LoopAgent`) gets gated tools, and the
runner keeps each agent's real tools by the agent's name, since a call's event names the agent
that made it. Tool policies name tools, so a plain tool's name must be unique in the tree; a
custom `BaseAgent` is refused (its own loop keeps no state ADK could resume it from). Each
`LlmAgent` copy is of a subclass of its agent's class that runs a tool's transfer when the
call resumes (`_compat.run_transfers_of_resumed_calls`, `transfers.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dex_agents.errors import DexAgentsError
from google.adk.agents import BaseAgent, LlmAgent, LoopAgent, ParallelAgent, SequentialAgent
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.models.llm_request import LlmRequest
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from ._compat import declaration_of, run_transfers_of_resumed_calls
from .tool_actions import PAYLOAD_ACTIONS, ToolActions
from .transfers import pending_transfer, transfer_to_resume

PAYLOAD_RESULT = "dex_agents_result"
"""The key of a confirmation payload that holds the call's recorded, model-visible result."""

PENDING = {"status": "pending", "detail": "this tool call runs in its own durable Step"}


class UnsupportedAgentError(DexAgentsError, TypeError):
    """The agent is not one the ADK runner can drive one model call per Step."""


class GatedTool(BaseTool):
    """`tool` as the model sees it; calling it asks for a confirmation, and a confirmation
    returns the recorded result it carries, with the tool's carried actions (its state
    delta, escalate, transfer, ...: `tool_actions.py`) set on the call's own context."""

    def __init__(self, tool: BaseTool) -> None:
        super().__init__(
            name=tool.name,
            description=tool.description,
            custom_metadata=tool.custom_metadata,
        )
        self.tool = tool

    def _get_declaration(self) -> types.FunctionDeclaration | None:
        return declaration_of(self.tool)

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
        carried = payload.get(PAYLOAD_ACTIONS)
        if isinstance(carried, str):
            await ToolActions.from_json(carried).apply(tool_context)
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


WORKFLOW_AGENTS = (SequentialAgent, ParallelAgent, LoopAgent)
"""The workflow agents the runner drives: ADK resumes each from its agent state."""


@dataclass(frozen=True)
class GatedTree:
    """The runner's copy of the agent tree and the real tools of each of its LlmAgents."""

    root: BaseAgent
    tools: dict[str, RealTools]
    """Each LlmAgent's real tools, by the agent's name."""

    def agent_tools(self, agent_name: str) -> RealTools:
        tools = self.tools.get(agent_name)
        if tools is None:
            raise UnsupportedAgentError(
                f"no LlmAgent named {agent_name!r} in the agent tree: the agents' names "
                "must stay the same while a turn runs"
            )
        return tools


ModelCopy = Callable[[LlmAgent], Any]
"""The model field of an LlmAgent's copy (the agent's own, or one without client retries)."""


@dataclass
class _TreeCopy:
    extra_tools: Callable[[], Sequence[BaseTool]]
    model: ModelCopy
    tools: dict[str, RealTools] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)
    """The agent that has each plain tool, by the tool's name."""
    agents: set[str] = field(default_factory=set)

    def copy(self, agent: BaseAgent, under_llm_agent: bool = False) -> BaseAgent:
        if not isinstance(agent, (LlmAgent, *WORKFLOW_AGENTS)):
            raise UnsupportedAgentError(
                f"agent {agent.name!r} is a {type(agent).__name__}: the ADK runner drives "
                "LlmAgent, SequentialAgent, ParallelAgent and LoopAgent, which ADK resumes "
                "from the session's events; a custom agent's own loop cannot be resumed "
                "between Steps"
            )
        if agent.name in self.agents:
            raise UnsupportedAgentError(
                f"two agents of the tree are named {agent.name!r}: ADK finds agents by name"
            )
        self.agents.add(agent.name)
        is_llm = isinstance(agent, LlmAgent)
        children = [self.copy(a, under_llm_agent or is_llm) for a in agent.sub_agents]
        if not isinstance(agent, LlmAgent):
            return agent.clone(update={"sub_agents": children})
        real = real_tools(agent)
        for name in real.tools:
            other = self.owners.setdefault(name, agent.name)
            if other != agent.name:
                raise UnsupportedAgentError(
                    f"agents {other!r} and {agent.name!r} both have a tool named {name!r}: "
                    "tool policies, approvals and records name a tool, so a tool name must "
                    "be unique in the agent tree; rename one of them"
                )
        self.tools[agent.name] = real
        gated = [_gate(t) for t in agent.tools]
        update: dict[str, Any] = {"tools": [*gated, *self.extra_tools()], "sub_agents": children}
        if agent.model or not under_llm_agent:
            # An agent without a model of its own inherits its LlmAgent ancestor's copy;
            # without one, its copy is of ADK's default model.
            update["model"] = self.model(agent)
        gated_agent = agent.clone(update=update)
        # A tool's transfer, carried from its tool Step, takes effect when the call resumes.
        run_transfers_of_resumed_calls(gated_agent, pending_transfer, transfer_to_resume)
        return gated_agent


def gated_tree(
    agent: BaseAgent, extra_tools: Callable[[], Sequence[BaseTool]], model: ModelCopy
) -> GatedTree:
    """A copy of the agent tree whose LlmAgents' tools and toolsets are gated (each also
    gets `extra_tools()`) and whose models are `model(agent)` (an agent without a model of
    its own keeps inheriting its ancestor's); `agent` is not changed. Agent names must be
    unique in the tree, as must the plain tools' names (a policy names its tool)."""
    copy = _TreeCopy(extra_tools, model)
    root = copy.copy(agent)
    return GatedTree(root, copy.tools)


def first_llm_agent(agent: BaseAgent) -> LlmAgent:
    """The tree's first LlmAgent, depth first (the root when it is one)."""
    if isinstance(agent, LlmAgent):
        return agent
    for child in agent.sub_agents:
        try:
            return first_llm_agent(child)
        except UnsupportedAgentError:
            continue
    raise UnsupportedAgentError(f"agent {agent.name!r} has no LlmAgent in its tree")
