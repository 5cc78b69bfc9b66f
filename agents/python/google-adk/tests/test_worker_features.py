"""ADK specifics through one shared real Worker (the spec matrix is test_matrix.py): the
runners warm up before the Worker is ready and LiteLLM fetches no cost map, an AgentTool runs
its agent inside its tool Step, a tool reads the session state a model callback wrote, a call
of a tool the agent does not have ends the turn with ADK's error, an MCP toolset's tools run
in tool Steps whose type their annotations give, agent callbacks' artifacts outlive a
restart, and agent trees (tests/apps/multi.py): a transfer between agents (by the model, and
by a tool) and state a tool Step wrote, applied by the RunModel that follows, each surviving a
SIGKILL of the Worker there, and a LoopAgent left by ADK's `exit_loop`. The
Step shape of each turn comes from the Step history; what ran, and how often, from the
tool-run log (outside the database)."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

from dex_agents.testing import (
    ScriptedReply,
    events_of,
    pending_interrupt,
    reply_text,
    reply_tools,
    step_types,
    turns_done,
)
from dex_agents.testing.shared_worker import (
    SessionRun,
    SharedWorkerSuite,
    WorkerApp,
    chat_completions,
)

from .adk_view import adk_chat_completions

ROOT = Path(__file__).parent.parent


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def instruction(run: SessionRun, index: int) -> str:
    """The agent's own instruction: the system instruction's first paragraph (ADK adds its
    identity line and the transfer targets after it)."""
    return chat_completions.instructions(run.requests[index]).split("\n\n")[0]


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
        before_ready = log[
            : log.index(" hosts Concierge, Shop, Inspector, Journal, Triage, Drafts")
        ]
        assert before_ready.count("AdkRunner warmed up in") == 6, log
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

    async def test_an_agent_callbacks_artifacts_are_loaded_after_a_restart(
        self, run: SessionRun
    ) -> None:
        """The journal's `before_agent_callback` and `after_agent_callback` save artifacts
        where ADK records no event; a new Worker's tool Step of the next turn loads the first
        turn's, stored in the database, and the second turn's first RunModel Step's."""
        run.model.enqueue(reply_text("Hello."))
        session = await run.client.start_session("Journal", "Hi")
        await run.client.wait_for(session, turns_done(1))
        run.kill_and_restart()
        run.model.enqueue(reply_tools(("j1", "read_journal", {})), reply_text("Read."))
        await run.client.send_user_message(session, "Read the journal.")
        await run.client.wait_for(session, turns_done(2))

        [entry] = run.tool_log.entries("read_journal")
        assert (entry["before"], entry["after"]) == (["0", "1"], ["0", "1"])

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

    async def test_a_transfer_and_the_state_a_tool_wrote_survive_kills(
        self, run: SessionRun
    ) -> None:
        """triage notes the order (state written in its tool Step), then transfers to billing;
        the Worker is killed in the RunModel that applies the state and again in billing's
        first model call, just after the transfer's Step."""
        run.model.enqueue(
            reply_tools(("n1", "note_order", {"order_id": "o-7"})),
            ScriptedReply(text="never delivered", hang=True),
            reply_tools(("t1", "transfer_to_agent", {"agent_name": "billing"})),
            ScriptedReply(text="never delivered", hang=True),
            reply_tools(("r1", "refund", {"order_id": "o-7"})),
            reply_text("Refunded o-7."),
        )
        session = await run.client.start_session("Triage", "Refund o-7, please.")
        await asyncio.to_thread(run.model.wait_for_requests, run.first_request + 2, 60)
        # The tool Step stored the state it wrote and the artifact it saved with its record.
        [noted] = (await run.client.get_agent_snapshot(session)).tool_calls
        assert json.loads(noted.framework_data or "") == {
            "state_delta": {"order": "o-7", "notes": 1},
            "artifacts": [["note.txt", {"text": "customer asks about o-7"}]],
        }
        run.kill_and_restart()
        await asyncio.to_thread(run.model.wait_for_requests, run.first_request + 4, 60)
        run.kill_and_restart()
        snapshot = await run.client.wait_for(session, turns_done(1))

        assert snapshot.messages[-1].text == "Refunded o-7."
        # Each tool ran once, the refund in billing's context with the state triage's tool wrote.
        assert run.tool_log.count("note_order") == 1
        [refunded] = run.tool_log.entries("refund")
        assert (refunded["agent"], refunded["noted"]) == ("billing", "o-7")
        assert refunded["note"] == "customer asks about o-7"  # the artifact note_order saved
        assert refunded["key"] == f"{session}/turn-1/r1"
        # Requests: triage, triage (killed), triage again: the state applied once each time;
        # billing (killed), billing again, billing after the refund.
        agents = [instruction(run, i) for i in range(len(run.requests))]
        assert agents == ["Route the customer."] * 3 + ["You refund order o-7 (noted 1 times)."] * 3
        assert run.tool_outputs(2) == {"n1": "noted o-7"}
        assert await events_of(run.client, session, "google_adk.transfer") == [
            {"from_agent": "triage", "to_agent": "billing", "tool_call_id": "t1"}
        ]
        steps = [s for s in await step_types(run.client, session) if s != "ResumeTurn"]
        assert steps[-7:] == [
            "RunModel",  # triage: note_order
            "CallTool",
            "RunModel",  # triage: the transfer (killed once before it)
            "RunModel",  # billing: refund (killed once before it)
            "CallTool",
            "RunModel",  # billing: the answer
            "AwaitUserMessage",
        ]

        # The next turn is billing's (ADK's choice: the agent that answered last), and the
        # state is the session's: the tool's delta was stored with the turn's messages.
        run.model.enqueue(reply_text("You're welcome."))
        await run.client.send_user_message(session, "Thanks!")
        await run.client.wait_for(session, turns_done(2))
        assert instruction(run, -1) == "You refund order o-7 (noted 1 times)."

    async def test_a_tools_transfer_survives_a_kill_in_the_target_agent(
        self, run: SessionRun
    ) -> None:
        """triage's `hand_over` sets the transfer in its tool Step; the RunModel that resumes
        the turn with its result makes billing's first model call (triage makes none), and
        the Worker is killed in the RunModel just after, billing's answer after the refund:
        the new Worker resumes the turn in billing."""
        run.model.enqueue(
            reply_tools(("h1", "hand_over", {"order_id": "o-8"})),
            reply_tools(("r1", "refund", {"order_id": "o-8"})),
            ScriptedReply(text="never delivered", hang=True),
            reply_text("Refunded o-8."),
        )
        session = await run.client.start_session("Triage", "Refund o-8, please.")
        await asyncio.to_thread(run.model.wait_for_requests, run.first_request + 3, 60)
        run.kill_and_restart()
        snapshot = await run.client.wait_for(session, turns_done(1))

        assert snapshot.messages[-1].text == "Refunded o-8."
        assert run.tool_log.count("hand_over") == 1
        [refunded] = run.tool_log.entries("refund")
        assert (refunded["agent"], refunded["noted"]) == ("billing", "o-8")
        # Requests: triage, then billing's only: its first, its answer (killed), again.
        agents = [instruction(run, i) for i in range(len(run.requests))]
        assert agents == ["Route the customer."] + ["You refund order o-8 (noted  times)."] * 3
        assert chat_completions.tool_names(run.requests[1]) == ["transfer_to_agent", "refund"]
        assert await events_of(run.client, session, "google_adk.transfer") == [
            {"from_agent": "triage", "to_agent": "billing", "tool_call_id": "h1"}
        ]
        steps = [s for s in await step_types(run.client, session) if s != "ResumeTurn"]
        assert steps[-6:] == [
            "RunModel",  # triage: hand_over
            "CallTool",
            "RunModel",  # the transfer, and billing's refund
            "CallTool",
            "RunModel",  # billing: the answer (killed once in it)
            "AwaitUserMessage",
        ]
        run.model.enqueue(reply_text("You're welcome."))
        await run.client.send_user_message(session, "Thanks!")
        await run.client.wait_for(session, turns_done(2))
        assert instruction(run, -1) == "You refund order o-8 (noted  times)."

    async def test_a_loop_agent_runs_a_model_call_per_step_until_exit_loop_escalates(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("a1", "add_line", {"line": "Roses are red."})),
            reply_text("One line."),
            reply_tools(("a2", "add_line", {"line": "Violets are blue."})),
            reply_text("Two lines."),
            reply_tools(("x1", "exit_loop", {})),
        )
        session = await run.client.start_session("Drafts", "Write a poem.")
        snapshot = await run.client.wait_for(session, turns_done(1))

        assert snapshot.state is not None and snapshot.state.last_turn_error is None
        assert len(run.requests) == 5  # no model call after exit_loop: it escalated
        assert [e["lines"] for e in run.tool_log.entries("add_line")] == [
            ["Roses are red."],
            ["Roses are red.", "Violets are blue."],
        ]
        assert instruction(run, 2) == "Draft so far: ['Roses are red.']"
        steps = [s for s in await step_types(run.client, session) if s != "ResumeTurn"]
        assert steps.count("RunModel") == 6  # five model calls, and the Step applying exit_loop
        assert steps.count("CallTool") == 3
