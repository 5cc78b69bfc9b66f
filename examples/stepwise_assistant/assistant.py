"""A Stepwise agent that watches a build, waits durably while it runs, and asks the user a
question: the built-in tools `durable_wait` and `ask_user`.

Run it (see README.md): `python assistant.py`. The Worker runs in this process; the same
`flows` also serve a separate Worker process: `dex-agents worker assistant:flows`.
"""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta

from dex_agents import AgentClient, AgentSessionFlow, AgentSessionOptions, Worker
from dex_agents.stepwise import AgentDefinition, StepwiseRunner, tool

# Stands in for your CI's API: the first check finds the build running, later ones find it
# passed.
CHECKS: dict[str, int] = {}


@tool(effect="read")  # a read: it may run again after a crash, and needs no approval
def check_build(build_id: str) -> dict[str, str]:
    """The status of a CI build.

    Args:
        build_id: The build's number, such as "1234".
    """
    CHECKS[build_id] = CHECKS.get(build_id, 0) + 1
    status = "running" if CHECKS[build_id] == 1 else "passed"
    return {"build_id": build_id, "status": status}


agent = AgentDefinition(
    name="BuildWatcher",
    instructions=(
        "You watch CI builds for the user. While a build runs, wait with durable_wait and "
        "check again. When it has passed, ask the user where to announce it, then write the "
        "announcement."
    ),
    tools=[check_build],
    # Any LiteLLM model string; "openai/..." follows OPENAI_BASE_URL and OPENAI_API_KEY.
    model=os.environ.get("LITELLM_MODEL", "openai/gpt-5-mini"),
)

flows = [
    AgentSessionFlow(
        StepwiseRunner(agent),
        flow_type="BuildWatcher",
        options=AgentSessionOptions(
            # ask_user raises a question interrupt (AwaitQuestionAnswer); durable_wait is a
            # durable timer (AwaitTimer): both survive Worker restarts, for days if need be.
            built_in_tools=("ask_user", "durable_wait"),
            max_durable_wait=timedelta(hours=1),
        ),
    )
]


async def main() -> None:
    # Worker and client share the database: DEX_AGENTS_DATABASE_URL, or the SQLite file
    # dex_agents.sqlite in the working directory.
    async with Worker(flows), AgentClient() as client:
        result = await client.start_session_and_wait(
            "BuildWatcher", "Tell me when build 1234 is green, then help me announce it."
        )
        # The turn checks the build, waits, checks again, then asks a question: the session
        # waits (durably) for the answer.
        while result.status == "waiting_for_interrupts":
            for question in result.interrupts:
                choices = f" ({' / '.join(question.choices)})" if question.choices else ""
                answer = input(f"{question.question}{choices} > ")
                await client.answer_question(result.session_id, question.interrupt_id, answer)
            result = await client.wait_for_turn(
                result.session_id, result.turn_id, after=result.event_offset
            )
        print(f"[{result.status}] {result.text}")

        steps = await client.get_step_history(result.session_id)
        print("Steps:", " -> ".join(step.step_type for step in steps))


if __name__ == "__main__":
    asyncio.run(main())
