"""LangGraph specifics through one shared real Worker (the spec matrix is test_matrix.py): a
tool that reads the graph's state, structured output, middleware hooks with their own
state key carried across turns, and stream-writer output as session events; the Step shape
of each turn comes from the Step history."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from dex_agents.testing import ScriptedReply, reply_text, reply_tools, step_types, turns_done
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite, WorkerApp
from dex_agents.texts import CONTEXT_SUMMARY_INSTRUCTION as SUMMARY_INSTRUCTION
from dex_agents.texts import CONTEXT_SUMMARY_PREFIX as SUMMARY_PREFIX
from dex_agents.texts import context_left_out_note
from pydantic import BaseModel

from dex_agents_langgraph.custom import CUSTOM_EVENT

ROOT = Path(__file__).parent.parent


class Triage(BaseModel):
    """The structured output of tests/apps/worker_features.py's agents."""

    category: str
    urgent: bool


class TestLangGraphWorker(SharedWorkerSuite):
    app = WorkerApp(worker_target="tests.apps.worker_features:flows", worker_cwd=ROOT)

    async def test_a_tool_reads_the_state_of_the_turns_checkpoint(self, run: SessionRun) -> None:
        run.model.enqueue(reply_text("Hello."))
        session = await run.client.start_session("InjectedAgent", "Hi?")
        await run.client.wait_for(session, turns_done(1))
        run.model.enqueue(
            reply_tools(("c1", "count_messages", {"topic": "a"})), reply_text("Four.")
        )
        await run.client.send_user_message(session, "How many messages?")
        await run.client.wait_for(session, turns_done(2))

        # The stored turn (2), the new question and the model's call, in the CallTool Step.
        assert run.tool_outputs(2) == {"c1": "4 messages, call c1"}
        assert [(e["messages"], e["key"]) for e in run.tool_log.entries("count_messages")] == [
            (4, f"{session}/turn-2/c1")
        ]
        assert (await step_types(run.client, session))[-5:] == [
            "RunModel",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
        ]

    async def test_structured_output_with_a_tool_strategy(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(("w1", "get_weather", {"city": "Oslo"})),
            reply_tools(("s1", "Triage", {"category": "weather", "urgent": False})),
        )
        session = await run.client.start_session("ToolStrategyAgent", "Is it cold in Oslo?")
        snapshot = await run.client.wait_for(session, turns_done(1))

        # The structured-output call is create_agent's own: it never becomes a tool Step.
        assert await step_types(run.client, session) == [
            "StartAgentSession",
            "RunModel",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
        ]
        assert run.tool_log.count("get_weather") == 1
        assert "Triage" in {t["function"]["name"] for t in run.requests[0].body["tools"]}
        answer, result = snapshot.messages[-2:]
        assert (answer.role, answer.tool_name, result.role) == ("assistant", "Triage", "tool")
        assert "category='weather'" in (result.tool_output or "")

    async def test_structured_output_with_a_provider_strategy(self, run: SessionRun) -> None:
        answer = Triage(category="billing", urgent=True)
        run.model.enqueue(reply_text(answer.model_dump_json()))
        session = await run.client.start_session("ProviderStrategyAgent", "My invoice is wrong!")
        snapshot = await run.client.wait_for(session, turns_done(1))

        sent = run.requests[0].body["response_format"]
        assert (sent["type"], sent["json_schema"]["name"]) == ("json_schema", "Triage")
        last = snapshot.messages[-1]
        assert last.role == "assistant"
        assert Triage.model_validate_json(last.text or "") == answer

    async def test_model_hooks_run_once_per_model_call_and_keep_their_state_key(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("c1", "count_messages", {"topic": "a"})),
            reply_tools(("w1", "get_weather", {"city": "Rome"})),
            reply_text("Done."),
        )
        session = await run.client.start_session("MiddlewareAgent", "Count, then weather.")
        await run.client.wait_for(session, turns_done(1))

        # Three model calls in three RunModel Steps: before_model reads the count the earlier
        # Step's hook wrote (the turn's checkpoint keeps the key), after_model sees it.
        assert [e["count"] for e in run.tool_log.entries("before_model")] == [0, 1, 2]
        assert [e["count"] for e in run.tool_log.entries("after_model")] == [1, 2, 3]
        # The tool reads the key through its runtime's state, in its own CallTool Step.
        assert [e["calls_so_far"] for e in run.tool_log.entries("count_messages")] == [1]
        # wrap_tool_call runs when the call is deferred and again when the turn resumes.
        assert [e["call"] for e in run.tool_log.entries("wrap_tool_call")] == [
            "c1",
            "c1",
            "w1",
            "w1",
        ]
        # The agent hooks run once in the turn: before its first and after its last model call.
        assert [e["count"] for e in run.tool_log.entries("before_agent")] == [None]
        assert [e["count"] for e in run.tool_log.entries("after_agent")] == [3]
        history = await step_types(run.client, session)
        assert history.count("RunModel") == 3 and history.count("CallTool") == 2
        # The next turn starts from the state the turn ended with, as a LangGraph thread
        # does: the middleware's key (a plain value: its new one replaces it) goes on from 3,
        # and the tool Step reads it too.
        run.model.enqueue(reply_tools(("c2", "count_messages", {"topic": "b"})), reply_text("Bye."))
        await run.client.send_user_message(session, "Thanks, count again.")
        await run.client.wait_for(session, turns_done(2))
        assert [e["count"] for e in run.tool_log.entries("before_agent")][-1] == 3
        assert [e["count"] for e in run.tool_log.entries("before_model")][-2:] == [3, 4]
        assert [e["calls_so_far"] for e in run.tool_log.entries("count_messages")] == [1, 4]
        assert [e["count"] for e in run.tool_log.entries("after_agent")][-1] == 5

    async def test_a_tools_command_update_is_applied_once_after_a_kill_and_carried_on(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("m1", "set_mood", {"mood": "happy"})),
            ScriptedReply(text="never delivered", hang=True),
            reply_text("Cheerful."),
        )
        session = await run.client.start_session("MoodAgent", "Be happy.")
        # The Worker dies in the RunModel Step that applies the tool Step's update.
        await asyncio.to_thread(run.model.wait_for_requests, run.first_request + 2, 60)
        run.kill_and_restart()
        await run.client.wait_for(session, turns_done(1))

        assert run.tool_log.count("set_mood") == 1
        assert run.tool_outputs(2) == {"m1": "mood is happy"}
        # The killed RunModel and its rerun each saw the update applied once by the reducer.
        moods = [e["moods"] for e in run.tool_log.entries("mood_before_model")]
        assert moods == [[], ["happy"], ["happy"]]
        # The next turn starts from the state the turn ended with; the reducer appends to it.
        run.model.enqueue(reply_tools(("m2", "set_mood", {"mood": "calm"})), reply_text("Calm."))
        await run.client.send_user_message(session, "Now be calm.")
        await run.client.wait_for(session, turns_done(2))
        moods = [e["moods"] for e in run.tool_log.entries("mood_before_model")]
        assert moods[3:] == [["happy"], ["happy", "calm"]]

    async def test_stream_writer_output_becomes_session_events(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(("c1", "count_messages", {"topic": "a"})),
            reply_tools(("w1", "get_weather", {"city": "Rome"})),
            reply_text("Done."),
        )
        session = await run.client.start_session("MiddlewareAgent", "Count, then weather.")
        await run.client.wait_for(session, turns_done(1))

        steps = {
            s.step_execution_id: s.step_type for s in await run.client.get_step_history(session)
        }
        events = [e for e in await run.client.read_events(session) if e.type == CUSTOM_EVENT]
        # Middleware's runtime.stream_writer in the RunModel Steps; ToolRuntime.stream_writer
        # and get_stream_writer() in the CallTool Steps; a value that is not JSON as its str.
        assert [(steps[e.step_execution_id], json.loads(e.payload)) for e in events] == [
            ("RunModel", {"data": {"model_call": 1}}),
            ("CallTool", {"data": {"counted": 2}}),
            ("RunModel", {"data": {"model_call": 2}}),
            ("CallTool", {"data": {"forecast": "Forecast for Rome"}}),
            ("RunModel", {"data": {"model_call": 3}}),
        ]
        assert len({e.turn_id for e in events}) == 1 and events[0].turn_id is not None

    async def test_compaction_summarizes_earlier_turns_and_the_model_reads_the_summary(
        self, run: SessionRun
    ) -> None:
        # Each message is ~100 tokens and the window 560: the third turn starts at ~515
        # tokens, past 85 %; 30 % (168 tokens) keeps only the third question, so the first
        # two turns are summarized.
        texts = [f"{word} " * 80 for word in ("alpha", "bravo", "charlie")]
        answers = [f"{word} " * 80 for word in ("delta", "echo", "foxtrot")]
        run.model.enqueue(reply_text(answers[0]))
        session = await run.client.start_session("CompactingAgent", texts[0])
        await run.client.wait_for(session, turns_done(1))
        run.model.enqueue(reply_text(answers[1]))
        await run.client.send_user_message(session, texts[1])
        await run.client.wait_for(session, turns_done(2))
        run.model.enqueue(reply_text("Spelling practice."), reply_text(answers[2]))
        await run.client.send_user_message(session, texts[2])
        snapshot = await run.client.wait_for(session, turns_done(3))

        history = await step_types(run.client, session)
        assert history.count("CompactContext") == 1
        assert history[history.index("CompactContext") + 1] == "RunModel"
        assert snapshot.context_summary is not None
        assert (snapshot.context_summary.last_sequence, snapshot.context_summary.text) == (
            4,
            "Spelling practice.",
        )
        summary_call = run.requests[2].body["messages"]
        assert len(summary_call) == 1 and SUMMARY_INSTRUCTION in summary_call[0]["content"]
        # The four covered messages and the instruction (~570 tokens) do not fit in the
        # window: the summary request leaves out the oldest turn whole, and says so.
        content = summary_call[0]["content"]
        assert content.startswith(context_left_out_note(2))
        for line in ("User: bravo", "Assistant: echo"):
            assert line in content
        assert "alpha" not in content and "delta" not in content
        assert "charlie" not in content
        sent = [(m["role"], m["content"]) for m in run.requests[3].body["messages"]]
        assert sent == [
            ("system", "Be brief."),
            ("user", f"{SUMMARY_PREFIX}\nSpelling practice."),
            ("user", texts[2]),
        ]
