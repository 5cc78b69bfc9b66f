"""The Session Flow's Steps run in the test's own process, one Step at a time.

A Worker process takes seconds to start, and a test that waits on one cannot say which Step
runs when. Most branch logic (steering, approvals, rejections, cancellation rules) is the
Steps' own: a StepHandler's check, begin, Execute and commit. `StepHarness` runs them with the
Worker's own driver (`Runtime.run_step`, which is also the Steps' `StepServices`) on a real
database, with no DBOS launch and no Worker process:

    async with StepHarness(flows, database_url) as harness:
        session = await client.start_session("Assistant", "Email Bob.")
        await harness.run_until_idle(session)       # runs the turn up to the approval wait
        await client.resolve_interrupt(session, "w1", approved=False)
        await harness.run_until_idle(session)       # the rejection, then the next model call

`run_until_idle` runs every Step of the session that is scheduled or waiting, in the order
they were scheduled, until none is left: a Step whose wait condition does not hold parks at
once (its hot window is zero), as a Worker's does once its window passed, and a client's
write that may satisfy it takes it out of parked, so the next `run_until_idle` runs it.
A due time (a deadline, a timer) wakes nothing here: tests of waits, of SIGKILL and
recovery, of takeover and of outages keep real Worker processes (`WorkerProcess`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import TracebackType

from sqlalchemy.engine import Connection

from .. import store
from ..db import Database
from ..flow import AgentSessionFlow
from ..runtime import Runtime
from ..steps import STEP_HANDLERS

# The statuses of a Step that a driver may take up now (not running, parked or ended).
_RUNNABLE = ("scheduled", "waiting")
# More Steps than one `run_until_idle` should ever need: a loop in the flow, not a long turn.
MAX_STEPS = 500


class StepHarness:
    """The Worker's Step driver in this process, on `database_url` (its schema created),
    for the sessions of `flows`. Use it as an async context manager."""

    def __init__(self, flows: Sequence[AgentSessionFlow], database_url: str) -> None:
        self.database = Database(database_url)
        self.runtime = Runtime(flows, self.database, STEP_HANDLERS, hot_window=0.0)

    async def __aenter__(self) -> StepHarness:
        self.database.create_schema()
        self.runtime.waker.bind(asyncio.get_running_loop())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.database.close()

    async def runnable(self, session_id: str) -> list[store.StepRow]:
        """The session's Steps a driver may take up now, in the order they were scheduled."""

        def read(conn: Connection) -> list[store.StepRow]:
            rows = store.open_steps(conn, session_id, STEP_HANDLERS)
            return sorted((r for r in rows if r.status in _RUNNABLE), key=lambda r: r.seq)

        return await self.database.read(read)

    async def run(self, session_id: str, step_execution_id: str) -> list[str]:
        """Drives one Step execution to its end, or until it parks; returns the Step
        executions its commit scheduled (none when it parked)."""
        row = await self.database.read(
            lambda conn: store.load_step(conn, session_id, step_execution_id)
        )
        if row is None:
            raise LookupError(f"session {session_id} has no Step execution {step_execution_id}")
        done = await self.runtime.run_step(session_id, step_execution_id, wake=row.wakes)
        return list(done.next_steps)

    async def run_until_idle(self, session_id: str) -> list[str]:
        """Runs the session's runnable Steps, and those they schedule, until none is left;
        returns the Step types it drove, in order (a Step that parked included)."""
        ran: list[str] = []
        while rows := await self.runnable(session_id):
            if len(ran) >= MAX_STEPS:
                raise RuntimeError(f"session {session_id} ran {MAX_STEPS} Steps without rest")
            await self.run(session_id, rows[0].step_execution_id)
            ran.append(rows[0].step_type)
        return ran
