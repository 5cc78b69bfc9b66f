"""ADK specifics through one shared real Worker (the spec matrix is test_matrix.py): the
runners warm up before the Worker is ready and LiteLLM fetches no cost map, an AgentTool runs
its agent inside its tool Step, a tool reads the session state a model callback wrote, a call
of a tool the agent does not have ends the turn with ADK's error, and an MCP toolset's tools
run in tool Steps whose type their annotations give; the Step shape of each turn comes from
the Step history."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from dex_agents.testing import (
    pending_interrupt,
    reply_text,
    reply_tools,
    step_types,
    turns_done,
)
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite, WorkerApp

from .adk_view import adk_chat_completions

ROOT = Path(__file__).parent.parent


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# HTTPS goes through a proxy port that refuses connections: a cost-map fetch would fail, and
# LiteLLM would record the failure as the reason it fell back to its bundled map.
NO_HTTPS = f"http://127.0.0.1:{_closed_port()}"


class TestAdkWorker(SharedWorkerSuite):
    app = WorkerApp(
        worker_target="tests.apps.features:flows",
        worker_cwd=ROOT,
        model_view=adk_chat_completions,
        # Unset for the Worker: the adapter must have LiteLLM use its local cost map.
        worker_env={"LITELLM_LOCAL_MODEL_COST_MAP": "", "HTTPS_PROXY": NO_HTTPS},
    )

    async def test_the_worker_warmed_up_before_ready_and_litellm_fetched_nothing(
        self, run: SessionRun
    ) -> None:
        """Each runner warmed up (LiteLLM imported, a mocked turn through ADK) before the
        Worker reported ready; LiteLLM read its bundled cost map because the adapter said so,
        attempting no fetch."""
        log = run.worker.log()
        before_ready = log[: log.index(" hosts Concierge, Shop, Inspector")]
        assert before_ready.count("AdkRunner warmed up in") == 3, log
        assert "could not warm up" not in log

        run.model.enqueue(reply_tools(("c1", "cost_map_source", {})), reply_text("Local."))
        session = await run.client.start_session("Inspector", "Where is the cost map from?")
        await run.client.wait_for(session, turns_done(1))
        assert json.loads(run.tool_outputs(1)["c1"]) == {
            "source": "local",
            "url": None,
            "is_env_forced": True,
            "fallback_reason": None,
        }

    async def test_an_agent_tool_runs_its_agent_in_one_tool_step(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(("a1", "weather_expert", {"request": "Oslo?"})),
            reply_tools(("w1", "get_weather", {"city": "Oslo"})),
            reply_text("Sunny in Oslo, says the tool."),
            reply_text("The expert says it is sunny."),
        )
        session = await run.client.start_session("Concierge", "Ask the expert about Oslo.")
        snapshot = await run.client.wait_for(session, turns_done(1))

        assert snapshot.messages[-1].text == "The expert says it is sunny."
        assert (await step_types(run.client, session))[-5:] == [
            "RunModel",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
        ]
        # The expert's own call ran inside the AgentTool's Step, with no key of its own.
        [entry] = run.tool_log.entries("get_weather")
        assert (entry["city"], entry["key"]) == ("Oslo", f"{session}/turn-1/a1")
        assert run.tool_outputs(3) == {"a1": "Sunny in Oslo, says the tool."}

    async def test_a_tool_reads_the_state_a_model_callback_wrote(self, run: SessionRun) -> None:
        run.model.enqueue(reply_tools(("w1", "get_weather", {"city": "Rome"})), reply_text("Warm."))
        session = await run.client.start_session("Concierge", "Rome?")
        await run.client.wait_for(session, turns_done(1))

        [entry] = run.tool_log.entries("get_weather")
        assert (entry["unit"], entry["key"]) == ("celsius", f"{session}/turn-1/w1")
        assert run.tool_outputs(1) == {"w1": "Sunny in Rome"}

    async def test_a_call_of_an_unknown_tool_ends_the_turn_with_adks_error(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(*[reply_tools(("x1", "teleport", {"to": "Mars"}))] * 3)
        session = await run.client.start_session("Concierge", "Take me to Mars.")
        snapshot = await run.client.wait_for(session, turns_done(1))

        assert snapshot.state is not None
        assert "Tool 'teleport' not found" in (snapshot.state.last_turn_error or "")
        assert run.tool_log.entries("get_weather") == []
        assert len(run.requests) == 3  # one per RunModel attempt, each failing the same way

    async def test_mcp_toolset_tools_run_once_each_in_the_step_their_annotations_give(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(
                ("s1", "get_stock", {"item": "kettle"}),
                ("o1", "place_order", {"item": "kettle", "quantity": 2}),
            ),
            reply_text("Ordered two kettles."),
        )
        session = await run.client.start_session("Shop", "Two kettles, if in stock.")
        await run.client.wait_for(session, pending_interrupt("o1"))
        assert run.tool_log.count("place_order") == 0  # it waits for its approval
        assert await run.client.resolve_interrupt(session, "o1", approved=True)
        snapshot = await run.client.wait_for(session, turns_done(1))

        assert snapshot.messages[-1].text == "Ordered two kettles."
        steps = await step_types(run.client, session)
        # get_stock is readOnlyHint (read: CallTool); place_order has no hints (unclassified).
        assert sorted(s for s in steps if s.startswith("Call")) == [
            "CallSingleAttemptTool",
            "CallTool",
        ]
        assert [e["item"] for e in run.tool_log.entries("get_stock")] == ["kettle"]
        assert [e["quantity"] for e in run.tool_log.entries("place_order")] == [2]
        outputs = run.tool_outputs(1)
        assert '"ordered 2 kettle"' in outputs["o1"] and '"3 kettle in stock"' in outputs["s1"]
