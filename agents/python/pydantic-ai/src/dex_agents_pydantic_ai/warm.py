"""Warm runs: a turn's Pydantic AI run kept open between its Steps on one Worker.

Step mode makes a turn two or more Pydantic AI runs (one per model call), and each run sets
itself up again and walks the history again. A warm run is the run of a RunModel Step that
ended at its deferred tool calls, kept open in a task of its own; the next RunModel Step of
the same turn on the same Worker hands it the recorded tool results, as the cold path would
pass them (`DeferredToolResults`), and the run goes on to its next model response without a
new run's set-up.

An entry stands for exactly one committed run state: it is keyed by session and matched by
a fingerprint of the turn (the turn, the digest of the run state the Step committed, the
stored messages, plan, summary and settings). Any difference, a missing entry (another
Worker, a restart), an exception, a cancelled Step or an evicted entry means the cold path:
the run is rebuilt from the stored state, as without warm runs. Entries are bounded: one per
session, `max_entries` per runner (least recently used evicted first), and each lives at most
`ttl` seconds after the Step that parked it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

from dex_agents.parking import DEFAULT_HOT_WINDOW_SECONDS
from dex_agents.runner import AgentTurnContext, EventWriter
from dex_agents.worker import HOT_WINDOW_ENV
from pydantic_ai import DeferredToolRequests, DeferredToolResults
from pydantic_ai.models import Model
from pydantic_ai.run import AgentRun

from . import _compat
from .deferral import ToolCatalog
from .model_step import ModelCallOutcome, drive_model_call
from .tool_sources import SourceOffer

WARM_RUNS_ENV = "DEX_AGENTS_PYDANTIC_AI_WARM_RUNS"
TASK_NAME = "dex-agents-pydantic-ai-warm-run"
T = TypeVar("T")


def fingerprint(turn: AgentTurnContext, run_state: str | None) -> str:
    """What a warm run must stand for to be resumed: the turn, its committed run state and
    every input a model step reads besides the tool results."""
    last = turn.messages[-1].sequence if turn.messages else -1
    parts = (
        turn.turn_id,
        hashlib.sha256((run_state or "").encode()).hexdigest(),
        str(len(turn.messages)),
        str(last),
        turn.interaction_mode,
        repr(turn.plan),
        repr(turn.context_summary),
        repr(sorted(turn.session_settings.items())),
        repr(turn.enabled_built_in_tools),
    )
    return "\x1f".join(parts)


@dataclass
class _Resume:
    results: DeferredToolResults
    deps: object
    events: EventWriter
    reply: asyncio.Future[ModelCallOutcome]


RunContextOfOutcomes = tuple[ToolCatalog, SourceOffer, Model | str | None]
"""What the runner reads a run's outcomes with: its catalog, source offer and model."""


@dataclass
class WarmEntry:
    """One open run, parked at its deferred tool calls."""

    fingerprint: str
    task: asyncio.Task[None]
    inbox: asyncio.Queue[_Resume | None]
    parked_at: float
    context: RunContextOfOutcomes | None = None

    def close(self) -> None:
        with contextlib.suppress(asyncio.QueueFull):
            self.inbox.put_nowait(None)


Opener = Callable[[], AbstractAsyncContextManager[AgentRun[Any, Any]]]
"""Opens the run: `agent.iter(...)` with the cold path's arguments."""


class WarmRuns:
    """The open runs of one runner, one per session, least recently used evicted first."""

    def __init__(self, max_entries: int, ttl: float) -> None:
        self._max_entries = max_entries
        self._ttl = ttl
        self._entries: OrderedDict[str, WarmEntry] = OrderedDict()
        self.hits = 0
        self.misses = 0

    @property
    def enabled(self) -> bool:
        return self._max_entries > 0

    def __len__(self) -> int:
        return len(self._entries)

    def take(self, flow_id: str, wanted: Callable[[], str]) -> WarmEntry | None:
        """The session's entry if it stands for `wanted()` (computed only when the session has
        one); any other entry of it is closed."""
        entry = self._entries.pop(flow_id, None)
        if entry is None:
            self.misses += 1
            return None
        fresh = time.monotonic() - entry.parked_at <= self._ttl
        if not fresh or entry.task.done() or entry.fingerprint != wanted():
            entry.close()
            self.misses += 1
            return None
        self.hits += 1
        return entry

    def drop(self, flow_id: str) -> None:
        entry = self._entries.pop(flow_id, None)
        if entry is not None:
            entry.close()

    def park(self, flow_id: str, entry: WarmEntry) -> None:
        self.drop(flow_id)
        self._entries[flow_id] = entry
        while len(self._entries) > self._max_entries:
            _, oldest = self._entries.popitem(last=False)
            oldest.close()

    async def resume(
        self, entry: WarmEntry, results: DeferredToolResults, deps: object, events: EventWriter
    ) -> ModelCallOutcome:
        reply: asyncio.Future[ModelCallOutcome] = asyncio.get_running_loop().create_future()
        entry.inbox.put_nowait(_Resume(results, deps, events, reply))
        return await _awaiting(entry, reply)

    async def start(
        self, open_run: Opener, events: EventWriter, stream: bool
    ) -> tuple[ModelCallOutcome, WarmEntry | None]:
        """The cold path's model call, run in a task that keeps the run open afterwards when
        it ended at deferred tool calls with no retry; the entry, if so, is not parked yet."""
        loop = asyncio.get_running_loop()
        first: asyncio.Future[ModelCallOutcome] = loop.create_future()
        inbox: asyncio.Queue[_Resume | None] = asyncio.Queue(maxsize=1)
        parkable: asyncio.Future[bool] = loop.create_future()
        task = asyncio.create_task(
            _own(open_run, events, stream, first, parkable, inbox, self._ttl), name=TASK_NAME
        )
        entry = WarmEntry("", task, inbox, 0.0)
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
    inbox: asyncio.Queue[_Resume | None],
    ttl: float,
) -> None:
    """Owns one run from open to close: the first model call, then each resume."""
    reply = first
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
                _compat.as_new_run(run, command.deps)
                node = _compat.resume_node(run, command.results)
                start = len(run.all_messages())
                outcome = await drive_model_call(run, node, command.events, stream, new_since=start)
                reply.set_result(outcome)
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


async def _next_command(inbox: asyncio.Queue[_Resume | None], ttl: float) -> _Resume | None:
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


def warm_runs_setting(explicit: int | None, environ: Mapping[str, str]) -> int:
    """`warm_runs`, else DEX_AGENTS_PYDANTIC_AI_WARM_RUNS, else 0 (off)."""
    if explicit is None:
        text = environ.get(WARM_RUNS_ENV, "").strip()
        try:
            explicit = int(text) if text else 0
        except ValueError:
            raise ValueError(f"{WARM_RUNS_ENV} must be a whole number, not {text!r}") from None
    if explicit < 0:
        raise ValueError("warm_runs must be 0 (off) or more")
    return explicit


def warm_ttl_setting(explicit: float | None, environ: Mapping[str, str]) -> float:
    """`warm_ttl`, else the Worker's hot window as DEX_AGENTS_HOT_WINDOW_SECONDS sets it,
    else its default: an entry lives no longer than a waiting Step stays in memory."""
    if explicit is not None:
        return explicit
    text = environ.get(HOT_WINDOW_ENV, "").strip()
    try:
        return float(text) if text else DEFAULT_HOT_WINDOW_SECONDS
    except ValueError:
        return DEFAULT_HOT_WINDOW_SECONDS
