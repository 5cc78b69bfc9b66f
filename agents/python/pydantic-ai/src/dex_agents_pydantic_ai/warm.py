"""Warm runs: a turn's Pydantic AI run kept open between its Steps on one Worker.

Step mode makes a turn two or more Pydantic AI runs (one per model call), and each run sets
itself up again and walks the history again. A warm run is the run of a RunModel Step that
ended at its deferred tool calls, kept open in a task of its own; the next RunModel Step of
the same turn on the same Worker hands it the recorded tool results, as the cold path would
pass them (`DeferredToolResults`), and the run goes on to its next model response without a
new run's set-up.

The lone tool call of a parked run's last response runs in that run too, in its tool Step
(`run_tool`): the run goes on as a new run over the same history would (`as_new_run`, its tools
prepared again without deferral) and runs the call as Pydantic AI runs a call, so the tool sees
the RunContext the cold path's tool Step run gives it (tool_step.py); the run then parks again,
still at its response, and the next model Step resumes it with the committed results as it
would without the tool Step. A tool Step saves a new run's set-up this way.

An entry stands for exactly one committed run state (`dex_agents.warm_states`: keyed by
session, matched by the turn's fingerprint, bounded in number and age). Any difference, a
missing entry (another Worker, a restart), an exception, a cancelled Step or an evicted entry
means the cold path: the run is rebuilt from the stored state, as without warm runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

from dex_agents.runner import EventWriter
from dex_agents.types import AgentToolCall
from dex_agents.warm_states import WarmStates
from pydantic_ai import DeferredToolRequests, DeferredToolResults
from pydantic_ai.models import Model
from pydantic_ai.run import AgentRun

from . import _compat
from .deferral import ToolCatalog
from .model_step import ModelCallOutcome, drive_model_call
from .tool_sources import SourceOffer
from .tool_step import ToolRun, approval, drive_tool_call

TASK_NAME = "dex-agents-pydantic-ai-warm-run"
T = TypeVar("T")


@dataclass
class _Resume:
    results: DeferredToolResults
    deps: object
    events: EventWriter
    reply: asyncio.Future[ModelCallOutcome]


@dataclass
class _RunTool:
    record: AgentToolCall
    approved: bool
    deps: object
    catalog: ToolCatalog
    reply: asyncio.Future[ToolRun]
    context: contextvars.Context
    """The tool Step's context (its `current_tool_execution`, log and trace context), which
    the call runs in over the run's own, as a cold path's run sets its own in the Step's."""


_Command = _Resume | _RunTool


RunContextOfOutcomes = tuple[ToolCatalog, SourceOffer, Model | str | None]
"""What the runner reads a run's outcomes with: its catalog, source offer and model."""


@dataclass
class WarmEntry:
    """One open run, parked at its deferred tool calls."""

    task: asyncio.Task[None]
    inbox: asyncio.Queue[_Command | None]
    context: RunContextOfOutcomes | None = None
    lone_call_id: str | None = None
    """The ID of the last response's tool call when it made only one (it may run warm)."""

    def close(self) -> None:
        with contextlib.suppress(asyncio.QueueFull):
            self.inbox.put_nowait(None)


Opener = Callable[[], AbstractAsyncContextManager[AgentRun[Any, Any]]]
"""Opens the run: `agent.iter(...)` with the cold path's arguments."""


class WarmRuns(WarmStates[WarmEntry]):
    """The open runs of one runner, one per session, least recently used closed first."""

    def __init__(self, max_entries: int, ttl: float) -> None:
        super().__init__(max_entries, ttl, close=WarmEntry.close)

    async def resume(
        self, entry: WarmEntry, results: DeferredToolResults, deps: object, events: EventWriter
    ) -> ModelCallOutcome:
        reply: asyncio.Future[ModelCallOutcome] = asyncio.get_running_loop().create_future()
        entry.inbox.put_nowait(_Resume(results, deps, events, reply))
        return await _awaiting(entry, reply)

    async def run_tool(
        self, entry: WarmEntry, record: AgentToolCall, approved: bool, deps: object
    ) -> ToolRun:
        """Runs the entry's lone call in its run; the entry stays usable unless the run ended
        (the call deferred) or raised."""
        assert entry.context is not None  # set when it was parked
        reply: asyncio.Future[ToolRun] = asyncio.get_running_loop().create_future()
        command = _RunTool(
            record, approved, deps, entry.context[0], reply, contextvars.copy_context()
        )
        entry.inbox.put_nowait(command)
        return await _awaiting(entry, reply)

    async def start(
        self, open_run: Opener, events: EventWriter, stream: bool
    ) -> tuple[ModelCallOutcome, WarmEntry | None]:
        """The cold path's model call, run in a task that keeps the run open afterwards when
        it ended at deferred tool calls with no retry; the entry, if so, is not parked yet."""
        loop = asyncio.get_running_loop()
        first: asyncio.Future[ModelCallOutcome] = loop.create_future()
        inbox: asyncio.Queue[_Command | None] = asyncio.Queue(maxsize=1)
        parkable: asyncio.Future[bool] = loop.create_future()
        task = asyncio.create_task(
            _own(open_run, events, stream, first, parkable, inbox, self.ttl), name=TASK_NAME
        )
        entry = WarmEntry(task, inbox)
        outcome = await _awaiting(entry, first)
        keep = await _awaiting(entry, parkable)
        return outcome, entry if keep else None


async def _awaiting(entry: WarmEntry, reply: asyncio.Future[T]) -> T:
    """The owner's reply; the owner is closed if the Step is cancelled while it waits."""
    try:
        return await asyncio.shield(reply)
    except asyncio.CancelledError:
        entry.close()
        entry.task.cancel()
        raise


async def _own(
    open_run: Opener,
    events: EventWriter,
    stream: bool,
    first: asyncio.Future[ModelCallOutcome],
    parkable: asyncio.Future[bool],
    inbox: asyncio.Queue[_Command | None],
    ttl: float,
) -> None:
    """Owns one run from open to close: the first model call, then each tool call run in it
    and each resume."""
    reply: asyncio.Future[Any] = first
    try:
        async with open_run() as run:
            outcome = await drive_model_call(run, run.next_node, events, stream)
            reply.set_result(outcome)
            while _parkable(run, outcome):
                if not parkable.done():
                    parkable.set_result(True)
                command = await _next_command(inbox, ttl)
                if command is None:
                    return
                reply = command.reply
                if isinstance(command, _RunTool):
                    context = _over(contextvars.copy_context(), command.context)
                    ran = await asyncio.create_task(_run_tool(run, command), context=context)
                    command.reply.set_result(ran)
                    if ran.return_part is None:
                        return  # the run ended with the call deferred: the next step runs cold
                    continue
                _compat.as_new_run(run, command.deps)
                node = _compat.resume_node(run, command.results)
                start = len(run.all_messages())
                outcome = await drive_model_call(run, node, command.events, stream, new_since=start)
                command.reply.set_result(outcome)
    except Exception as error:
        if not reply.done():
            reply.set_exception(error)  # the Step fails with it, as on the cold path
    except BaseException:
        # Cancelled (its Step was, or the Worker stops): nobody waits for the reply any more.
        reply.cancel()
        raise
    finally:
        if not parkable.done():
            parkable.set_result(False)


def _over(run: contextvars.Context, step: contextvars.Context) -> contextvars.Context:
    """The run's context with every variable the Step's context sets set as it sets it."""
    for variable, value in step.items():
        run.run(variable.set, value)
    return run


async def _run_tool(run: AgentRun[Any, Any], command: _RunTool) -> ToolRun:
    """The lone call run in the parked run as a new run over its history runs it: a new run's
    step count, usage and deps, its tools prepared at its first node, not deferred. Afterwards
    the tools defer again (from the resume's model request on, which prepares them again) and
    the call is forgotten, so no retry count carries over to the resume, as in a new run."""
    record, catalog = command.record, command.catalog
    _compat.as_new_run(run, command.deps)
    catalog.defer = False
    _compat.fresh_tools(run)
    try:
        node = _compat.resume_node(run, approval(record, command.approved))
        return await drive_tool_call(run, node, record, catalog)
    finally:
        catalog.defer = True
        _compat.forget_calls(run)


async def _next_command(inbox: asyncio.Queue[_Command | None], ttl: float) -> _Command | None:
    try:
        return await asyncio.wait_for(inbox.get(), timeout=ttl)
    except TimeoutError:
        return None


def _parkable(run: AgentRun[Any, Any], outcome: ModelCallOutcome) -> bool:
    """A run resumes warm only from where a new run would go on alike: it ended at deferred
    tool calls (approvals included), and no retry (of a tool or of output) counted in it,
    since a new run starts those counts afresh."""
    if outcome.next_request is not None or not isinstance(outcome.output, DeferredToolRequests):
        return False
    return not _compat.retries_counted(run)
