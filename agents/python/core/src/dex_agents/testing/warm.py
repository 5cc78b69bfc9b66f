"""A runner's warm path is invisible from outside: the check every adapter with one runs.

A runner with a warm path (`dex_agents.warm_states`) keeps a turn's live framework objects
between its Steps on one Worker; its cold path rebuilds them from the committed state. The
two must send the model the same bytes, store the same messages and stream the same text.
`assert_warm_matches_cold` drives the matrix's tools (`matrix_app.MATRIX_TOOLS`) through one
script, in process (`RunnerDriver`), with the runner's warm path off and on, and compares:

    async def test_warm_matches_cold(tool_log: ToolRunLog) -> None:
        await assert_warm_matches_cold(
            lambda warm_runs, url: MyRunner(my_agent(url), warm_runs=warm_runs), tool_log
        )

`make_runner(warm_runs, model_url)` builds the adapter's runner with the four matrix tools on
the scripted model server at `model_url` (each path gets a server of its own, so the item IDs
the server makes up are the same in both). The script covers parallel calls, an approved
write, invalid arguments, a rejected call, a second turn, and a message stored in the middle
of a turn (as a steering message is), which must send the warm path cold.

`WarmWorkerSuite` checks the same through a real Worker: a session on the matrix app's
`MatrixWarm` flow type, its Worker SIGKILLed between two Steps of a turn, sends the model what a
session on `MatrixCold` sends (`matrix_app.matrix_flows(..., warm=...)` hosts both).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..runner import ToolCallsRequested
from ..types import AgentToolCall
from ..warm_states import WarmRunner
from .driver import Decision, Reject, RunnerDriver
from .matrix_app import COLD_FLOW_TYPE, TOOL_LOG_ENV, WARM_FLOW_TYPE
from .model_server import ScriptedModelServer, ScriptedReply, reply_text, reply_tools
from .sessions import pending_interrupt, turns_done
from .shared_worker import SessionRun, SharedWorkerSuite
from .tool_log import ToolRunLog

REJECTED_TO = "nobody@example.com"


def warm_script() -> list[ScriptedReply]:
    """Two turns of the matrix's tools; the steering turn follows (`_steered_turn`)."""
    email = {"to": "ana@example.com", "body": "Hi"}
    return [
        reply_tools(
            ("w1", "get_weather", {"city": "Paris"}),
            ("w2", "update_ticket", {"ticket_id": "t-1", "status": "open"}),
            ("w3", "send_email", email),
        ),
        reply_tools(("w4", "update_ticket", {})),  # invalid arguments
        reply_tools(("w5", "send_email", {"to": REJECTED_TO, "body": "No"})),  # rejected
        reply_tools(("w6", "charge_card", {"amount": 5, "seconds": 0})),
        reply_text("All done."),
        reply_tools(("w7", "get_weather", {"city": "Rome"})),
        reply_text("Sunny in Rome."),
    ]


def decide(record: AgentToolCall) -> Decision:
    """The script's decisions: its call to REJECTED_TO is rejected, every other one runs."""
    return Reject("Not to them.") if REJECTED_TO in record.arguments else "run"


Observed = tuple[list[bytes], list[tuple[Any, ...]], list[str]]
"""What the outside sees: the model requests' bytes, the stored messages, the streamed text
and the tools that ran."""


async def _session(runner: WarmRunner, model: ScriptedModelServer) -> Observed:
    driver = RunnerDriver(runner)
    first = len(model.requests)
    model.enqueue(*warm_script())
    await driver.turn("Help with ticket t-1, please.", decide=decide)
    await driver.turn("And Rome?", decide=decide)
    await _steered_turn(driver, model)
    stored: list[tuple[Any, ...]] = [
        (m.role, m.text, m.tool_call_id, m.tool_name, m.tool_arguments, m.tool_output)
        for m in driver.messages
    ]
    return [request.raw for request in model.requests[first:]], stored, [driver.events.texts()]


async def _steered_turn(driver: RunnerDriver, model: ScriptedModelServer) -> None:
    """A turn with a message stored between its model steps: the warm entry no longer stands
    for the turn, so the second step must run cold, and send what the cold path sends."""
    model.enqueue(reply_tools(("w8", "get_weather", {"city": "Oslo"})), reply_text("Both."))
    turn_id = driver.start_turn("Oslo?")
    outcome = await driver.model_step(turn_id, None)
    assert isinstance(outcome, ToolCallsRequested), outcome
    await driver.run_tools(turn_id, outcome)
    driver.append(turn_id, driver.runner.build_user_message("And Bergen too."))
    await driver.model_step(turn_id, outcome.framework_run_state)


@contextmanager
def tool_log_env(tool_log: ToolRunLog) -> Iterator[None]:
    """Points the matrix tools run in this process at `tool_log`."""
    before = os.environ.get(TOOL_LOG_ENV)
    os.environ[TOOL_LOG_ENV] = str(tool_log.path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(TOOL_LOG_ENV, None)
        else:
            os.environ[TOOL_LOG_ENV] = before


async def assert_warm_matches_cold(
    make_runner: Callable[[int, str], WarmRunner], tool_log: ToolRunLog
) -> WarmRunner:
    """Runs the script cold (`warm_runs=0`) then warm (`warm_runs=4`) and asserts the same
    request bytes, stored messages, streamed text and tool runs; returns the warm runner, for
    a test's own checks of its hits."""
    observed: list[Observed] = []
    runs: list[list[str]] = []
    runners: list[WarmRunner] = []
    with tool_log_env(tool_log):
        for warm_runs in (0, 4):
            ran = tool_log.count()
            with ScriptedModelServer() as model:
                runners.append(make_runner(warm_runs, model.base_url))
                observed.append(await _session(runners[-1], model))
            runs.append([str(run["tool"]) for run in tool_log.entries()[ran:]])
    (cold_requests, cold_stored, cold_text), (warm_requests, warm_stored, warm_text) = observed
    assert len(cold_requests) == len(warm_script()) + 2
    assert warm_requests == cold_requests
    assert warm_stored == cold_stored
    assert warm_text == cold_text
    assert runs[1] == runs[0] and "charge_card" in runs[0]
    cold, warm = runners
    assert cold.warm_runs.hits == 0
    assert warm.warm_runs.hits >= 1, "no model step resumed warm"
    return warm


def _killed_turn_script() -> list[ScriptedReply]:
    return [
        reply_tools(
            ("k1", "get_weather", {"city": "Lima"}),
            ("k2", "send_email", {"to": "ana@example.com", "body": "Hi"}),
        ),
        reply_tools(("k3", "update_ticket", {"ticket_id": "t-2", "status": "closed"})),
        reply_tools(("k4", "charge_card", {"amount": 3, "seconds": 0})),
        reply_text("Done."),
    ]


def _without_ids(value: Any) -> Any:
    """A request without the IDs the scripted server made up for earlier output items, which
    count every response it sent (two sessions on one server get different ones)."""
    if isinstance(value, dict):
        return {key: _without_ids(item) for key, item in value.items() if key != "id"}
    if isinstance(value, list):
        return [_without_ids(item) for item in value]
    return value


class WarmWorkerSuite(SharedWorkerSuite):
    """Subclass it with `app = WorkerApp(...)` naming a matrix app built with `warm=`."""

    async def _approved_turn(self, run: SessionRun, flow_type: str, kill: bool) -> list[str]:
        run.model.enqueue(*_killed_turn_script())
        session = await run.client.start_session(flow_type, "Weather, then email Ana.")
        await run.client.wait_for(session, pending_interrupt("k2"))
        first = len(run.model.requests)
        if kill:
            run.kill_and_restart()  # the turn's run state was warm; the new Worker has none
        assert await run.client.resolve_interrupt(session, "k2", approved=True)
        await run.client.wait_for(session, turns_done(1))
        # The bytes as sent, keys in their order, less the server's own IDs.
        return [json.dumps(_without_ids(json.loads(r.raw))) for r in run.model.requests[first:]]

    async def test_a_sigkill_between_two_steps_resumes_cold_with_the_same_requests(
        self, run: SessionRun
    ) -> None:
        cold = await self._approved_turn(run, COLD_FLOW_TYPE, kill=False)
        warm = await self._approved_turn(run, WARM_FLOW_TYPE, kill=True)
        assert len(cold) == 3
        assert warm == cold
