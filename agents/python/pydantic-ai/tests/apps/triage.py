"""The Worker app of the integration tests: `dex-agents worker tests.apps.triage:flows`.

The agents are ordinary Pydantic AI agents whose OpenAIChatModel talks to the scripted model
server the test started; its URL and the tool-run log path come from the environment.
"""

from __future__ import annotations

import os

from dex_agents import AgentSessionFlow, AgentSessionOptions, ToolPolicy
from dex_agents.testing import MODEL_URL_ENV

from dex_agents_pydantic_ai import PydanticAiRunner

from .agents import (
    build_files_agent,
    build_sequential_agent,
    build_ticket_agent,
    build_triage_agent,
    deps_factory,
    scripted_model,
)

model = scripted_model(os.environ[MODEL_URL_ENV])
deps = deps_factory(os.environ["TOOL_LOG"])

flows = [
    AgentSessionFlow(
        PydanticAiRunner(build_triage_agent(model), deps_factory=deps),
        flow_type="TriageAgent",
        options=AgentSessionOptions(
            tool_policies={
                "charge_card": ToolPolicy(effect="non_idempotent_write", requires_approval=False)
            },
        ),
    ),
    AgentSessionFlow(
        PydanticAiRunner(build_ticket_agent(model), deps_factory=deps),
        flow_type="TicketAgent",
        options=AgentSessionOptions(default_tool_effect="read"),
    ),
    AgentSessionFlow(
        # A small stored-result limit, so one test can pass it.
        PydanticAiRunner(build_files_agent(model), deps_factory=deps, max_tool_result_bytes=4096),
        flow_type="FilesAgent",
    ),
    AgentSessionFlow(
        PydanticAiRunner(build_sequential_agent(model), deps_factory=deps),
        flow_type="SequentialAgent",
    ),
]
