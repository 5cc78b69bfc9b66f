"""Pydantic AI specifics through one shared real Worker (the spec matrix is test_matrix.py):
structured output, ModelRetry, invalid arguments, and an ApprovalRequiredToolset that decides
per call; the Step shape of each turn comes from the Step history."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from dex_agents.testing import (
    ScriptedReply,
    events_of,
    pending_interrupt,
    reply_text,
    reply_tools,
    step_types,
    turns_done,
)
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite, WorkerApp

from .apps.agents import PIXEL_PNG, Ticket

ROOT = Path(__file__).parent.parent
PIXEL_DATA_URL = "data:image/png;base64," + base64.b64encode(PIXEL_PNG).decode()


def after_tool_message(body: dict[str, Any], tool_call_id: str) -> list[dict[str, Any]]:
    """The messages a Chat Completions request sends after the result of `tool_call_id`."""
    messages: list[dict[str, Any]] = body["messages"]
    index = next(i for i, m in enumerate(messages) if m.get("tool_call_id") == tool_call_id)
    return messages[index:]


class TestPydanticAiSessions(SharedWorkerSuite):
    app = WorkerApp(worker_target="tests.apps.triage:flows", worker_cwd=ROOT)

    async def test_structured_output_with_a_tool(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(("k1", "known_categories", {})),
            reply_tools(("o1", "final_result", {"category": "billing", "priority": 2})),
        )
        session = await run.client.start_session("TicketAgent", "My invoice is wrong.")
        snapshot = await run.client.wait_for(session, turns_done(1))

        assert await step_types(run.client, session) == [
            "StartAgentSession",
            "RunModel",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
        ]
        assert run.tool_outputs(1) == {"k1": '["billing","shipping"]'}
        answer = snapshot.messages[-2]
        assert (answer.role, answer.tool_name) == ("assistant", "final_result")
        assert Ticket.model_validate_json(answer.text or "") == Ticket(
            category="billing", priority=2
        )
        assert snapshot.messages[-1].role == "tool"
        assert "final_result" in {t["function"]["name"] for t in run.requests[0].body["tools"]}

    async def test_model_retry_from_a_tool_is_a_failure_the_model_sees(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("l1", "lookup_order", {"order_id": "123"})),
            reply_tools(("l2", "lookup_order", {"order_id": "o-123"})),
            reply_text("Order o-123 has shipped."),
        )
        session = await run.client.start_session("TriageAgent", "Where is order 123?")
        await run.client.wait_for(session, turns_done(1))

        assert run.tool_outputs(1) == {"l1": "The tool call failed: order ids start with 'o-'"}
        assert json.loads(run.tool_outputs(2)["l2"]) == {"order_id": "o-123", "status": "shipped"}
        # A failure the model sees is final: the tool ran once per call, with the call's key.
        assert [e["key"] for e in run.tool_log.entries("lookup_order")] == [
            f"{session}/turn-1/l1",
            f"{session}/turn-1/l2",
        ]
        history = await run.client.get_step_history(session)
        assert [(s.step_type, s.attempts) for s in history if s.step_type == "CallTool"] == [
            ("CallTool", 1),
            ("CallTool", 1),
        ]
        finished = await events_of(run.client, session, "tool_call_finished")
        assert [f["status"] for f in finished] == ["failed", "succeeded"]

    async def test_invalid_arguments_make_another_model_call_in_the_same_turn(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("bad", "get_weather", {"town": "Rome"})),
            reply_tools(("good", "get_weather", {"city": "Rome"})),
            reply_text("Sunny in Rome."),
        )
        session = await run.client.start_session("TriageAgent", "Weather in Rome?")
        snapshot = await run.client.wait_for(session, turns_done(1))

        assert await step_types(run.client, session) == [
            "StartAgentSession",
            "RunModel",
            "RunModel",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
        ]
        assert "Field required" in run.tool_outputs(1)["bad"]
        assert run.tool_log.count("get_weather") == 1
        assert [(m.role, m.tool_call_id) for m in snapshot.messages] == [
            ("user", None),
            ("assistant", "bad"),
            ("tool", "bad"),
            ("assistant", "good"),
            ("tool", "good"),
            ("assistant", None),
        ]
        assert snapshot.usage.model_calls == 3

    async def test_a_tool_asking_approval_at_run_time_waits_for_it_under_its_policy(
        self, run: SessionRun
    ) -> None:
        """An ApprovalRequiredToolset decides per call; unclassified tools wait for approval by
        default, and the approved call runs with ctx.tool_call_approved."""
        run.model.enqueue(
            reply_tools(("big", "refund", {"order_id": "o-9", "amount": 500})),
            reply_text("Refunded."),
        )
        session = await run.client.start_session("TriageAgent", "Refund 500 on o-9.")
        await run.client.wait_for(session, pending_interrupt("big"))
        assert run.tool_log.count("refund") == 0
        assert await run.client.resolve_interrupt(session, "big", approved=True)
        await run.client.wait_for(session, turns_done(1))

        assert [e["order_id"] for e in run.tool_log.entries("refund")] == ["o-9"]
        assert run.tool_outputs(1) == {"big": "refunded 500 on o-9"}

    async def test_a_tool_return_with_files_reaches_the_next_model_call_after_a_restart(
        self, run: SessionRun
    ) -> None:
        """ToolReturn: the return value is the tool result, `content` (text, an image's bytes,
        an image URL) a user message after it, `metadata` kept on the stored message only; a
        Worker killed during the next model call sends the same request after its restart."""
        run.model.enqueue(
            reply_tools(("c1", "chart", {"region": "north"})),
            ScriptedReply(text="never delivered", hang=True),
            reply_text("A one-pixel chart."),
        )
        session = await run.client.start_session("FilesAgent", "Show the north chart.")
        run.model.wait_for_requests(run.first_request + 2, timeout=60)
        # The tool record holds the whole result once, a readable text first.
        (record,) = (await run.client.get_agent_snapshot(session)).tool_calls
        run.kill_and_restart()
        snapshot = await run.client.wait_for(session, turns_done(1))

        stored = json.loads(record.output or "")
        assert stored["text"].splitlines() == [
            "chart of north ready",
            f"[file: image/png, {len(PIXEL_PNG)} bytes]",
            "[file: https://example.com/legend.png]",
        ]
        assert run.tool_log.count("chart") == 1
        assert len(run.requests) == 3
        # The rerun, in a new Worker process, rebuilt the request from the stored record.
        assert run.requests[2].body == run.requests[1].body
        tool, user = after_tool_message(run.requests[2].body, "c1")
        assert tool["content"] == "chart of north ready"
        assert user == {
            "role": "user",
            "content": [
                {"type": "text", "text": "The north chart:"},
                {"type": "image_url", "image_url": {"url": PIXEL_DATA_URL}},
                {"type": "image_url", "image_url": {"url": "https://example.com/legend.png"}},
            ],
        }
        assert "rows" not in json.dumps(run.requests[2].body)
        # The transcript keeps Pydantic AI's messages: the metadata stays on the tool return.
        roles = [(m.role, m.tool_call_id) for m in snapshot.messages]
        assert roles == [
            ("user", None),
            ("assistant", "c1"),
            ("tool", "c1"),
            ("user", None),
            ("assistant", None),
        ]
        tool_message = snapshot.messages[2]
        assert tool_message.tool_output == "chart of north ready"
        (part,) = json.loads(tool_message.framework_item)["parts"]
        assert part["metadata"] == {"rows": 3, "region": "north"}
        assert snapshot.messages[3].text == "The north chart:"
        # At rest the image is stored once: the turn's records went with the turn, and one
        # stored message holds its bytes.
        encoded = base64.urlsafe_b64encode(PIXEL_PNG).decode()  # as Pydantic AI writes bytes
        assert snapshot.tool_calls == []
        assert [m.sequence for m in snapshot.messages if encoded in m.framework_item] == [
            snapshot.messages[3].sequence
        ]

    async def test_an_image_a_tool_returns_reaches_the_model_as_pydantic_ai_sends_it(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("s1", "snapshot", {})),
            reply_text("A tiny image."),
            reply_text("Still a tiny image."),
        )
        session = await run.client.start_session("FilesAgent", "Take a snapshot.")
        await run.client.wait_for(session, turns_done(1))
        await run.client.send_user_message(session, "And again?")
        await run.client.wait_for(session, turns_done(2))

        # The image travels after the tool result, and again in the next turn's history.
        for request in run.requests[1:]:
            tool, *rest = after_tool_message(request.body, "s1")
            assert tool["role"] == "tool"
            assert PIXEL_DATA_URL in json.dumps(rest)
        assert run.tool_log.count("snapshot") == 1

    async def test_a_tool_result_over_the_limit_is_a_failure_that_says_the_limit(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("s1", "snapshot", {"size": 8192})),
            reply_text("Too big."),
        )
        session = await run.client.start_session("FilesAgent", "A large snapshot.")
        await run.client.wait_for(session, turns_done(1))

        output = run.tool_outputs(1)["s1"]
        assert output.startswith("The tool call failed: the tool's result is ")
        assert "over the 4096-byte limit" in output
        assert "max_tool_result_bytes" in output
        (finished,) = await events_of(run.client, session, "tool_call_finished")
        assert finished["status"] == "failed"
        assert run.tool_log.count("snapshot") == 1

    async def test_tools_a_tool_return_reveals_are_offered_from_the_next_model_call(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("o1", "open_catalog", {})),
            reply_tools(("p1", "price_of", {"item": "tea"})),
            reply_text("Tea is 3 EUR."),
        )
        session = await run.client.start_session("FilesAgent", "What does tea cost?")
        await run.client.wait_for(session, turns_done(1))

        offered = [{t["function"]["name"] for t in r.body["tools"]} for r in run.requests]
        assert ["price_of" in names for names in offered] == [False, True, True]
        assert run.tool_outputs(1) == {"o1": "catalog open"}
        assert run.tool_outputs(2)["p1"] == "tea: 3 EUR"

    async def test_a_sequential_tool_is_a_barrier_between_parallel_steps(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(
                ("f1", "fetch", {"label": "a"}),
                ("f2", "fetch", {"label": "b"}),
                ("m1", "migrate", {"label": "m"}),
                ("f3", "fetch", {"label": "c"}),
            ),
            reply_text("All done."),
        )
        session = await run.client.start_session("SequentialAgent", "Fetch, migrate, fetch.")
        snapshot = await run.client.wait_for(session, turns_done(1))

        # f1 and f2 overlap; the migration starts after both finished and runs alone; f3
        # starts after it finished.
        order = [
            (e["label"], e["phase"])
            for e in run.tool_log.entries()  # in the order they were written
            if e["tool"] in ("fetch", "migrate")
        ]
        assert {order[0], order[1]} == {("a", "started"), ("b", "started")}
        assert {order[2], order[3]} == {("a", "finished"), ("b", "finished")}
        assert order[4:] == [
            ("m", "started"),
            ("m", "finished"),
            ("c", "started"),
            ("c", "finished"),
        ]
        # Three groups, each handed over by a RunModel Step; only the first and last call the
        # model, whose second request has every result in the model's order.
        assert await step_types(run.client, session) == [
            "StartAgentSession",
            "RunModel",
            "CallTool",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
        ]
        assert len(run.requests) == 2
        assert list(run.tool_outputs(1).items()) == [
            ("f1", "a done"),
            ("f2", "b done"),
            ("m1", "m done"),
            ("f3", "c done"),
        ]
        assert snapshot.messages[-1].text == "All done."
