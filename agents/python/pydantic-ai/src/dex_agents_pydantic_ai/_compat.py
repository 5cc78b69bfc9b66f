"""Every part of Pydantic AI that is not its public API, in one place.

Warm runs (warm.py) resume a run that ended at its deferred tool calls: the node Pydantic AI
builds for `deferred_tool_results` (`CallToolsNode`), whether the run counted a retry, the
per-run state a new run starts afresh and the tools a new run prepares at its first node are
read and set here (`resume_node`, `retries_counted`, `as_new_run`, `fresh_tools`,
`forget_calls`).

The runner adds `DeferredToolRequests` to a run's output type, which Pydantic AI refuses for an
agent with output validators; to say so when the runner is built, with what to do, it reads
whether the agent has any: `Agent._output_validators`, for which there is no public accessor.

The `pydantic-ai-slim` requirement is pinned to one version for this reason (among others),
and tests/test_compat.py checks the name and type used here, so an upgrade that changes it
fails in that one test, by name.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic_ai import DeferredToolResults
from pydantic_ai._agent_graph import AgentNode, CallToolsNode
from pydantic_ai.agent import AbstractAgent
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.run import AgentRun
from pydantic_ai.usage import RunUsage


def has_output_validators(agent: AbstractAgent[object, object]) -> bool:
    """Whether `agent` has output validators (`@agent.output_validator`); False for an agent
    class that keeps none."""
    return bool(getattr(agent, "_output_validators", None))


AnyAgentNode = AgentNode[Any, Any]
"""A node of an agent run's graph (`AgentRun.next_node`'s type, from a private module)."""


def resume_node(run: AgentRun[Any, Any], results: DeferredToolResults | None) -> AnyAgentNode:
    """The node a run resumed with `results` goes to, built as Pydantic AI builds it for a
    new run given `deferred_tool_results` (`UserPromptNode._handle_deferred_tool_results`):
    a `CallToolsNode` over a copy of the last model response, in the run's own history. With
    `results` None, the node of a new run given none, which runs the response's calls."""
    history = run.ctx.state.message_history
    index = _last_response_index(history)
    last = history[index]
    assert isinstance(last, ModelResponse)
    if results is None:
        return CallToolsNode(last)
    response = replace(last)
    history[index] = response
    return CallToolsNode(
        response,
        tool_call_results=dict(results.to_tool_call_results()),
        tool_call_metadata=results.metadata or None,
    )


def _last_response_index(history: list[ModelMessage]) -> int:
    # From the end: the last response is the run's, near the end of a long history.
    return next(i for i in range(len(history) - 1, -1, -1) if isinstance(history[i], ModelResponse))


def fresh_tools(run: AgentRun[Any, Any]) -> None:
    """Has the run's next node prepare its tools again, as a new run's first node does: the
    tool manager forgets the step it prepared them for (`forget_calls` too)."""
    run.ctx.deps.tool_manager.ctx = None
    forget_calls(run)


def forget_calls(run: AgentRun[Any, Any]) -> None:
    """The tool manager forgets which tools failed and succeeded in its step, which the next
    step's retry counts start from: a new run's manager has seen no call."""
    manager = run.ctx.deps.tool_manager
    manager.failed_tools = set()
    manager.succeeded_tools = set()


def retries_counted(run: AgentRun[Any, Any]) -> bool:
    """Whether the run counted a retry (of output or of a tool) that a new run would not."""
    if run.ctx.state.output_retries_used:
        return True
    manager = run.ctx.deps.tool_manager
    if manager.failed_tools:
        return True
    return manager.ctx is not None and any(manager.ctx.retries.values())


def as_new_run(run: AgentRun[Any, Any], deps: object) -> None:
    """Sets what a new run starts afresh, so the resumed run goes on as the cold path's new
    run would: the Step's deps, the step count (its model request is the run's step 1 again),
    the usage (what usage limits count), the last request's settings and the prompt (None: a
    new run over a history that ends with a response has none). The tool manager is moved to
    step 0, so the next request prepares the tools again, as a new run does."""
    state = run.ctx.state
    state.run_step = 0
    state.usage = RunUsage()
    state.last_max_tokens = None
    state.last_model_request_parameters = None
    graph_deps = run.ctx.deps
    graph_deps.user_deps = deps
    graph_deps.prompt = None
    manager = graph_deps.tool_manager
    if manager.ctx is not None:
        manager.ctx = replace(manager.ctx, run_step=0, deps=deps)
