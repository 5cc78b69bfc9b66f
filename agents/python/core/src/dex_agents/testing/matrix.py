"""The adapters' spec matrix (items 1-11, RunModel owning retries, and many sessions at once
on one Worker) as one pytest suite.

An adapter package runs it by subclassing `MatrixSuite` in a test module and naming its app:

    # tests/test_matrix.py
    from pathlib import Path
    from dex_agents.testing.matrix import MatrixApp, MatrixSuite, chat_completions

    class TestMatrix(MatrixSuite):
        app = MatrixApp(
            worker_target="tests.apps.matrix:flows",
            worker_cwd=Path(__file__).parent.parent,
            model_view=chat_completions,
        )

Every test runs through a real `dex-agents worker` process on SQLite, and on Postgres when
DEX_AGENTS_TEST_POSTGRES_URL is set: the shared Worker of `shared_worker.SharedWorkerSuite`
(one Worker, database, scripted model server and tool-run log per backend). The kill tests
(items 3, 5, 6 and 9) SIGKILL that Worker and start it again, which recovers what it left in
flight.

The app contract. `worker_target` names the flows (`module:attribute`, a list or a function
returning one) of three flow types, each running the same agent on the scripted model server
at $DEX_AGENTS_SCRIPTED_MODEL_URL (`MODEL_URL_ENV`) with the system prompt of the app's choice:

- `Matrix`: the agent below, its model client keeping the library's own retries (the runner
  must turn them off), `AgentSessionOptions(tool_policies=MATRIX_TOOL_POLICIES)`;
- `MatrixDeadline`: the same, with `interrupt_deadline=timedelta(seconds=1)`;
- `MatrixClientRetries`: the same as `Matrix`, the runner made with `framework_retries=True`.

The agent has four tools, with the effects of `MATRIX_TOOL_POLICIES`. Each records every run
to the `ToolRunLog` at $TOOL_LOG under the tool's name, with the fields listed (`key` is the
run's `current_tool_execution().idempotency_key`), and returns exactly the text shown, which
the model sees as the tool result:

- `get_weather(city: str)`, a read: records `phase="started"`, sleeps 0.3 s, records
  `phase="finished"`, returns `Sunny in {city}`;
- `send_email(to: str, body: str)`, a non_idempotent_write that needs approval: records
  `key`, returns `email sent to {to}`;
- `update_ticket(ticket_id: str, status: str)`, an idempotent_write: records `key`, returns
  `ticket {ticket_id} is {status}`;
- `charge_card(amount: int, seconds: float)`, a single-attempt write without approval:
  records `phase="started"` and `key`, sleeps `seconds`, records `phase="finished"`, returns
  `charged {amount}`.

`dex_agents.testing.matrix_app` has these four tools as plain functions and the three flow
types around a runner (`matrix_flows`), so an app only wraps them for its framework.
`charge_card` is the write a test holds open (`seconds=60`) to SIGKILL the Worker inside it.
The model talks to the server through the framework's real OpenAI client; the scripts
(`reply_text`, `reply_tools`) are the same for every adapter: the server answers Chat
Completions and Responses requests alike. What differs is the request shape, which
`MatrixApp.model_view` reads: `chat_completions` or `responses`, or an adapter's own
`ModelView`.

Example apps: agents/python/pydantic-ai/tests/apps/matrix.py (Chat Completions),
agents/python/openai-agents/tests/apps/matrix.py (Responses).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from .. import texts
from ..client import AgentClient
from ..runner import ToolPolicy
from .model_server import ScriptedReply, reply_text, reply_tools
from .sessions import events_of, pending_interrupt, step_types, turns_done, wait_until
from .shared_worker import (
    ModelView,
    SessionRun,
    SharedWorkerSuite,
    WorkerApp,
    chat_completions,
    responses,
)

__all__ = [
    "CLIENT_RETRIES_FLOW_TYPE",
    "DEADLINE_FLOW_TYPE",
    "FLOW_TYPE",
    "MATRIX_TOOL_POLICIES",
    "MatrixApp",
    "MatrixRun",
    "MatrixSuite",
    "ModelView",
    "chat_completions",
    "responses",
]

FLOW_TYPE = "Matrix"
DEADLINE_FLOW_TYPE = "MatrixDeadline"
CLIENT_RETRIES_FLOW_TYPE = "MatrixClientRetries"
MATRIX_TOOL_POLICIES: Mapping[str, ToolPolicy] = {
    "get_weather": ToolPolicy(effect="read"),
    "send_email": ToolPolicy(effect="non_idempotent_write", requires_approval=True),
    "update_ticket": ToolPolicy(effect="idempotent_write"),
    "charge_card": ToolPolicy(effect="non_idempotent_write", requires_approval=False),
}
EMAIL = {"to": "ana@example.com", "body": "Hi"}
CONCURRENT_SESSIONS = 4


MatrixApp = WorkerApp
"""An adapter's matrix app (the contract above): a `WorkerApp`."""
MatrixRun = SessionRun


class MatrixSuite(SharedWorkerSuite):
    """The matrix: subclass it as `Test...` with `app = MatrixApp(...)`."""

    reads_run_in_tool_steps: ClassVar[bool] = True
    """False for a whole-turn harness, whose reads run inside its RunModel Step: the
    many-sessions row then expects a read session's Steps without CallTool, ResumeTurn and the
    second RunModel, and does not ask its reads to overlap (`claude_matrix`)."""

    # 1
    async def test_read_tool_turn_has_the_step_shape_and_replays_next_turn(
        self, run: MatrixRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("call_1", "get_weather", {"city": "Paris"})),
            reply_text("It is sunny in Paris."),
            reply_text("You asked about Paris."),
        )
        client = run.client
        session = await client.start_session(FLOW_TYPE, "What's the weather in Paris?")
        await client.wait_for(session, turns_done(1))
        assert await client.send_user_message(session, "Which city did I ask about?")
        await client.wait_for(session, turns_done(2))

        assert await step_types(client, session) == [
            "StartAgentSession",
            "RunModel",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
            "RunModel",
            "AwaitUserMessage",
        ]
        assert run.phases("get_weather") == ["started", "finished"]
        assert run.tool_outputs(1) == {"call_1": "Sunny in Paris"}
        # The next turn replays the history: both user messages and the tool result.
        assert run.user_texts(2) == ["What's the weather in Paris?", "Which city did I ask about?"]
        assert run.tool_outputs(2) == {"call_1": "Sunny in Paris"}
        assert len(run.requests) == 3
        assert await events_of(client, session, "turn_completed") == [
            {"message_count": 3},
            {"message_count": 1},
        ]

    # 2
    async def test_parallel_tool_calls_run_as_parallel_steps(self, run: MatrixRun) -> None:
        run.model.enqueue(
            reply_tools(
                ("a", "get_weather", {"city": "Lima"}), ("b", "get_weather", {"city": "Quito"})
            ),
            reply_text("Both sunny."),
        )
        session = await run.client.start_session(FLOW_TYPE, "Weather in Lima and Quito?")
        await run.client.wait_for(session, turns_done(1))

        assert await step_types(run.client, session) == [
            "StartAgentSession",
            "RunModel",
            "CallTool",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
        ]
        # Both calls started before either finished: they ran at the same time.
        assert run.phases("get_weather") == ["started", "started", "finished", "finished"]
        assert run.tool_outputs(1) == {"a": "Sunny in Lima", "b": "Sunny in Quito"}

    # 3
    async def test_approval_waits_beside_a_read_survives_a_restart_and_runs_once(
        self, run: MatrixRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("r1", "get_weather", {"city": "Lima"}), ("w1", "send_email", EMAIL)),
            reply_text("Email sent, and it is sunny in Lima."),
        )
        client = run.client
        session = await client.start_session(FLOW_TYPE, "Weather in Lima, then email Ana.")
        snapshot = await client.wait_for(session, _read_done_and_waiting("r1", "w1"))
        (interrupt,) = snapshot.pending_interrupts
        assert (interrupt.kind, interrupt.tool_name) == ("tool_approval", "send_email")
        assert {c.tool_call_id: (c.effect, c.status) for c in snapshot.tool_calls} == {
            "r1": ("read", "succeeded"),
            "w1": ("non_idempotent_write", "awaiting_approval"),
        }

        run.kill_and_restart()  # the approval outlives the Worker
        assert run.tool_log.count("send_email") == 0
        assert await client.resolve_interrupt(session, "w1", approved=True)
        await client.wait_for(session, turns_done(1))

        (email,) = run.tool_log.entries("send_email")
        assert email["key"] == f"{session}/turn-1/w1"
        assert run.phases("get_weather") == ["started", "finished"]
        assert len(run.requests) == 2
        assert run.tool_outputs(1) == {"r1": "Sunny in Lima", "w1": "email sent to ana@example.com"}
        assert await step_types(client, session) == [
            "StartAgentSession",
            "RunModel",
            "CallTool",
            "AwaitToolApproval",
            "ResumeTurn",
            "CallSingleAttemptTool",
            "RunModel",
            "AwaitUserMessage",
        ]

    # 4
    async def test_rejected_write_never_runs_and_the_model_sees_the_message(
        self, run: MatrixRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("w1", "send_email", EMAIL)),
            reply_text("Understood, I will not send it."),
            reply_tools(("w2", "send_email", EMAIL)),
            reply_text("Not sent."),
        )
        client = run.client
        session = await client.start_session(FLOW_TYPE, "Email Ana.")
        await client.wait_for(session, pending_interrupt("w1"))
        assert await client.resolve_interrupt(
            session, "w1", approved=False, rejection_message="Do not email Ana today."
        )
        await client.wait_for(session, turns_done(1))
        assert await client.send_user_message(session, "Email Ana again.")
        await client.wait_for(session, pending_interrupt("w2"))
        assert await client.resolve_interrupt(session, "w2", approved=False)
        await client.wait_for(session, turns_done(2))

        assert run.tool_log.count("send_email") == 0
        assert run.tool_outputs(1) == {"w1": "Do not email Ana today."}
        assert run.tool_outputs(3)["w2"] == texts.DEFAULT_REJECTION_TEXT
        finished = await events_of(client, session, "tool_call_finished")
        assert [f["status"] for f in finished] == ["rejected", "rejected"]
        assert (await step_types(client, session))[:5] == [
            "StartAgentSession",
            "RunModel",
            "AwaitToolApproval",
            "ResumeTurn",
            "RunModel",
        ]

    # 5
    async def test_kill_during_single_attempt_tool_records_outcome_unknown(
        self, run: MatrixRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("c1", "charge_card", {"amount": 40, "seconds": 60})),
            reply_text("The charge may or may not have gone through."),
        )
        client = run.client
        session = await client.start_session(FLOW_TYPE, "Charge 40.")
        wait_until(lambda: run.phases("charge_card") == ["started"], what="the charge to start")
        run.kill_and_restart()
        await client.wait_for(session, turns_done(1))

        assert run.phases("charge_card") == ["started"]
        assert run.tool_outputs(1) == {"c1": texts.OUTCOME_UNKNOWN_TEXT}
        charge_card = self.model_tool_name("charge_card")
        assert await events_of(client, session, "tool_call_finished") == [
            {"tool_call_id": "c1", "tool_name": charge_card, "status": "outcome_unknown"}
        ]
        history = await client.get_step_history(session)
        assert [s.step_type for s in history] == [
            "StartAgentSession",
            "RunModel",
            "CallSingleAttemptTool",
            "ResumeTurn",
            "RecordToolOutcomeUnknown",
            "RunModel",
            "AwaitUserMessage",
        ]
        assert (history[2].status, history[2].attempts) == ("failed", 1)

    # 6
    async def test_kill_during_run_model_reruns_only_that_model_call(self, run: MatrixRun) -> None:
        run.model.enqueue(
            reply_tools(("r1", "get_weather", {"city": "Kyiv"})),
            ScriptedReply(text="never delivered", hang=True),
            reply_text("Snow in Kyiv."),
        )
        client = run.client
        session = await client.start_session(FLOW_TYPE, "Weather in Kyiv?")
        run.model.wait_for_requests(run.first_request + 2, timeout=60)
        run.kill_and_restart()
        snapshot = await client.wait_for(session, turns_done(1))

        assert run.phases("get_weather") == ["started", "finished"]
        assert len(run.requests) == 3
        # The rerun sends what the killed attempt sent, rebuilt from the stored run state.
        assert run.requests[2].body == run.requests[1].body
        history = await client.get_step_history(session)
        assert [s.step_type for s in history] == [
            "StartAgentSession",
            "RunModel",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
        ]
        assert [s.attempts for s in history if s.step_type == "RunModel"] == [1, 2]
        assert snapshot.messages[-1].text == "Snow in Kyiv."
        assert snapshot.usage.model_calls == 2

    # 7
    async def test_resolve_interrupt_twice_returns_false_the_second_time(
        self, run: MatrixRun
    ) -> None:
        run.model.enqueue(reply_tools(("w1", "send_email", EMAIL)), reply_text("Sent."))
        client = run.client
        session = await client.start_session(FLOW_TYPE, "Email Ana.")
        await client.wait_for(session, pending_interrupt("w1"))
        assert await client.resolve_interrupt(session, "w1", approved=True) is True
        assert await client.resolve_interrupt(session, "w1", approved=True) is False
        assert await client.resolve_interrupt(session, "w1", approved=False) is False
        await client.wait_for(session, turns_done(1))

        assert run.tool_log.count("send_email") == 1
        assert run.tool_outputs(1) == {"w1": "email sent to ana@example.com"}

    # 7
    async def test_an_approval_deadline_rejects_the_call(self, run: MatrixRun) -> None:
        run.model.enqueue(reply_tools(("w1", "send_email", EMAIL)), reply_text("Nobody did."))
        client = run.client
        session = await client.start_session(DEADLINE_FLOW_TYPE, "Email Ana.")
        snapshot = await client.wait_for(session, pending_interrupt("w1"))
        assert snapshot.pending_interrupts[0].deadline is not None
        await client.wait_for(session, turns_done(1))
        assert await client.resolve_interrupt(session, "w1", approved=True) is False

        assert run.tool_log.count("send_email") == 0
        assert run.tool_outputs(1) == {"w1": texts.APPROVAL_DEADLINE_PASSED}

    # 8
    async def test_failed_turn_leaves_the_failure_note_and_the_write_is_not_repeated(
        self, run: MatrixRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("t1", "update_ticket", {"ticket_id": "T-7", "status": "closed"})),
            # A 400 is tried neither by the client nor by RunModel: the turn fails at once.
            ScriptedReply(status=400, text="bad request"),
            reply_text("Ticket T-7 is already closed."),
        )
        client = run.client
        session = await client.start_session(FLOW_TYPE, "Close ticket T-7.")
        snapshot = await client.wait_for(session, turns_done(1))
        assert snapshot.state is not None
        assert "bad request" in (snapshot.state.last_turn_error or "")
        assert await client.send_user_message(session, "Did it work?")
        snapshot = await client.wait_for(session, turns_done(2))

        assert [e["key"] for e in run.tool_log.entries("update_ticket")] == [f"{session}/turn-1/t1"]
        # The failed turn keeps its transcript (the call and its result), then the note.
        call, result, note = snapshot.messages[1:4]
        assert (call.role, call.tool_call_id, result.role, result.tool_call_id) == (
            "assistant",
            "t1",
            "tool",
            "t1",
        )
        assert result.tool_output == "ticket T-7 is closed"
        assert note.role == "user" and note.text == (
            f"{texts.TURN_FAILURE_NOTE_HEADER}\n"
            f"- update_ticket {call.tool_arguments} -> succeeded: ticket T-7 is closed\n"
            f"{texts.NOTE_FOOTER}"
        )
        # The next model call sees the write's result and the note; it did not run again.
        assert run.user_texts(2) == ["Close ticket T-7.", note.text, "Did it work?"]
        assert run.tool_outputs(2) == {"t1": "ticket T-7 is closed"}
        history = await client.get_step_history(session)
        assert [(s.status, s.attempts) for s in history if s.step_type == "RunModel"] == [
            ("succeeded", 1),
            ("failed", 1),
            ("succeeded", 1),
        ]
        assert "RecordTurnFailure" in [s.step_type for s in history]

    # 9
    async def test_a_recovered_worker_never_reruns_a_single_attempt_write(
        self, run: MatrixRun
    ) -> None:
        """Killed right as the write returns, before or after its commit, and again inside
        the next model call: the write ran once, and the model saw its one result."""
        run.model.enqueue(
            reply_tools(("c1", "charge_card", {"amount": 9, "seconds": 0.5})),
            ScriptedReply(text="never delivered", hang=True),
            reply_text("Charged."),
        )
        client = run.client
        session = await client.start_session(FLOW_TYPE, "Charge 9.")
        wait_until(lambda: "finished" in run.phases("charge_card"), what="the charge to finish")
        run.kill_and_restart()
        run.model.wait_for_requests(run.first_request + 2, timeout=60)
        run.kill_and_restart()  # now inside the next RunModel
        await client.wait_for(session, turns_done(1))

        assert run.phases("charge_card") == ["started", "finished"]
        finished = await events_of(client, session, "tool_call_finished")
        assert len(finished) == 1 and finished[0]["status"] in ("succeeded", "outcome_unknown")
        assert (await step_types(client, session)).count("CallSingleAttemptTool") == 1
        visible = {"succeeded": "charged 9", "outcome_unknown": texts.OUTCOME_UNKNOWN_TEXT}
        seen = [run.tool_outputs(i) for i in range(1, len(run.requests))]
        assert seen == [{"c1": visible[finished[0]["status"]]}] * len(seen)

    # 10
    async def test_message_sent_during_a_turn_is_queued_and_handled_after(
        self, run: MatrixRun
    ) -> None:
        run.model.enqueue(
            ScriptedReply(text="First answer.", hang=True), reply_text("Second answer.")
        )
        client = run.client
        session = await client.start_session(FLOW_TYPE, "First question")
        run.model.wait_for_requests(run.first_request + 1)
        assert await client.send_user_message(session, "Second question")
        snapshot = await client.get_agent_snapshot(session)
        assert snapshot.state is not None and snapshot.state.status == "running_model"
        assert snapshot.queued_message_count == 1
        run.model.release()
        snapshot = await client.wait_for(session, turns_done(2))

        assert [m.text for m in snapshot.messages] == [
            "First question",
            "First answer.",
            "Second question",
            "Second answer.",
        ]
        assert snapshot.queued_message_count == 0
        assert run.user_texts(1) == ["First question", "Second question"]

    # 11
    async def test_snapshot_returns_the_conversation_after_a_turn(self, run: MatrixRun) -> None:
        run.model.enqueue(reply_tools(("w1", "get_weather", {"city": "Oslo"})), reply_text("Cold."))
        client = run.client
        session = await client.start_session(FLOW_TYPE, "Weather in Oslo?")
        snapshot = await client.wait_for(session, turns_done(1))

        assert snapshot.state is not None
        assert (snapshot.state.turn_count, snapshot.state.active_turn_id) == (1, None)
        weather = self.model_tool_name("get_weather")
        assert [
            (m.sequence, m.turn_id, m.role, m.text, m.tool_call_id, m.tool_name, m.tool_output)
            for m in snapshot.messages
        ] == [
            (1, "turn-1", "user", "Weather in Oslo?", None, None, None),
            (2, "turn-1", "assistant", None, "w1", weather, None),
            (3, "turn-1", "tool", None, "w1", weather, "Sunny in Oslo"),
            (4, "turn-1", "assistant", "Cold.", None, None, None),
        ]
        assert snapshot.tool_calls == [] and snapshot.pending_interrupts == []
        assert snapshot.usage.model_calls == 2
        assert (snapshot.usage.input_tokens, snapshot.usage.output_tokens) == (20, 10)
        page = await client.list_agent_messages(session, limit=2)
        assert [m.sequence for m in page.messages] == [3, 4]
        deltas = await events_of(client, session, "text_delta")
        assert "".join(d["text"] for d in deltas) == "Cold."

    async def test_nul_and_unpaired_surrogates_finish_the_turn_and_keep_the_session(
        self, run: MatrixRun
    ) -> None:
        """A user message and a rejection message with NUL and an unpaired surrogate (texts a
        JSON client may send, say a string cut between the halves of an emoji), and NUL in the
        tool's arguments and result and the model's answer: both turns complete, the session
        keeps every text as it was, and the model gets each unpaired surrogate as U+FFFD
        (UTF-8 cannot encode one, so no framework's client could send it), on its turn and
        the next."""
        city, answer = "Li\x00ma", "Sunny \x00 there."
        run.model.enqueue(
            reply_tools(("o1", "get_weather", {"city": city})),
            reply_text(answer),
            reply_tools(("e1", "send_email", EMAIL)),
            reply_text("Not sent."),
        )
        client = run.client
        question, rejection = "Weather in \x00 Lima \ud83d?", "Not now \udc00"
        session = await client.start_session(FLOW_TYPE, question)
        snapshot = await client.wait_for(session, turns_done(1))
        assert snapshot.state is not None and snapshot.state.last_turn_error is None
        assert await client.send_user_message(session, "Email Ana \udc00")
        await client.wait_for(session, pending_interrupt("e1"))
        assert await client.resolve_interrupt(session, "e1", False, rejection)
        snapshot = await client.wait_for(session, turns_done(2))

        assert snapshot.state is not None and snapshot.state.last_turn_error is None
        assert [(m.role, m.text, m.tool_output) for m in snapshot.messages] == [
            ("user", question, None),
            ("assistant", None, None),
            ("tool", None, f"Sunny in {city}"),
            ("assistant", answer, None),
            ("user", "Email Ana \udc00", None),
            ("assistant", None, None),
            ("tool", None, rejection),
            ("assistant", "Not sent.", None),
        ]
        weather = run.tool_log.entries("get_weather")
        assert [(entry["phase"], entry["city"]) for entry in weather] == [
            ("started", city),
            ("finished", city),
        ]
        assert run.tool_log.count("send_email") == 0
        sent = "Weather in \x00 Lima \ufffd?"
        assert run.user_texts(0) == [sent]
        assert run.user_texts(3) == [sent, "Email Ana \ufffd"]
        assert run.tool_outputs(3) == {"o1": f"Sunny in {city}", "e1": "Not now \ufffd"}

    async def test_one_worker_runs_the_model_and_tool_steps_of_many_sessions_at_once(
        self, run: MatrixRun
    ) -> None:
        """Four sessions on the one Worker: their first model calls are all in flight at once
        (each held until the last arrives), then one session's write runs for seconds while
        the other three run their reads and second model calls and finish their turns. No
        attempt fails: a runner must not change a framework object its other runs share.
        With `reads_run_in_tool_steps` False the reads run inside the first model Steps."""
        client, model = run.client, run.model
        cities = ["Lima", "Quito", "Oslo"]
        model.enqueue(
            reply_tools(("c1", "charge_card", {"amount": 7, "seconds": 4}), hang=True),
            *[reply_tools(("w1", "get_weather", {"city": c}), hang=True) for c in cities],
        )
        questions = [f"Question {i} of {CONCURRENT_SESSIONS}" for i in range(CONCURRENT_SESSIONS)]
        sessions = dict(
            zip(
                questions,
                await asyncio.gather(*(client.start_session(FLOW_TYPE, q) for q in questions)),
                strict=True,
            )
        )
        await asyncio.to_thread(
            model.wait_for_requests, run.first_request + CONCURRENT_SESSIONS, 60
        )
        model.enqueue(*[reply_text("Done.")] * CONCURRENT_SESSIONS)
        model.release()
        # Request i got reply i: the session that asked it gets that tool call.
        (charged, *read) = [sessions[run.user_texts(i)[-1]] for i in range(CONCURRENT_SESSIONS)]
        await asyncio.gather(*(client.wait_for(s, turns_done(1), timeout=60) for s in read))
        # Three turns finished while the write's tool Step ran.
        assert run.phases("charge_card") == ["started"]
        await client.wait_for(charged, turns_done(1), timeout=60)

        assert run.phases("charge_card") == ["started", "finished"]
        assert run.tool_log.entries("charge_card")[0]["key"] == f"{charged}/turn-1/c1"
        weather = run.tool_log.entries("get_weather")
        assert sorted((e["city"], e["phase"]) for e in weather) == sorted(
            (c, p) for c in cities for p in ("started", "finished")
        )
        if self.reads_run_in_tool_steps:
            assert _most_at_once(weather) >= 2  # reads overlapped
        assert len(run.requests) == 2 * CONCURRENT_SESSIONS
        seen = {
            sessions[run.user_texts(i)[-1]]: run.tool_outputs(i)
            for i in range(CONCURRENT_SESSIONS, 2 * CONCURRENT_SESSIONS)
        }
        assert seen == {
            charged: {"c1": "charged 7"},
            **{s: {"w1": f"Sunny in {c}"} for s, c in zip(read, cities, strict=True)},
        }
        for session in sessions.values():
            history = await client.get_step_history(session)
            # The wait for the next message is hot, or parked once its hot window passed.
            shape = [
                (s.step_type, "waiting" if s.status == "parked" else s.status, s.attempts)
                for s in history
            ]
            steps = self._many_sessions_steps(write=session == charged)
            assert shape == [
                *[(step, "succeeded", 1) for step in steps],
                ("AwaitUserMessage", "waiting", 0),
            ]
            snapshot = await client.get_agent_snapshot(session)
            assert snapshot.messages[-1].text == "Done."

    def _many_sessions_steps(self, *, write: bool) -> list[str]:
        """A session's Steps in the many-sessions row before its wait for the next message."""
        if not write and not self.reads_run_in_tool_steps:
            return ["StartAgentSession", "RunModel"]
        tool_step = "CallSingleAttemptTool" if write else "CallTool"
        return ["StartAgentSession", "RunModel", tool_step, "ResumeTurn", "RunModel"]

    async def test_run_model_attempts_are_the_only_retries_of_a_failing_model_call(
        self, run: MatrixRun
    ) -> None:
        """The model answers 500s, which an OpenAI client retries twice by itself: each
        RunModel attempt of `Matrix` is exactly one request, and `MatrixClientRetries`
        (`framework_retries=True`) keeps the client's retries. A 400 is not tried again, and
        a 429's Retry-After is waited for."""
        client, model = run.client, run.model

        # Two failures, then an answer: one RunModel Step, three attempts, three requests.
        model.enqueue(ScriptedReply(status=500), ScriptedReply(status=500), reply_text("Hi."))
        recovered = await client.start_session_and_wait(FLOW_TYPE, "Hello?", timeout=60)
        assert (recovered.status, recovered.text) == ("completed", "Hi.")
        assert len(run.requests) == 3

        # Every attempt fails: three requests, then the failure route ends the turn.
        model.enqueue(*[ScriptedReply(status=500, text="overloaded")] * 3)
        failed = await client.start_session_and_wait(FLOW_TYPE, "Hello again?", timeout=60)
        assert failed.status == "failed" and "overloaded" in (failed.error or "")
        assert len(run.requests) == 6

        # The client's own retries, left on: one attempt, two requests.
        model.enqueue(ScriptedReply(status=500), reply_text("Hi there."))
        retried = await client.start_session_and_wait(
            CLIENT_RETRIES_FLOW_TYPE, "Hello?", timeout=60
        )
        assert retried.status == "completed"
        assert len(run.requests) == 8

        assert await _run_model_attempts(client, recovered.session_id) == [("succeeded", 3)]
        history = await client.get_step_history(failed.session_id)
        assert [s.step_type for s in history] == [
            "StartAgentSession",
            "RunModel",
            "RecordTurnFailure",
            "AwaitUserMessage",
        ]
        assert (history[1].status, history[1].attempts) == ("failed", 3)
        assert history[1].error is not None and "overloaded" in history[1].error
        snapshot = await client.get_agent_snapshot(failed.session_id)
        assert snapshot.state is not None and snapshot.state.last_turn_error == failed.error
        assert await _run_model_attempts(client, retried.session_id) == [("succeeded", 1)]

        # A client error fails the same way on every attempt: one request, then the failure.
        model.enqueue(ScriptedReply(status=400, text="unknown parameter: temperatura"))
        refused = await client.start_session_and_wait(FLOW_TYPE, "Hello?", timeout=60)
        assert refused.status == "failed" and "temperatura" in (refused.error or "")
        assert len(run.requests) == 9
        assert await _run_model_attempts(client, refused.session_id) == [("failed", 1)]

        # A rate limit's Retry-After is waited for (the Step's own backoff is 0.5 s).
        model.enqueue(ScriptedReply(status=429, retry_after=2), reply_text("Now."))
        limited = await client.start_session_and_wait(FLOW_TYPE, "Hello?", timeout=60)
        assert (limited.status, limited.text) == ("completed", "Now.")
        assert len(run.requests) == 11
        first, second = run.requests[-2:]
        assert second.received_at - first.received_at >= 2.0
        assert await _run_model_attempts(client, limited.session_id) == [("succeeded", 2)]


def _most_at_once(runs: list[dict[str, Any]]) -> int:
    """The most runs of a tool in progress at one time, from its started/finished log."""
    running = most = 0
    for entry in runs:
        running += 1 if entry["phase"] == "started" else -1
        most = max(most, running)
    return most


async def _run_model_attempts(client: AgentClient, session_id: str) -> list[tuple[str, int]]:
    history = await client.get_step_history(session_id)
    return [(s.status, s.attempts) for s in history if s.step_type == "RunModel"]


def _read_done_and_waiting(read_id: str, write_id: str) -> Callable[[Any], bool]:
    def holds(snapshot: Any) -> bool:
        return pending_interrupt(write_id)(snapshot) and any(
            c.tool_call_id == read_id and c.status == "succeeded" for c in snapshot.tool_calls
        )

    return holds
