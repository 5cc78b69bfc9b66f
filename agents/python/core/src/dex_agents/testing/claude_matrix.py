"""The matrix (`matrix.py`) on a Claude Agent SDK runner, Python or TypeScript, in one place.

The Claude Code CLI is a whole-turn harness: a RunModel Step is one CLI run, which runs the
turn's model calls and its read tools itself and stops before a write call, which becomes a
tool Step. Some rows of the matrix therefore cannot occur with it, and one (many sessions on
one Worker) occurs with other Step shapes. `ClaudeHarnessMatrix` goes before the matrix suite
in a test class's bases (`MatrixSuite`, or `node_runner.NodeRunnerMatrixSuite` for the
TypeScript runner): it serves the suite's replies from the scripted Anthropic server with the
tools named as the model sees them (`mcp__matrix__<tool>`: the app gives the CLI its tools as
the in-process SDK MCP server `matrix`), skips the rows that cannot occur with the reason, and
runs the many-sessions row with the harness's Step shapes.

Both packages' READMEs (Integration mode, Effects, Limits) say why each row cannot occur.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from .anthropic_features import FeatureAnthropicServer
from .anthropic_server import no_tools
from .matrix import CONCURRENT_SESSIONS, FLOW_TYPE, MatrixRun
from .model_server import reply_text, reply_tools
from .sessions import turns_done

SERVER_KEY = "matrix"
"""The key of the matrix app's in-process SDK MCP server: the model sees `mcp__matrix__<tool>`."""

READS_IN_THE_CLI = (
    "a read runs inside the CLI run (in RunModel), not in a CallTool Step: the row's Step shape "
    "cannot occur (README, Integration mode)"
)
ONE_WRITE_PER_RUN = (
    "reads run inside the CLI run and the CLI defers one write call per run: a response's calls "
    "never run as parallel tool Steps (README, Limits)"
)
WHOLE_RUN_RERUN = (
    "a rerun RunModel Step reruns the whole CLI run (the turn's model calls and reads so far), "
    "not one model call (README, Limits)"
)
MODEL_NAMES = (
    "the records name a tool as the model sees it, mcp__matrix__<tool>, where the row expects "
    "<tool> (README, Effects)"
)
CLI_RETRIES = (
    "the pinned CLI sends a request answered with HTTP 400 three times in all, whatever "
    "CLAUDE_CODE_MAX_RETRIES says (the package's runner tests), so a RunModel attempt is not one "
    "request and the row's scripted answers are used up by those retries (README, Limits)"
)
MANY_SESSIONS = (
    "a read runs inside the CLI run: a read session's Steps are StartAgentSession, RunModel, "
    "AwaitUserMessage, without the row's CallTool, ResumeTurn and second RunModel; "
    "test_many_sessions_at_once_with_reads_in_the_cli runs the row with this runner's Step shapes"
)


def model_name(tool: str) -> str:
    """The name the model sees for one of the matrix app's tools."""
    return f"mcp__{SERVER_KEY}__{tool}"


def cannot(reason: str) -> Any:
    """A row this runner cannot produce, skipped with the reason."""

    @pytest.mark.skip(reason=reason)
    async def row(self: Any) -> None:
        raise AssertionError(reason)

    return row


class AnthropicMatrixModel:
    """The suite's replies, as Anthropic messages with the tools' model names; the CLI's own
    small requests (no tools offered) answered aside."""

    @pytest.fixture(scope="class")
    @classmethod
    def shared_model(cls, shared_database: str) -> Iterator[FeatureAnthropicServer]:
        with FeatureAnthropicServer(model_name, side=no_tools) as server:
            yield server


class ClaudeHarnessMatrix(AnthropicMatrixModel):
    """The matrix's rows as a Claude Code CLI harness runs them (see the module)."""

    test_read_tool_turn_has_the_step_shape_and_replays_next_turn = cannot(READS_IN_THE_CLI)
    test_parallel_tool_calls_run_as_parallel_steps = cannot(ONE_WRITE_PER_RUN)
    test_approval_waits_beside_a_read_survives_a_restart_and_runs_once = cannot(READS_IN_THE_CLI)
    test_kill_during_single_attempt_tool_records_outcome_unknown = cannot(MODEL_NAMES)
    test_kill_during_run_model_reruns_only_that_model_call = cannot(WHOLE_RUN_RERUN)
    test_failed_turn_leaves_the_failure_note_and_the_write_is_not_repeated = cannot(CLI_RETRIES)
    test_snapshot_returns_the_conversation_after_a_turn = cannot(MODEL_NAMES)
    test_one_worker_runs_the_model_and_tool_steps_of_many_sessions_at_once = cannot(MANY_SESSIONS)
    test_run_model_attempts_are_the_only_retries_of_a_failing_model_call = cannot(CLI_RETRIES)

    async def test_many_sessions_at_once_with_reads_in_the_cli(self, run: MatrixRun) -> None:
        """The matrix's many-sessions row with this runner's Step shapes: four sessions' first
        CLI runs in flight at once (each model call held until the last arrives), then one
        session's write runs for seconds in its tool Step while the other three run their reads
        inside their CLI runs and finish their turns. No attempt fails."""
        client, model = run.client, run.model
        cities = ["Lima", "Quito", "Oslo"]
        model.enqueue(
            reply_tools(("c1", "charge_card", {"amount": 7, "seconds": 4}), hang=True),
            *[reply_tools(("w1", "get_weather", {"city": c}), hang=True) for c in cities],
        )
        questions = [f"Question {i} of {CONCURRENT_SESSIONS}" for i in range(CONCURRENT_SESSIONS)]
        started = await asyncio.gather(*(client.start_session(FLOW_TYPE, q) for q in questions))
        sessions = dict(zip(questions, started, strict=True))
        await asyncio.to_thread(
            model.wait_for_requests, run.first_request + CONCURRENT_SESSIONS, 60
        )
        model.enqueue(*[reply_text("Done.")] * CONCURRENT_SESSIONS)
        model.release()
        # Request i got reply i: the session that asked it gets that tool call.
        (charged, *read) = [sessions[run.user_texts(i)[-1]] for i in range(CONCURRENT_SESSIONS)]
        await asyncio.gather(*(client.wait_for(s, turns_done(1), timeout=60) for s in read))
        assert run.phases("charge_card") == ["started"]  # three turns ended during the write
        await client.wait_for(charged, turns_done(1), timeout=60)

        assert run.phases("charge_card") == ["started", "finished"]
        assert run.tool_log.entries("charge_card")[0]["key"] == f"{charged}/turn-1/c1"
        weather = run.tool_log.entries("get_weather")
        assert sorted((e["city"], e["phase"]) for e in weather) == sorted(
            (c, p) for c in cities for p in ("started", "finished")
        )
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
            shape = [(s.step_type, s.attempts) for s in history]
            middle = [("RunModel", 1)]
            if session == charged:
                middle += [("CallSingleAttemptTool", 1), ("ResumeTurn", 1), ("RunModel", 1)]
            assert shape == [("StartAgentSession", 1), *middle, ("AwaitUserMessage", 0)]
            assert (await client.get_agent_snapshot(session)).messages[-1].text == "Done."
