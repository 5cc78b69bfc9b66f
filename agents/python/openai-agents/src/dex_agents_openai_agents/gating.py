"""Gated copies of the application's agent graph.

Every function tool of every agent reachable through handoffs gets a copy whose `needs_approval`
is always true, so the SDK stops the run after the model call that asks for it. When the run
resumes with the call approved, the copy's `on_invoke_tool` answers with the recorded
result; the real tool runs only in its own tool Step. The application's agents are never changed.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import OrderedDict, deque
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from agents import Agent, FunctionTool, Handoff, RunContextWrapper
from agents.tool_context import ToolContext

from . import _compat
from .recorded import recorded_result

KEPT_TOOL_SETS = 16
"""How many tool sources' tool sets a runner keeps a gated graph for (they seldom change)."""


async def answer_with_recorded_result(ctx: ToolContext[Any], arguments: str) -> str:
    return recorded_result(ctx.tool_call_id)


def gate_function_tool(tool: FunctionTool) -> FunctionTool:
    """A copy of `tool` that always needs approval and never runs the real function.

    Tool guardrails, the timeout and the output schema belong to the real call, which runs in
    the tool Step; the copy returns model-visible text.
    """
    gated = copy.copy(tool)
    gated.on_invoke_tool = answer_with_recorded_result
    gated.needs_approval = True
    gated.tool_input_guardrails = None
    gated.tool_output_guardrails = None
    gated.timeout_seconds = None
    gated.output_json_schema = None
    _compat.drop_output_type_adapter(gated)
    gated.custom_data_extractor = None
    return gated


def _handoff_targets(agent: Agent[Any]) -> Iterator[Agent[Any]]:
    for item in agent.handoffs:
        if isinstance(item, Agent):
            yield item
        elif isinstance(item, Handoff):
            target = _compat.handoff_target(item)
            if target is not None:
                yield target


def graph_agents(root: Agent[Any]) -> list[Agent[Any]]:
    """The root and every agent reachable from it through handoffs."""
    seen: dict[int, Agent[Any]] = {}
    queue: deque[Agent[Any]] = deque([root])
    while queue:
        agent = queue.popleft()
        if id(agent) not in seen:
            seen[id(agent)] = agent
            queue.extend(_handoff_targets(agent))
    return list(seen.values())


class GatedAgentGraph:
    """The gated copy of an agent and of every agent it can hand off to.

    Nothing of a graph changes once it is built: the SDK refuses runs whose agent's tools
    change while other runs use the agent, and one Worker runs the model Steps of many
    sessions at once. A root that also offers a tool source's tools, or a graph whose agents
    offer the session's built-ins, is a graph of its own (`variant`), built once per tool set;
    a planning turn's root offers only write_todos (`planning_root`).

    `mcp_tools` are the listed tools of each agent's MCP servers, by agent name: each copy
    offers its agent's, gated, and has no MCP servers (the SDK would list and call them inside
    the model Step)."""

    def __init__(
        self,
        root: Agent[Any],
        root_extra_tools: Sequence[FunctionTool] = (),
        shared_tools: Sequence[FunctionTool] = (),
        mcp_tools: Mapping[str, Sequence[FunctionTool]] | None = None,
    ) -> None:
        self._original_root = root
        self.mcp_tools: Mapping[str, Sequence[FunctionTool]] = mcp_tools or {}
        self._root_extra_tools = list(root_extra_tools)
        self._shared_tools = list(shared_tools)
        self._gated_by_original: dict[int, Agent[Any]] = {}
        self._originals_by_name: dict[str, Agent[Any]] = {}
        # Keeps the originals alive so their ids stay unique while the graph lives.
        self._originals: list[Agent[Any]] = []
        self.root = self._gate_graph(root)
        self._with_tools: OrderedDict[tuple[tuple[int, ...], ...], GatedAgentGraph] = OrderedDict()
        self._planning_roots: dict[tuple[int, ...], Agent[Any]] = {}

    def _gate_graph(self, root: Agent[Any]) -> Agent[Any]:
        queue: deque[Agent[Any]] = deque([root])
        fresh: list[Agent[Any]] = []
        while queue:
            original = queue.popleft()
            if id(original) in self._gated_by_original:
                continue
            extra = self._root_extra_tools if original is self._original_root else []
            mcp = self.mcp_tools.get(original.name, ())
            self._gated_by_original[id(original)] = self._clone(
                original, self._shared_tools, extra, mcp
            )
            self._originals.append(original)
            self._originals_by_name.setdefault(original.name, original)
            fresh.append(original)
            queue.extend(_handoff_targets(original))
        # Handoffs are rewired once every agent has its copy, so cycles resolve.
        for original in fresh:
            gated = self._gated_by_original[id(original)]
            gated.handoffs = [self._gate_handoff(item) for item in original.handoffs]
        return self._gated_by_original[id(root)]

    @staticmethod
    def _clone(
        agent: Agent[Any],
        shared_tools: Sequence[FunctionTool],
        extra_tools: Sequence[FunctionTool],
        mcp_tools: Sequence[FunctionTool],
    ) -> Agent[Any]:
        """The gated copy: its MCP servers' tools and its own (as the SDK orders them), less
        those a shared tool (a built-in) replaces, then the shared tools and the extra ones."""
        replaced = {tool.name for tool in shared_tools}
        tools = [
            gate_function_tool(tool) if isinstance(tool, FunctionTool) else tool
            for tool in [*mcp_tools, *agent.tools]
            if getattr(tool, "name", None) not in replaced
        ]
        return agent.clone(tools=[*tools, *shared_tools, *extra_tools], handoffs=[], mcp_servers=[])

    def _gated(self, agent: Agent[Any]) -> Agent[Any]:
        gated = self._gated_by_original.get(id(agent))
        if gated is None:
            # A handoff whose target was not reachable when the graph was built.
            gated = self._gate_graph(agent)
        return gated

    def _gate_handoff(self, item: Agent[Any] | Handoff[Any, Any]) -> Any:
        if isinstance(item, Agent):
            return self._gated(item)
        original_invoke = item.on_invoke_handoff

        async def invoke(ctx: RunContextWrapper[Any], input_json: str) -> Agent[Any]:
            target = await original_invoke(ctx, input_json)
            return self._gated(target)

        gated_handoff = dataclasses.replace(item, on_invoke_handoff=invoke)
        target = _compat.handoff_target(item)
        if target is not None:
            _compat.set_handoff_target(gated_handoff, self._gated(target))
        return gated_handoff

    def variant(
        self, root_tools: Sequence[FunctionTool], shared_tools: Sequence[FunctionTool] = ()
    ) -> GatedAgentGraph:
        """This graph, or the graph whose root also offers `root_tools` (a tool source's
        function tools) and whose every agent offers `shared_tools` (the session's built-ins)
        in place of its own tools of those names. Built on first use and kept (the last
        `KEPT_TOOL_SETS` tool sets): a run never changes an agent other runs may be using."""
        if not root_tools and not shared_tools:
            return self
        key = (tuple(id(tool) for tool in root_tools), tuple(id(tool) for tool in shared_tools))
        graph = self._with_tools.get(key)
        if graph is None:
            graph = GatedAgentGraph(self._original_root, root_tools, shared_tools, self.mcp_tools)
            self._with_tools[key] = graph
            while len(self._with_tools) > KEPT_TOOL_SETS:
                self._with_tools.popitem(last=False)
        self._with_tools.move_to_end(key)
        return graph

    def planning_root(self, tools: Sequence[FunctionTool]) -> Agent[Any]:
        """The root of a planning turn: the gated root with only `tools` (write_todos or
        nothing) and no handoffs, kept once built."""
        key = tuple(id(tool) for tool in tools)
        root = self._planning_roots.get(key)
        if root is None:
            root = self.root.clone(tools=list(tools), handoffs=[])
            self._planning_roots[key] = root
        return root

    def root_tool_names(self) -> set[str]:
        """The names of the root agent's own tools and of its MCP servers' tools."""
        tools = [*self._original_root.tools, *self.mcp_tools.get(self._original_root.name, ())]
        return {name for tool in tools if (name := getattr(tool, "name", None))}

    def original_function_tool(
        self, agent_name: str, tool_name: str
    ) -> tuple[Agent[Any], FunctionTool] | None:
        """The application's own agent and tool behind a gated call."""
        agent = self._originals_by_name.get(agent_name)
        if agent is None:
            return None
        for tool in [*agent.tools, *self.mcp_tools.get(agent_name, ())]:
            if isinstance(tool, FunctionTool) and tool.name == tool_name:
                return agent, tool
        return None
