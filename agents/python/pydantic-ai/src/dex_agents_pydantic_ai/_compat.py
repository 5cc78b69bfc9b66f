"""Every part of Pydantic AI that is not its public API, in one place.

The runner adds `DeferredToolRequests` to a run's output type, which Pydantic AI refuses for an
agent with output validators; to say so when the runner is built, with what to do, it reads
whether the agent has any: `Agent._output_validators`, for which there is no public accessor.

The `pydantic-ai-slim` requirement is pinned to one version for this reason (among others),
and tests/test_compat.py checks the name and type used here, so an upgrade that changes it
fails in that one test, by name.
"""

from __future__ import annotations

from pydantic_ai.agent import AbstractAgent


def has_output_validators(agent: AbstractAgent[object, object]) -> bool:
    """Whether `agent` has output validators (`@agent.output_validator`); False for an agent
    class that keeps none."""
    return bool(getattr(agent, "_output_validators", None))
