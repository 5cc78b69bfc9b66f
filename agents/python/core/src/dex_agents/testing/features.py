"""The session features every adapter offers (built-in tools, plan mode, session settings,
compaction, an MCP tool source) as one pytest suite, run by each adapter package through real
Worker processes on SQLite and Postgres.

    # tests/test_features.py
    from pathlib import Path
    from dex_agents.testing.features import FeatureApp, FeatureSuite, chat_completions

    class TestFeatures(FeatureSuite):
        app = FeatureApp(
            worker_target="tests.apps.features:flows",
            worker_cwd=Path(__file__).parent.parent,
            model_view=chat_completions,
        )

Like `matrix.MatrixSuite`, the tests share one Worker per backend (`SharedWorkerSuite`); the
question and durable_wait rows SIGKILL it and start it again. `model_view` must be a
`FeatureView` (`chat_completions` and `responses` are).

The app contract. `worker_target` names flows of three flow types, each running the adapter's
agent on the scripted model server at $DEX_AGENTS_SCRIPTED_MODEL_URL (`MODEL_URL_ENV`) with
the tool `get_weather` of `matrix_app` (a read):

- `Features` (`FLOW_TYPE`): options `feature_options()` (the three built-ins, plan mode). The
  model name of each call is `session_settings.get("model", DEFAULT_MODEL)`, and the system
  instructions are exactly `session_settings["instructions"]` when set, else
  `FEATURE_INSTRUCTIONS`, read through the runner's documented session-settings hook;
- `FeaturesCompaction` (`COMPACTION_FLOW_TYPE`): the same agent, options
  `feature_compaction_options()` (a small context window);
- `FeaturesMcp` (`MCP_FLOW_TYPE`): the agent with the tool source `feature_mcp_source()`
  (the stdio server `mcp_server`, whose tools the model sees as `orders__lookup_order` and
  `orders__refund_order`), options `feature_mcp_options()`.

An adapter that cannot offer a feature sets the matching class attribute of its suite to
False (`supports_plan_mode`, `supports_compaction`, `supports_session_settings`,
`supports_mcp`, `supports_built_in_tools`) and says why in `unsupported_reason`; those rows
are skipped with that reason.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, ClassVar, Final

import pytest

from .. import texts
from ..builtins import build_plan_note
from ..flow import AgentSessionOptions, CompactionPolicy
from ..runner import ToolPolicy
from ..types import AgentUserMessage
from .matrix import MATRIX_TOOL_POLICIES
from .model_server import reply_text, reply_tools
from .sessions import events_of, pending_interrupt, step_types, turns_done
from .shared_worker import (
    FeatureView,
    SessionRun,
    SharedWorkerSuite,
    WorkerApp,
    chat_completions,
    responses,
)

if TYPE_CHECKING:
    from ..mcp import McpToolSource

__all__ = [
    "COMPACTION_FLOW_TYPE",
    "DEFAULT_MODEL",
    "FEATURE_INSTRUCTIONS",
    "FLOW_TYPE",
    "MCP_FLOW_TYPE",
    "MCP_LOOKUP",
    "MCP_REFUND",
    "FeatureApp",
    "FeatureSuite",
    "FeatureView",
    "chat_completions",
    "feature_compaction_options",
    "feature_mcp_options",
    "feature_mcp_source",
    "feature_options",
    "responses",
]

FLOW_TYPE: Final = "Features"
COMPACTION_FLOW_TYPE: Final = "FeaturesCompaction"
MCP_FLOW_TYPE: Final = "FeaturesMcp"
DEFAULT_MODEL: Final = "scripted-model"
"""The model name an app's runner uses when the session settings name none."""
FEATURE_INSTRUCTIONS: Final = "You are a helpful assistant. Use the tools when they help."
"""The app's system instructions when the session settings give none."""
OTHER_MODEL: Final = "scripted-model-large"
OTHER_INSTRUCTIONS: Final = "Answer in one word."
MCP_SERVER: Final = "orders"
MCP_LOOKUP: Final = "orders__lookup_order"
MCP_REFUND: Final = "orders__refund_order"
BUILT_INS: Final = ("ask_user", "durable_wait", "write_todos")
COMPACTION_WINDOW_TOKENS: Final = 1_000
# About 1,200 tokens by any tokenizer or a characters/4 estimate: past the window's trigger.
LONG_MESSAGE: Final = "Notes for later: " + " ".join(f"note{i}" for i in range(600))

FeatureApp = WorkerApp
"""An adapter's features app (the contract above): a `WorkerApp` with a `FeatureView`."""


def feature_options() -> AgentSessionOptions:
    """`Features`: the matrix's tool policies, the three built-ins and plan mode."""
    return AgentSessionOptions(
        tool_policies=dict(MATRIX_TOOL_POLICIES),
        built_in_tools=BUILT_INS,
        plan_mode_enabled=True,
    )


def feature_compaction_options() -> AgentSessionOptions:
    """`FeaturesCompaction`: a window small enough that one long message triggers compaction."""
    return AgentSessionOptions(
        tool_policies=dict(MATRIX_TOOL_POLICIES),
        compaction=CompactionPolicy(context_window_tokens=COMPACTION_WINDOW_TOKENS),
    )


def feature_mcp_options() -> AgentSessionOptions:
    return AgentSessionOptions(tool_policies=dict(MATRIX_TOOL_POLICIES))


def feature_mcp_source() -> McpToolSource:
    """The `McpToolSource` over `mcp_server` (stdio, started by the Worker for each request),
    recording to $TOOL_LOG as the Worker sees it; the refund needs approval."""
    import os

    from ..mcp import McpToolSource, StdioServer
    from .mcp_server import TOOL_LOG_ENV

    server = StdioServer(
        MCP_SERVER,
        command=sys.executable,
        args=["-m", "dex_agents.testing.mcp_server"],
        env={TOOL_LOG_ENV: os.environ.get(TOOL_LOG_ENV, os.devnull)},
    )
    refund = ToolPolicy(effect="non_idempotent_write", requires_approval=True)
    return McpToolSource([server], policies={MCP_REFUND: refund})


class FeatureSuite(SharedWorkerSuite):
    """The features: subclass it as `Test...` with `app = FeatureApp(...)`."""

    supports_built_in_tools: ClassVar[bool] = True
    supports_plan_mode: ClassVar[bool] = True
    supports_session_settings: ClassVar[bool] = True
    supports_compaction: ClassVar[bool] = True
    supports_mcp: ClassVar[bool] = True
    unsupported_reason: ClassVar[str] = "the adapter does not offer this feature"
    mcp_reads_run_in_tool_steps: ClassVar[bool] = True
    """False for a whole-turn harness, whose MCP read runs inside its RunModel Step: the MCP
    row then expects no CallTool Step and no record of the read."""

    def view(self) -> FeatureView:
        view = self.app.model_view
        if not isinstance(view, FeatureView):
            raise TypeError(
                f"{type(self).__name__}.app.model_view must be a FeatureView (model, "
                "instructions, tool_names, tool_call_ids, first_input_text), such as "
                "shared_worker.chat_completions or shared_worker.responses"
            )
        return view

    def need(self, supported: bool) -> None:
        if not supported:
            pytest.skip(self.unsupported_reason)

    async def test_a_question_is_asked_and_answered_across_a_worker_restart(
        self, run: SessionRun
    ) -> None:
        self.need(self.supports_built_in_tools)
        question = {"question": "Which city?", "choices": ["Oslo", "Rome"]}
        run.model.enqueue(reply_tools(("q1", "ask_user", question)), reply_text("Rome it is."))
        client = run.client
        session = await client.start_session(FLOW_TYPE, "Plan a trip")
        snapshot = await client.wait_for(session, pending_interrupt("q1"))
        (interrupt,) = snapshot.pending_interrupts
        assert (interrupt.kind, interrupt.question, interrupt.choices) == (
            "question",
            "Which city?",
            ["Oslo", "Rome"],
        )
        offered = self.view().tool_names(run.requests[0])
        assert {"get_weather", *BUILT_INS} <= set(offered)

        run.kill_and_restart()  # the question outlives the Worker
        assert await client.answer_question(session, "q1", "Rome")
        await client.wait_for(session, turns_done(1))

        assert json.loads(run.tool_outputs(1)["q1"]) == {"status": "answered", "answer": "Rome"}
        assert len(run.requests) == 2
        assert await step_types(client, session) == [
            "StartAgentSession",
            "RunModel",
            "AwaitQuestionAnswer",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
        ]

    async def test_a_durable_wait_outlives_the_worker(self, run: SessionRun) -> None:
        self.need(self.supports_built_in_tools)
        wait = {"seconds": 3, "reason": "let the build finish"}
        run.model.enqueue(reply_tools(("w1", "durable_wait", wait)), reply_text("Waited."))
        client = run.client
        session = await client.start_session(FLOW_TYPE, "Wait for the build")
        snapshot = await client.wait_for(
            session, lambda s: any(c.status == "waiting_for_timer" for c in s.tool_calls)
        )
        wait_until = snapshot.tool_calls[0].wait_until

        run.kill_and_restart()
        await client.wait_for(session, turns_done(1), timeout=60)

        result = json.loads(run.tool_outputs(1)["w1"])
        assert (result["status"], result["reason"]) == ("completed", "let the build finish")
        assert await events_of(client, session, "timer_started") == [
            {"tool_call_id": "w1", "wait_until": wait_until, "reason": "let the build finish"}
        ]
        assert len(run.requests) == 2
        assert run.tool_log.count() == 0

    async def test_a_plan_is_drafted_approved_and_executed(self, run: SessionRun) -> None:
        self.need(self.supports_built_in_tools and self.supports_plan_mode)
        todos = [
            {"content": "Check the weather in Rome", "status": "pending"},
            {"content": "Pack", "status": "pending"},
        ]
        run.model.enqueue(
            reply_tools(("p1", "write_todos", {"todos": todos})),
            reply_text("Here is the plan."),
            reply_tools(("r1", "get_weather", {"city": "Rome"})),
            reply_text("Sunny in Rome: pack light."),
        )
        client, view = run.client, self.view()
        session = await client.start_session(FLOW_TYPE)
        await client.wait_for(session, lambda s: s.state is not None)
        planning = AgentUserMessage(text="Plan a trip to Rome", plan_mode=True)
        assert await client.send_user_message(session, planning)
        snapshot = await client.wait_for(session, turns_done(1))
        assert snapshot.plan is not None
        assert (snapshot.plan.revision, snapshot.plan.status) == (1, "draft")
        assert await client.execute_plan(session, 1)
        snapshot = await client.wait_for(session, turns_done(2))
        plan = snapshot.plan
        assert plan is not None and plan.status == "active"

        # The planning turn offered only write_todos, the plan note before the user's text.
        assert view.tool_names(run.requests[0]) == ["write_todos"]
        assert run.user_texts(0) == [build_plan_note(None, "planning"), "Plan a trip to Rome"]
        assert json.loads(run.tool_outputs(1)["p1"]) == {
            "status": "updated",
            "revision": 1,
            "task_count": 2,
        }
        # The executing turn offers the tools again, and sees the active plan.
        assert "get_weather" in view.tool_names(run.requests[2])
        assert build_plan_note(plan, "executing") in run.user_texts(2)
        assert run.tool_outputs(3)["r1"] == "Sunny in Rome"
        assert run.phases("get_weather") == ["started", "finished"]
        assert await events_of(client, session, "plan_execution_started") == [{"revision": 1}]
        assert snapshot.state is not None and snapshot.state.interaction_mode == "executing"

    async def test_session_settings_choose_the_model_and_the_instructions(
        self, run: SessionRun
    ) -> None:
        self.need(self.supports_session_settings)
        run.model.enqueue(reply_text("Hello."), reply_text("Fine."))
        client, view = run.client, self.view()
        session = await client.start_session(FLOW_TYPE, "Hi")
        await client.wait_for(session, turns_done(1))
        settings = {"model": OTHER_MODEL, "instructions": OTHER_INSTRUCTIONS}
        assert await client.update_session_settings(session, settings)
        assert await client.send_user_message(session, "How are you?")
        await client.wait_for(session, turns_done(2))

        first, second = run.requests
        assert (view.model(first), view.instructions(first)) == (
            DEFAULT_MODEL,
            FEATURE_INSTRUCTIONS,
        )
        assert (view.model(second), view.instructions(second)) == (
            OTHER_MODEL,
            OTHER_INSTRUCTIONS,
        )
        assert run.user_texts(1) == ["Hi", "How are you?"]

    async def test_compaction_summarizes_whole_tool_exchanges(self, run: SessionRun) -> None:
        """Turn 1 calls a tool; turn 2's long message passes the trigger: one summary call
        covers turn 1 (its call with its result), and the next request starts with the
        summary and has no tool result without its call."""
        self.need(self.supports_compaction)
        run.model.enqueue(
            reply_tools(("c1", "get_weather", {"city": "Paris"})),
            reply_text("Sunny in Paris."),
            reply_text("The user asked about Paris, where it is sunny."),  # the summary
            reply_tools(("c2", "get_weather", {"city": "Lima"})),
            reply_text("Sunny in Lima too."),
        )
        client, view = run.client, self.view()
        session = await client.start_session(COMPACTION_FLOW_TYPE, "Weather in Paris?")
        await client.wait_for(session, turns_done(1))
        assert len(run.requests) == 2  # no compaction yet
        assert await client.send_user_message(session, f"{LONG_MESSAGE}\nAnd Lima?")
        snapshot = await client.wait_for(session, turns_done(2))

        summary = snapshot.context_summary
        assert summary is not None
        # The summary covers turn 1 whole, its tool call with its result.
        turn_1 = [m.sequence for m in snapshot.messages if m.turn_id == "turn-1"]
        covered = (summary.generation, summary.first_sequence, summary.last_sequence)
        assert covered == (1, turn_1[0], turn_1[-1])
        assert summary.text == "The user asked about Paris, where it is sunny."
        assert (await step_types(client, session)).count("CompactContext") == 1
        assert len(run.requests) == 5  # two per turn and the one summary call
        after = run.requests[3:]
        assert view.first_input_text(after[0]).startswith(texts.CONTEXT_SUMMARY_PREFIX)
        assert summary.text in view.first_input_text(after[0])
        for request in after:
            assert set(view.tool_outputs(request)) <= set(view.tool_call_ids(request))
            assert "c1" not in view.tool_call_ids(request)
        assert view.tool_outputs(after[1]) == {"c2": "Sunny in Lima"}
        assert snapshot.messages[-1].text == "Sunny in Lima too."

    async def test_an_mcp_read_and_an_approved_mcp_write_carry_the_idempotency_key(
        self, run: SessionRun
    ) -> None:
        self.need(self.supports_mcp)
        order = {"order_id": "A-1"}
        run.model.enqueue(
            reply_tools(("m1", MCP_LOOKUP, order), ("m2", MCP_REFUND, order)),
            reply_text("Order A-1 is refunded."),
        )
        client = run.client
        session = await client.start_session(MCP_FLOW_TYPE, "Refund order A-1")
        snapshot = await client.wait_for(session, pending_interrupt("m2"))
        refund_name = self.model_tool_name(MCP_REFUND)
        assert snapshot.pending_interrupts[0].tool_name == refund_name
        assert run.tool_log.count("refund_order") == 0
        assert await client.resolve_interrupt(session, "m2", approved=True)
        snapshot = await client.wait_for(session, turns_done(1))
        assert snapshot.messages[-1].text == "Order A-1 is refunded."

        assert {MCP_LOOKUP, MCP_REFUND} <= set(self.view().tool_names(run.requests[0]))
        (lookup,) = run.tool_log.entries("lookup_order")
        (refund,) = run.tool_log.entries("refund_order")
        assert (lookup["order_id"], lookup["key"]) == ("A-1", f"{session}/turn-1/m1")
        assert (refund["order_id"], refund["key"]) == ("A-1", f"{session}/turn-1/m2")
        assert run.tool_outputs(1) == {
            "m1": "order A-1 is shipped",
            "m2": "order A-1 is refunded",
        }
        steps = await step_types(client, session)
        assert {"AwaitToolApproval", "CallSingleAttemptTool"} <= set(steps)
        finished = await events_of(client, session, "tool_call_finished")
        finished_calls = sorted((f["tool_name"], f["status"]) for f in finished)
        if self.mcp_reads_run_in_tool_steps:
            assert "CallTool" in steps
            assert finished_calls == [(MCP_LOOKUP, "succeeded"), (MCP_REFUND, "succeeded")]
        else:  # the read ran inside the model Step, with the key its tool Step would have had
            assert "CallTool" not in steps
            assert finished_calls == [(refund_name, "succeeded")]
