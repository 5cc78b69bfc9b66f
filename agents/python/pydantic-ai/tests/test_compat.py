"""The canary of _compat.py: the Pydantic AI internals the adapter uses, as it uses them, on
the real Agent and in process. An upgrade of `pydantic-ai-slim` that renames or retypes it fails
here, by name, before an agent with output validators is misread."""

from __future__ import annotations

import dataclasses

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai._agent_graph import CallToolsNode
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_graph import End

from dex_agents_pydantic_ai import _compat
from dex_agents_pydantic_ai.deferral import ToolCatalog
from dex_agents_pydantic_ai.runner import deferrable_output_type


def test_an_agent_keeps_its_output_validators_in_a_list() -> None:
    assert "_output_validators" in {f.name for f in dataclasses.fields(Agent)}
    agent: Agent[None, str] = Agent(None)
    assert agent._output_validators == []
    assert _compat.has_output_validators(agent) is False

    @agent.output_validator
    def not_empty(output: str) -> str:
        return output

    assert isinstance(agent._output_validators, list)
    assert len(agent._output_validators) == 1
    assert _compat.has_output_validators(agent) is True


async def test_a_run_ended_at_deferred_calls_resumes_with_the_node_a_new_run_builds() -> None:
    """warm.py's internals: the run's state and deps fields `as_new_run` sets, the retry
    counters `retries_counted` reads, and `resume_node`'s CallToolsNode, driven on a real run
    of a FunctionModel to its next model response."""
    seen: list[int] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(len(messages))
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("lookup", {"key": "a"}, "c1")])
        return ModelResponse(parts=[TextPart("done")])

    agent: Agent[int, str] = Agent(FunctionModel(reply), deps_type=int)

    @agent.tool_plain
    def lookup(key: str) -> str:
        return key

    catalog = ToolCatalog(defer=True)
    output_type = deferrable_output_type(agent)
    async with agent.iter("hi", deps=1, output_type=output_type, capabilities=[catalog]) as run:
        node = run.next_node
        while not isinstance(node, End):
            node = await run.next(node)
        assert isinstance(node.data.output, DeferredToolRequests)
        assert _compat.retries_counted(run) is False
        state = {f.name for f in dataclasses.fields(run.ctx.state)}
        assert {"run_step", "usage", "last_max_tokens", "last_model_request_parameters"} <= state
        assert run.ctx.state.run_step == 1

        _compat.as_new_run(run, 2)
        assert (run.ctx.state.run_step, run.ctx.deps.user_deps) == (0, 2)
        assert run.ctx.deps.prompt is None  # as a new run over a history ending with a response
        manager = run.ctx.deps.tool_manager
        assert {"ctx", "failed_tools", "succeeded_tools"} <= {
            f.name for f in dataclasses.fields(manager)
        }
        _compat.fresh_tools(run)
        assert (manager.ctx, manager.failed_tools, manager.succeeded_tools) == (None, set(), set())
        running = _compat.resume_node(run, None)  # the node that runs the calls, as a tool Step
        assert isinstance(running, CallToolsNode) and running.tool_call_results is None
        resumed = _compat.resume_node(run, DeferredToolResults(calls={"c1": "A"}))
        assert isinstance(resumed, CallToolsNode)
        node = resumed
        while not isinstance(node, End):
            node = await run.next(node)
        assert node.data.output == "done"
        assert run.ctx.state.run_step == 1  # as the one model request of a new run
    assert seen == [1, 3]
