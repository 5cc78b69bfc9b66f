"""The canary of _compat.py: the Pydantic AI internal the adapter uses, as it uses it, on the
real Agent and in process. An upgrade of `pydantic-ai-slim` that renames or retypes it fails
here, by name, before an agent with output validators is misread."""

from __future__ import annotations

import dataclasses

from pydantic_ai import Agent

from dex_agents_pydantic_ai import _compat


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
