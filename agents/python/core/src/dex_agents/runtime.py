"""The generic Step driver on DBOS.

Every Step execution is one short DBOS workflow, `dex_agents.run_step`, whose ID is
`<session>/<step_execution_id>`. The workflow body is the same small driver for every Step:
wait for the Step's condition, begin an attempt (one commit), run Execute (user code) under
the Step's timeout and retry policy, commit the outcome and the next Step executions in one
transaction, then start their workflows. The only DBOS operations in the body are those
starts, taken from the committed row, so a replay after a crash is deterministic whatever the
application code does; session logic never runs as replayed workflow code. DBOS recovers a
workflow a crashed Worker left running; the Step-execution row says how far it got.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from dbos import DBOS, Queue, SetWorkflowID
from sqlalchemy.engine import Connection

from . import parking, store
from .balance import Balancer
from .clock import STEP_DEADLINE, now_text
from .db import Database
from .dbos_internals import has_workflow_status, workflow_status
from .dequeue import queue_wake_key
from .errors import SessionNotFoundError
from .events import StreamingEventWriter
from .flow import AgentSessionFlow
from .logs import current_step
from .message_cache import MessageCache
from .otel import running_attempt
from .parking import DEFAULT_HOT_WINDOW_SECONDS, wake_due
from .routing import STEP_WORKFLOW, step_queue_name, step_workflow_id, wake_workflow_id
from .stepkit import (
    Recovery,
    StepContext,
    StepHandler,
    StepScope,
    StepTx,
    Transition,
    stored_input,
)
from .waker import WAKE_POLL_SECONDS, Waker

if TYPE_CHECKING:
    from .metrics import Metrics
    from .otel import StepTracer

log = logging.getLogger("dex_agents")

# A waiting Step looks at committed state again at least this often, even unwoken.
RECHECK_SECONDS = 30.0
# How long a Step execution whose driver failed waits before it tries again, at first and
# at most.
DRIVER_RETRY_FIRST_SECONDS = 1.0
DRIVER_RETRY_MAX_SECONDS = 60.0
# How many Steps one workflow runs in a row before it hands over to a new one, so that a
# recovered workflow re-reads a bounded chain (one row read per Step). A workflow's start
# and end cost about 6 ms of CPU, so a chain of 16 cost 17% of an engine-only turn; 256
# Steps are about 50 turns, and their replay a few tens of milliseconds.
MAX_INLINE_STEPS = 256
# How long a clean stop gives the Steps that wait to park, after the running attempts ended.
PARK_ON_STOP_SECONDS = 5.0
# Rows of just-scheduled Steps kept for their drivers (see Runtime._done).
MAX_FRESH_ROWS = 4096


# DBOS registers `run_step_workflow` when this module is imported, and runs one DBOS per
# process: the workflow bodies find the Runtime of the Worker that launched it here.
_runtime: Runtime | None = None


def current_runtime() -> Runtime:
    """The Runtime of the Worker running in this process."""
    if _runtime is None:
        raise RuntimeError("no dex-agents Worker is running in this process")
    return _runtime


def set_current_runtime(runtime: Runtime | None) -> None:
    """The Worker's Runtime while it runs (None once it stopped): one per process, as DBOS."""
    global _runtime
    if runtime is not None and _runtime is not None and _runtime is not runtime:
        raise RuntimeError("another dex-agents Worker is running in this process")
    _runtime = runtime


@DBOS.workflow(name=STEP_WORKFLOW)
async def run_step_workflow(session_id: str, step_execution_id: str, wake: int = 0) -> None:
    """Drives a Step execution and the successors it runs inline. `wake`: the workflow of a
    parked Step's wake (see parking.py) drives it only while its row holds that wake."""
    runtime = current_runtime()
    try:
        await _run_chain(runtime, session_id, step_execution_id, wake)
    finally:
        # An attempt begun in a commit whose Step this chain did not reach (an error on the
        # way) no longer counts as running; the Worker that recovers the workflow finds it
        # begun, as after a crash.
        runtime.release_folded(asyncio.current_task())


async def _run_chain(runtime: Runtime, session_id: str, step_execution_id: str, wake: int) -> None:
    done = await runtime.run_step_until_done(session_id, step_execution_id, wake=wake, fold=True)
    # The last successor runs in this workflow and the others are enqueued as workflows of
    # their own, so parallel Steps (go_to_many) run in parallel while a plain chain of Steps
    # costs no workflow starts. A lone sibling of a waiting Step (a turn's one tool call,
    # then ResumeTurn, which waits for it) runs here first, and the waiting Step after it:
    # it would only wait for the sibling. Every choice comes from committed rows, so a replay
    # repeats it exactly.
    held: list[str] = []  # waiting Steps held back while their lone sibling runs
    for step in range(MAX_INLINE_STEPS):
        # Whether this loop runs the Step's inline successor right after it, so the Step's
        # commit may begin that successor's attempt (see `Runtime._inline_successor`).
        fold = step < MAX_INLINE_STEPS - 2
        if not done.next_steps:
            if not held:
                return
            if await _handed_over(runtime, session_id, done, held[-1]):
                return
            done = await runtime.run_step_until_done(
                session_id, held.pop(), likely_ready=True, fold=fold
            )
            continue
        *parallel, last = done.next_steps
        if await _sibling_first(runtime, session_id, done, parallel, last):
            held.append(last)
            done = await runtime.run_step_until_done(session_id, parallel[0], fold=fold, held=last)
            continue
        await _enqueue_step_workflows(runtime, session_id, parallel)
        if not held and await _moved(runtime, session_id, done, last):
            return
        if await _handed_over(runtime, session_id, done, last):
            return
        done = await runtime.run_step_until_done(session_id, last, fold=fold)
    await _enqueue_step_workflows(runtime, session_id, [*done.next_steps, *reversed(held)])


async def _sibling_first(
    runtime: Runtime, session_id: str, done: StepDone, parallel: Sequence[str], last: str
) -> bool:
    """Whether the one Step beside a waiting `last` runs in this workflow before it."""
    if len(parallel) != 1:
        return False
    handlers = runtime.step_handlers
    if handlers[store.step_type_of(parallel[0])].options.waits:
        return False
    if not handlers[store.step_type_of(last)].options.waits:
        return False
    # A workflow recorded by an earlier release started the sibling as a workflow of its
    # own; its replay does so again (DBOS hands back the recorded start).
    return not await _handed_over(runtime, session_id, done, parallel[0])


async def _handed_over(runtime: Runtime, session_id: str, done: StepDone, next_step: str) -> bool:
    """On replay, whether the first run started `next_step` as a workflow of its own (it
    moved the session to another Worker, or, in a release with a shorter chain, ended its
    chain there), so the Step runs there and never here too. A plain read of DBOS's table,
    not a DBOS call, so the replay records nothing."""
    if not done.replayed:
        return False
    workflow_id = step_workflow_id(session_id, next_step)
    return await runtime.database.read(lambda conn: _workflow_exists(conn, workflow_id))


async def _moved(runtime: Runtime, session_id: str, done: StepDone, next_step: str) -> bool:
    """Hands the session to a less busy Worker before `next_step`, when the Step that ended
    allows it and this Worker is the busier (see balance.py): the Step is enqueued on its
    flow type's queue, as a workflow of its own, and the Workers that host the flow type are
    woken to claim it. True when the session left this workflow."""
    if not done.may_move or done.replayed:
        # A replay learns what the first run did from `_handed_over`.
        return False
    workflow_id = step_workflow_id(session_id, next_step)
    flow_type = await runtime.flow_type_of(session_id)
    if done.move is not None:  # the Step asked the balancer before its commit
        move = done.move
    else:
        move = runtime.balancer is not None and runtime.balancer.should_move(flow_type)
    if not move:
        return False
    runtime.forget_fresh(session_id, next_step)
    with SetWorkflowID(workflow_id):
        await runtime.queues[flow_type].enqueue_async(run_step_workflow, session_id, next_step)
    await runtime.database.write(lambda conn: store.wake(conn, queue_wake_key(flow_type)))
    return True


def _workflow_exists(conn: Connection, workflow_id: str) -> bool:
    workflows = workflow_status(conn)
    found = conn.execute(
        sa.select(workflows.c.workflow_uuid).where(workflows.c.workflow_uuid == workflow_id)
    ).first()
    return found is not None


async def _enqueue_step_workflows(
    runtime: Runtime, session_id: str, step_execution_ids: Sequence[str]
) -> None:
    """Starts Steps as workflows of their own, at once in this process (which hosts their flow
    type, since it runs the session), then stamps them with their flow type's queue, so that
    DBOS recovery returns them to that queue, never to a Worker without the flow.

    Enqueueing them instead would wait for the queue's next poll. A Worker that dies between
    a start and its stamp leaves an unqueued workflow: `route_step_workflows` stamps those
    before any recovery hands them out."""
    if not step_execution_ids:
        return
    queue_name = step_queue_name(await runtime.flow_type_of(session_id))
    workflow_ids = [step_workflow_id(session_id, step) for step in step_execution_ids]
    for workflow_id, step_execution_id in zip(workflow_ids, step_execution_ids, strict=True):
        with SetWorkflowID(workflow_id):
            await DBOS.start_workflow_async(run_step_workflow, session_id, step_execution_id)
    await runtime.database.write(lambda conn: _stamp_queue(conn, workflow_ids, queue_name))


def _stamp_queue(conn: Connection, workflow_ids: list[str], queue_name: str) -> None:
    workflows = workflow_status(conn)
    conn.execute(
        workflows.update()
        .where(workflows.c.workflow_uuid.in_(workflow_ids), workflows.c.queue_name.is_(None))
        .values(queue_name=queue_name)
    )


def route_step_workflows(conn: Connection, executor_ids: Sequence[str]) -> int:
    """Stamps the unfinished Step workflows of these Workers that were started without a queue
    with their flow type's queue; call it before DBOS recovery re-enqueues them. Returns how
    many it stamped."""
    if not executor_ids or not has_workflow_status(conn):
        return 0  # DBOS never opened this database: nothing to recover
    workflows = workflow_status(conn)
    unqueued = conn.execute(
        sa.select(workflows.c.workflow_uuid).where(
            workflows.c.name == STEP_WORKFLOW,
            workflows.c.queue_name.is_(None),
            workflows.c.status.in_(("ENQUEUED", "PENDING")),
            workflows.c.executor_id.in_(list(executor_ids)),
        )
    ).scalars()
    by_session: dict[str, list[str]] = defaultdict(list)
    for workflow_id in unqueued:
        by_session[workflow_id.rpartition("/")[0]].append(workflow_id)
    stamped = 0
    for session_id, workflow_ids in by_session.items():
        try:
            flow_type = store.read_session(conn, session_id).flow_type
        except SessionNotFoundError:
            continue
        _stamp_queue(conn, workflow_ids, step_queue_name(flow_type))
        stamped += len(workflow_ids)
    return stamped


@dataclass
class Begun:
    attempt: int = 0
    next_steps: Sequence[str] | None = None


# conn.info key: the successors a commit began (see `Runtime._write_commit`).
_FOLDS = "dex_folded"


@dataclass(frozen=True)
class Folded:
    """An inline successor's first attempt, begun in its predecessor's commit (or the whole
    of a Step without Execute, committed there: `begun.next_steps`), and the task of the
    workflow that drives it next."""

    ctx: StepContext[Any]
    begun: Begun
    owner: object = None


@dataclass(frozen=True)
class TryAgain:
    """A failed attempt that another attempt follows, no sooner than `delay` seconds."""

    delay: float | None = None


class StepCancelled(Exception):
    pass


class WaitOutcome(Enum):
    """How a Step's wait ended."""

    READY = "ready"
    CANCELLED = "cancelled"
    PARKED = "parked"


@dataclass(frozen=True)
class StepDone:
    """How the driver of a Step execution ended: the successors to start; whether the
    session may move to another Worker before them (the Step's `moves_session_after`);
    whether the Step had ended before this driver looked (a replay); and the balancer's
    answer, when the Step asked it before its commit (None: ask after)."""

    next_steps: Sequence[str]
    may_move: bool = False
    replayed: bool = False
    move: bool | None = None


class _WaitCount:
    """A waiting Step's driver in `Runtime._waiting`, which a clean stop lets reach zero before
    it stops: counted from the driver's start (`run_step`), so a stop that begins before the
    driver's first look (the commit that scheduled the Step has just ended) lets it park too,
    its wait parking at once while the Worker drains; counted again in each later wait; no
    longer once a wait ended or the driver holds."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._counted = False
        self.begin()

    def begin(self) -> None:
        if not self._counted:
            self._counted = True
            self._runtime._waiting += 1

    def end(self) -> None:
        if self._counted:
            self._counted = False
            self._runtime._waiting -= 1


# The count of the waiting Step this task drives, if it drives one (`run_step`).
_wait_count: contextvars.ContextVar[_WaitCount | None] = contextvars.ContextVar(
    "dex_wait_count", default=None
)


class Runtime:
    """What the driver needs: the flows, the Step table, the database, wake-ups, and the
    running Steps. It is also the Steps' `StepServices`."""

    def __init__(
        self,
        flows: Sequence[AgentSessionFlow],
        database: Database,
        step_handlers: Mapping[str, StepHandler[Any, Any]],
        *,
        wake_poll_interval: float = WAKE_POLL_SECONDS,
        retry_backoff_seconds: float = 0.5,
        tracer: StepTracer | None = None,
        hot_window: float = DEFAULT_HOT_WINDOW_SECONDS,
    ) -> None:
        self.flows = {flow.flow_type: flow for flow in flows}
        # Flow types hosted before they can be served (a remote flow whose runner is not up
        # yet): their Steps wait in `_flow_of` until `serve_flow` hands the flow over.
        self._coming: dict[str, asyncio.Future[AgentSessionFlow]] = {}
        self.step_handlers = step_handlers
        # The DBOS queue of each hosted flow type, set by the Worker once DBOS launched.
        self.queues: dict[str, Queue] = {}
        # Whether a session whose turn begins moves to a less busy Worker; set by the Worker.
        self.balancer: Balancer | None = None
        self.database = database
        self.waker = Waker(database, wake_poll_interval)
        self.messages = MessageCache()
        self.retry_backoff_seconds = retry_backoff_seconds
        # How long a waiting Step stays in memory before it parks (see parking.py).
        self.hot_window = hot_window
        # OpenTelemetry spans of the Steps (dex_agents.otel); None while tracing is off.
        self.tracer: StepTracer | None = tracer
        # Prometheus metrics (dex_agents.metrics); None while they are off. Set by the Worker.
        self.metrics: Metrics | None = None
        self._running: dict[str, dict[str, asyncio.Task[Any]]] = defaultdict(dict)
        self._background: set[asyncio.Task[None]] = set()
        self._flow_types: dict[str, str] = {}
        # The rows of Steps this Worker's commits just scheduled, until their driver starts:
        # a successor's driver begins without reading its row back (see `run_step`).
        self._fresh: dict[tuple[str, str], store.StepRow] = {}
        # The inline successors whose first attempt their predecessor's commit began, until
        # their driver (the same workflow, next) takes it: each counts as a running attempt.
        self._folded: dict[tuple[str, str], Folded] = {}
        # Draining (a clean stop): no new attempt begins; running ones finish and commit.
        self._draining = False
        self._attempts_running = 0
        # Drivers of waiting Steps that a clean stop lets park first (see `_WaitCount`).
        self._waiting = 0
        self._drained = asyncio.Event()
        database.on_wake = self.waker.notify_threadsafe
        self.waker.add_remote_listener(self._check_cancellations)

    # The driver ---------------------------------------------------------------------------

    async def run_step_until_done(
        self,
        session_id: str,
        step_execution_id: str,
        *,
        likely_ready: bool = False,
        wake: int = 0,
        fold: bool = False,
        held: str | None = None,
    ) -> StepDone:
        """`run_step`, tried again with capped backoff when the driver itself fails (user
        code's failures are the Step's own business and never get here): a Step execution's
        workflow never ends in an error, so no session is stranded by a defect or by a value
        the database refused; a fixed deploy picks the Step up where it stood."""
        delay = DRIVER_RETRY_FIRST_SECONDS
        logged = False
        while True:
            try:
                return await self.run_step(
                    session_id,
                    step_execution_id,
                    likely_ready=likely_ready,
                    wake=wake,
                    fold=fold,
                    held=held,
                )
            except Exception:
                # A Step that waited while its Worker stopped wakes to a closed database: it
                # stays pending, for the Worker that takes it over, like any other.
                await self._hold_while_draining()
                if not logged:
                    log.exception(
                        "Step execution %s of session %s could not go on; trying again "
                        "every %g s at most",
                        step_execution_id,
                        session_id,
                        DRIVER_RETRY_MAX_SECONDS,
                    )
                    logged = True
            await asyncio.sleep(delay)
            delay = min(delay * 2, DRIVER_RETRY_MAX_SECONDS)

    async def run_step(
        self,
        session_id: str,
        step_execution_id: str,
        *,
        likely_ready: bool = False,
        wake: int = 0,
        fold: bool = False,
        held: str | None = None,
    ) -> StepDone:
        """Drives a Step execution to its end, or until it parks. `likely_ready`: a waiting
        Step whose condition probably holds (its lone sibling just ended) looks at it first
        in its commit, saving a read; when it does not hold, the Step waits as usual.
        `fold`: the caller drives the Step's inline successor right after this, so the Step's
        commit may begin that successor's first attempt in the same transaction; `held`: the
        waiting Step the caller drives next when this one schedules nothing (a lone tool
        call's ResumeTurn), which that commit may then commit too.

        A Step has one driver at a time: the workflow that scheduled it until it parks, then
        the workflow of each wake in turn. A driver whose wake is not the row's (the Step
        parked, or was woken since) ends here, on its first run and on a replay alike."""
        folded = self._folded.pop((session_id, step_execution_id), None)
        if folded is not None:
            # Its predecessor's commit began its first attempt: run it, even while draining
            # (a begun attempt finishes and commits, as every running one does).
            self._fresh.pop((session_id, step_execution_id), None)
            return await self._run_folded(folded, fold, held)
        drive = functools.partial(
            self._drive, session_id, step_execution_id, likely_ready, wake, fold, held
        )
        if not self.step_handlers[store.step_type_of(step_execution_id)].options.waits:
            await self._hold_while_draining()
            return await drive()
        count = _WaitCount(self)
        token = _wait_count.set(count)
        try:
            return await drive()
        finally:
            count.end()
            _wait_count.reset(token)

    async def _drive(
        self,
        session_id: str,
        step_execution_id: str,
        likely_ready: bool,
        wake: int,
        fold: bool,
        held: str | None,
    ) -> StepDone:
        """`run_step` past its hold: loads the Step and drives it."""
        row = self._fresh.pop((session_id, step_execution_id), None)
        if row is None:
            row = await self.database.read(
                lambda conn: store.load_step(conn, session_id, step_execution_id)
            )
        if row is None:
            log.error(
                "Step execution %s of session %s does not exist", step_execution_id, session_id
            )
            return StepDone(())
        if row.wakes != wake or row.status == store.PARKED:
            return StepDone(())
        handler = self.step_handlers[row.step_type]
        may_move = handler.options.moves_session_after
        if row.status in ("succeeded", "failed"):
            return StepDone(row.next_steps, may_move, replayed=True)
        if row.status == "cancelled":
            return StepDone(())
        step_input, recovery = stored_input(row)
        ctx: StepContext[Any] = StepContext(
            services=self,
            flow=await self._flow_of(session_id),
            session_id=session_id,
            step_execution_id=step_execution_id,
            step_type=row.step_type,
            step_input=step_input,
            recovery=recovery,
            checkpoint=row.checkpoint,
            scheduled_at=row.scheduled_at,
        )
        current_step.set(ctx)  # the IDs of JSON log lines (logs.py)
        if self.metrics is not None and wake:  # metrics: wake latency
            workflow_id = wake_workflow_id(session_id, step_execution_id, wake)
            await self.metrics.woken(self.database, ctx, workflow_id)
        # Whether the next commit looks at the wait condition itself (only the first one).
        check = likely_ready and handler.options.waits and not handler.has_execute
        if handler.options.waits and not check:
            # A commit on the event loop (SQLite) delivers its wake-ups once the loop runs
            # again: let them arrive before the wait takes its generation, or the commit
            # that scheduled this Step wakes its first wait at once, for one more look.
            await asyncio.sleep(0)
        while True:
            waits = handler.options.waits and not check
            if waits and await self._wait(ctx, handler) is not WaitOutcome.READY:
                return StepDone(())  # cancelled, or parked
            if self.metrics is not None:  # metrics: Steps started, Step latency
                self.metrics.step_began(ctx, first=row.attempts == 0)
            if handler.has_execute:
                # A Step after which the session may move asks the balancer once it ended;
                # its successor's attempt then begins where the successor runs.
                fold_execute = fold and not (may_move and self.balancer is not None)
                next_steps = await self._run_attempts(ctx, handler, fold=fold_execute, held=held)
                return self._done(ctx, next_steps, may_move)
            # A Step after which the session may move asks the balancer before its commit,
            # which then begins the successor's attempt only when the session stays.
            move = await self._should_move(session_id) if fold and may_move else None
            fold_now = fold and not move
            commit = functools.partial(
                self._commit,
                ctx=ctx,
                handler=handler,
                result=None,
                check=check,
                fold=fold_now,
                held=held,
            )
            committed = await self._write_commit(ctx, commit, fold_now)
            if committed is not None:
                return self._done(ctx, committed, may_move, move)
            check = False

    async def _should_move(self, session_id: str) -> bool | None:
        """The balancer's answer (a yes counts the move at once), None without a balancer."""
        if self.balancer is None:
            return None
        return self.balancer.should_move(await self.flow_type_of(session_id))

    async def _run_folded(self, folded: Folded, fold: bool, held: str | None) -> StepDone:
        """Drives a Step whose first attempt its predecessor's commit began."""
        ctx, begun = folded.ctx, folded.begun
        handler = self.step_handlers[ctx.step_type]
        current_step.set(ctx)
        if self.metrics is not None:  # metrics: Steps started, Step latency
            self.metrics.step_began(ctx, first=True)
        next_steps = await self._run_attempts(ctx, handler, begun=begun, fold=fold, held=held)
        return self._done(ctx, next_steps, handler.options.moves_session_after)

    async def _write_commit(
        self,
        ctx: StepContext[Any],
        commit: Callable[[Connection], Sequence[str] | None],
        fold: bool,
    ) -> Sequence[str] | None:
        """Runs a Step's commit. When it may begin its inline successor (`fold`), one more
        attempt counts as running from before the transaction, so a clean stop that begins
        meanwhile waits for it; once it committed, each successor it began counts instead,
        until its driver (this workflow, next) ran it."""
        if not fold or self._draining:
            return await self.database.write(commit)
        self._attempts_running += 1
        folds: list[Folded] = []
        tries = 0

        def run(conn: Connection) -> Sequence[str] | None:
            nonlocal tries
            tries += 1
            if tries > 1:
                # The try before rolled back, and a successor's begin in it may have cached
                # messages it read in that transaction: read them again.
                self.messages = MessageCache()
            folds.clear()
            conn.info[_FOLDS] = folds
            try:
                return commit(conn)
            finally:
                conn.info.pop(_FOLDS, None)

        try:
            committed = await self.database.write(run)
        except BaseException:
            self.messages = MessageCache()
            raise
        finally:
            self._attempt_ended()
        owner = asyncio.current_task()
        for folded in folds:
            key = (folded.ctx.session_id, folded.ctx.step_execution_id)
            self._folded[key] = Folded(folded.ctx, folded.begun, owner)
            self._attempts_running += 1
        return committed

    def _done(
        self,
        ctx: StepContext[Any],
        next_steps: Sequence[str],
        may_move: bool,
        move: bool | None = None,
    ) -> StepDone:
        """The driver's end; keeps the rows of the successors its commit scheduled, which
        reflect that commit exactly. A successor's begin re-reads its row under the session's
        lock, so one cancelled since then is still seen."""
        for step_execution_id in next_steps:
            row = ctx.successors.get(step_execution_id)
            if row is not None:
                self._fresh[(ctx.session_id, step_execution_id)] = row
        if len(self._fresh) > MAX_FRESH_ROWS:
            # Rows of successors that ran elsewhere (claimed through the queue); reading a
            # row back is always correct.
            self._fresh.clear()
        return StepDone(next_steps, may_move, move=move)

    def forget_fresh(self, session_id: str, step_execution_id: str) -> None:
        self._fresh.pop((session_id, step_execution_id), None)

    async def _run_attempts(
        self,
        ctx: StepContext[Any],
        handler: StepHandler[Any, Any],
        *,
        begun: Begun | None = None,
        fold: bool = False,
        held: str | None = None,
    ) -> Sequence[str]:
        """Begins attempts until one commits or the failure route takes over. `begun`: the
        first attempt, already begun (and counted as running) by the predecessor's commit."""
        while True:
            if begun is None:
                await self._hold_while_draining()
                self._attempts_running += 1
            try:
                outcome = await self._run_attempt(ctx, handler, begun, fold=fold, held=held)
            finally:
                begun = None
                self._attempt_ended()
            if not isinstance(outcome, TryAgain):
                return outcome
            if self.metrics is not None:  # metrics: retries
                self.metrics.retried(ctx)
            backoff = self.retry_backoff_seconds * 2 ** (ctx.attempt - 1)
            await asyncio.sleep(max(backoff, outcome.delay or 0.0))

    def _attempt_ended(self) -> None:
        self._attempts_running -= 1
        if self._draining and not self._attempts_running:
            self._drained.set()

    async def _run_attempt(
        self,
        ctx: StepContext[Any],
        handler: StepHandler[Any, Any],
        begun: Begun | None = None,
        *,
        fold: bool = False,
        held: str | None = None,
    ) -> Sequence[str] | TryAgain:
        """One attempt from its begin to its commit, or TryAgain when it failed and another
        attempt may follow. `begun`: the attempt's begin, already committed."""
        if begun is None:
            begun = await self.database.write(lambda conn: self._begin_attempt(conn, ctx, handler))
        if begun.next_steps is not None:
            return begun.next_steps
        ctx.attempt = begun.attempt
        started = time.monotonic()
        try:
            if self.tracer is None:
                result = await self._execute(ctx, handler)
            else:
                result = await self._traced_execute(ctx, handler, self.tracer)
        except StepCancelled:
            await self._write_unflushed(ctx)
            return []
        except Exception as error:
            if self.metrics is not None:  # metrics: failed attempts, model-call latency
                self.metrics.attempt_ended(ctx, time.monotonic() - started, error)
            return await self._record_failed_attempt(ctx, handler, error)
        if self.metrics is not None:  # metrics: model-call latency
            self.metrics.attempt_ended(ctx, time.monotonic() - started, None)
        return await self._commit_result(ctx, handler, result, fold=fold, held=held)

    async def _write_unflushed(self, ctx: StepContext[Any]) -> None:
        """Writes what a cancelled attempt streamed and left unwritten (no commit follows)."""
        if ctx.unflushed:
            records = list(ctx.unflushed)
            await self.database.write(
                lambda conn: store.append_events_unlocked(conn, ctx.session_id, records)
            )
            ctx.unflushed.clear()

    async def _traced_execute(
        self, ctx: StepContext[Any], handler: StepHandler[Any, Any], tracer: StepTracer
    ) -> Any:
        """Execute inside the attempt's span: it ends, with the outcome, before the commit."""
        span = tracer.attempt(ctx)
        try:
            with running_attempt(span):
                result = await self._execute(ctx, handler)
        except BaseException as error:
            span.end(None, error)
            raise
        span.end(result, None)
        return result

    async def drain(self, timeout: float) -> int:
        """Begins no more attempts and waits up to `timeout` for the running ones to commit,
        so a clean stop leaves no attempt half done. Returns how many still run."""
        self._draining = True
        # Every Step that waits parks now, so the Worker that follows recovers none of them.
        self.waker.wake_all()
        if self._attempts_running:
            log.info(
                "stopping: waiting up to %g s for %d running Steps to finish",
                timeout,
                self._attempts_running,
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._drained.wait(), timeout)
        await self._parked_all(deadline=time.monotonic() + PARK_ON_STOP_SECONDS)
        return self.attempts_running

    async def _parked_all(self, deadline: float) -> None:
        """Gives the Steps that wait the moment their park takes (one transaction each)."""
        while self._waiting and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    @property
    def attempts_running(self) -> int:
        return self._attempts_running

    async def _hold_while_draining(self) -> None:
        # The workflow stays pending until the Worker stops; whoever takes it over goes on here.
        if self._draining:
            count = _wait_count.get()
            if count is not None:
                count.end()  # it will not park: a clean stop does not wait for it
            await asyncio.Event().wait()

    async def _commit_result(
        self,
        ctx: StepContext[Any],
        handler: StepHandler[Any, Any],
        result: Any,
        *,
        fold: bool,
        held: str | None,
    ) -> Sequence[str]:
        commit = functools.partial(
            self._commit,
            ctx=ctx,
            handler=handler,
            result=result,
            fence=ctx.attempt,
            fold=fold,
            held=held,
        )
        committed = await self._write_commit(ctx, commit, fold)
        ctx.unflushed.clear()
        return committed or []

    async def _record_failed_attempt(
        self, ctx: StepContext[Any], handler: StepHandler[Any, Any], error: Exception
    ) -> Sequence[str] | TryAgain:
        outcome = await self.database.write(
            lambda conn: self._attempt_failed(conn, ctx, handler, error)
        )
        ctx.unflushed.clear()
        return outcome

    async def flow_type_of(self, session_id: str) -> str:
        flow_type = self._flow_types.get(session_id)
        if flow_type is None:
            session = await self.database.read(lambda conn: store.read_session(conn, session_id))
            flow_type = self._flow_types[session_id] = session.flow_type
        return flow_type

    def expect_flow(self, flow_type: str) -> None:
        """Hosts `flow_type` before its flow can be served: its Steps wait for `serve_flow`.
        Called in the Worker's event loop."""
        self._coming[flow_type] = asyncio.get_running_loop().create_future()

    def serve_flow(self, flow: AgentSessionFlow) -> None:
        """Serves an expected flow type: the Steps that waited for it go on."""
        self.flows[flow.flow_type] = flow
        coming = self._coming.pop(flow.flow_type, None)
        if coming is not None and not coming.done():
            coming.set_result(flow)

    @property
    def flow_types(self) -> list[str]:
        """Every hosted flow type, served or expected."""
        return [*self.flows, *self._coming]

    async def _flow_of(self, session_id: str) -> AgentSessionFlow:
        flow_type = await self.flow_type_of(session_id)
        flow = self.flows.get(flow_type)
        coming = self._coming.get(flow_type) if flow is None else None
        if coming is not None:
            # Nothing is written while it waits: a Worker that stops first leaves the Step as
            # it found it, for whichever Worker takes it over.
            flow = await asyncio.shield(coming)
        if flow is None:
            # Steps reach only the Workers that host their flow type (one queue per flow
            # type), so this is a defect; the Step waits for it to be fixed, intact.
            raise RuntimeError(
                f"session {session_id} is a {flow_type!r} session, which this Worker does not "
                f"host (it hosts {', '.join(sorted(self.flows)) or 'no flow'})"
            )
        return flow

    async def _wait(self, ctx: StepContext[Any], handler: StepHandler[Any, Any]) -> WaitOutcome:
        """Waits, hot, until the Step's condition holds, or parks it once the hot window
        passed with the condition still not holding (see parking.py). Counted for a clean
        stop until it ends (`_WaitCount`)."""
        count = _wait_count.get()
        if count is not None:
            count.begin()
        try:
            return await self._wait_or_park(ctx, handler)
        finally:
            if count is not None:
                count.end()

    async def _wait_or_park(
        self, ctx: StepContext[Any], handler: StepHandler[Any, Any]
    ) -> WaitOutcome:
        hot_until = time.monotonic() + self.hot_window
        while True:
            generation = self.waker.generation(ctx.session_id)

            def check(conn: Connection) -> Any:
                row = store.load_step(conn, ctx.session_id, ctx.step_execution_id)
                if row is None or row.status == "cancelled":
                    return None
                return handler.check(ctx, conn)

            wait = await self.database.read(check)
            if wait is None:
                return WaitOutcome.CANCELLED
            if wait.ready:
                return WaitOutcome.READY
            hot = hot_until - time.monotonic()
            if hot <= 0 or self._draining:
                outcome = await self.database.write(lambda conn: self._park(conn, ctx, handler))
                if outcome is not None:
                    return outcome
                continue  # it became ready: look again and go on
            timeout = min(RECHECK_SECONDS, hot)
            if wait.deadline is not None:
                timeout = min(timeout, wait.deadline - time.time())
            await self.waker.wait(ctx.session_id, generation, timeout)

    def _park(
        self, conn: Connection, ctx: StepContext[Any], handler: StepHandler[Any, Any]
    ) -> WaitOutcome | None:
        """Parks the Step unless its condition holds now (None: look again), under the
        session's lock, which every write of what it waits for takes too."""
        store.lock_session(conn, ctx.session_id)
        row = store.load_step(conn, ctx.session_id, ctx.step_execution_id)
        if row is None or row.status in ("succeeded", "failed", "cancelled", store.PARKED):
            return WaitOutcome.CANCELLED
        wait = handler.check(ctx, conn)
        if wait.ready:
            return None
        store.park_step(conn, ctx.session_id, ctx.step_execution_id, wait.deadline)
        return WaitOutcome.PARKED

    async def wake_due_forever(self) -> None:
        """Wakes the parked Steps of the hosted flow types when their due time comes. Sleeps
        until the earliest due time it read, or until a commit parks a Step with a due time
        (`store.DUE_WAKE_KEY`; the generation read first makes a commit between the look and
        the sleep impossible to miss), or `DUE_RESCAN_SECONDS` at most."""
        flow_types = self.flow_types
        failing = False
        while True:
            generation = self.waker.generation(store.DUE_WAKE_KEY)
            try:
                timeout = await self._wake_due(flow_types)
                failing = False
            except Exception:
                if not failing:
                    log.exception("waking due parked Steps failed; trying again")
                failing = True
                timeout = parking.DUE_RETRY_SECONDS
            await self.waker.wait(store.DUE_WAKE_KEY, generation, timeout)

    async def _wake_due(self, flow_types: list[str]) -> float:
        """Wakes the Steps due now; returns how long to sleep before the next look."""
        due_at = await self.database.read(lambda conn: store.next_due(conn, flow_types))
        now = time.time()
        if due_at is None or due_at > now:
            # A little after the due time: a look a moment early would find nothing due.
            wait = parking.DUE_RESCAN_SECONDS if due_at is None else due_at - now + 0.002
            return min(wait, parking.DUE_RESCAN_SECONDS)
        enqueuer = self.database.enqueuer
        woke = await self.database.write(
            lambda conn: wake_due(conn, time.time(), flow_types, enqueuer)
        )
        # Look again at once for the rest (a batch has a limit); a look that woke nothing
        # (another Worker was first) looks again a moment later.
        return 0.0 if woke else parking.DUE_RETRY_SECONDS

    def _begin_attempt(
        self, conn: Connection, ctx: StepContext[Any], handler: StepHandler[Any, Any]
    ) -> Begun:
        session = store.lock_session(conn, ctx.session_id)
        row = store.load_step(conn, ctx.session_id, ctx.step_execution_id)
        if row is None or row.status in ("succeeded", "failed", "cancelled"):
            return Begun(next_steps=row.next_steps if row else [])
        return self._begin_row(conn, session, row, ctx, handler)

    def _begin_row(
        self,
        conn: Connection,
        session: store.Session,
        row: store.StepRow,
        ctx: StepContext[Any],
        handler: StepHandler[Any, Any],
    ) -> Begun:
        """Begins the attempt after `row`'s, under the session's lock (`session` locked)."""
        tx = StepTx(conn, session, ctx)
        attempt = row.attempts + 1
        ctx.attempt = attempt
        ctx.progress_started = row.progress_started
        if attempt > handler.options.max_attempts:
            # The last attempt never reported back: its Worker stopped while it ran.
            detail = row.error or (
                f"the Worker stopped while attempt {row.attempts} of {ctx.step_execution_id} ran"
            )
            progress = "NOT_COMPLETED" if row.progress_started else "NOT_STARTED"
            return Begun(
                next_steps=self._route_failure(ctx, tx, handler, detail, progress, "WorkerLost")
            )
        started: dict[str, Any] = {"started_at": now_text()} if row.started_at is None else {}
        transition = handler.begin(ctx, tx)
        if transition is not None:
            store.update_step(
                conn, ctx.session_id, ctx.step_execution_id, attempts=attempt, **started
            )
            return Begun(next_steps=self._finish_as_decided(tx, transition))
        if self.tracer is not None:
            ctx.trace_context = session.trace_context
        if tx.progress_started:
            started["progress_started"] = True
        store.update_step(
            conn,
            ctx.session_id,
            ctx.step_execution_id,
            status="running",
            attempts=attempt,
            **started,
        )
        self._flush(tx)
        return Begun(attempt=attempt)

    async def _execute(self, ctx: StepContext[Any], handler: StepHandler[Any, Any]) -> Any:
        bound = handler.timeout(ctx.flow.options)
        timeout = bound.total_seconds() if bound is not None else None
        # The task copies the context: its remote runner calls read the deadline.
        token = STEP_DEADLINE.set(None if timeout is None else time.time() + timeout)
        try:
            task = asyncio.ensure_future(asyncio.wait_for(handler.execute(ctx), timeout))
        finally:
            STEP_DEADLINE.reset(token)
        running = self._running[ctx.session_id]
        running[ctx.step_execution_id] = task
        try:
            return await task
        except asyncio.CancelledError:
            if task.cancelled() and not _current_task_cancelling():
                raise StepCancelled() from None
            raise
        except TimeoutError:
            raise TimeoutError(
                f"{ctx.step_execution_id} attempt {ctx.attempt} timed out after {timeout:g} s"
            ) from None
        finally:
            running.pop(ctx.step_execution_id, None)
            if not running:
                self._running.pop(ctx.session_id, None)

    def _attempt_failed(
        self,
        conn: Connection,
        ctx: StepContext[Any],
        handler: StepHandler[Any, Any],
        error: BaseException,
    ) -> Sequence[str] | TryAgain:
        """Records a failed attempt; routes to the failure route once attempts ran out or
        the Step judges that another attempt cannot help."""
        session = store.lock_session(conn, ctx.session_id)
        store.write_events(conn, session, ctx.unflushed)
        row = store.load_step(conn, ctx.session_id, ctx.step_execution_id)
        if row is None or row.status != "running" or row.attempts != ctx.attempt:
            _save_if_streamed(conn, session, ctx)
            return []
        detail = str(error) or type(error).__name__
        advice = handler.retry_advice(error)
        last = ctx.attempt >= handler.options.max_attempts or not advice.retry
        why = f" ({advice.reason})" if advice.reason else ""
        log.warning("%s attempt %d failed%s: %s", ctx.step_execution_id, ctx.attempt, why, detail)
        if not last:
            store.update_step(conn, ctx.session_id, ctx.step_execution_id, error=detail)
            _save_if_streamed(conn, session, ctx)
            return TryAgain(advice.delay)
        progress = "NOT_COMPLETED" if row.progress_started else "NOT_STARTED"
        tx = StepTx(conn, session, ctx)
        return self._route_failure(ctx, tx, handler, detail, progress, type(error).__name__)

    def _route_failure(
        self,
        ctx: StepContext[Any],
        tx: StepTx,
        handler: StepHandler[Any, Any],
        detail: str,
        progress: str,
        error_type: str,
    ) -> Sequence[str]:
        route = handler.failure_route(ctx, tx)
        recovery = Recovery(detail, progress, error_type)
        if route is None:
            log.error("%s failed with no failure route: %s", tx.ctx.step_execution_id, detail)
            return self._finish(tx, Transition(), "failed", error=detail)
        routed = Transition(next=[(route, ctx.step_input)])
        return self._finish(tx, routed, "failed", error=detail, recovery=recovery)

    def _commit(
        self,
        conn: Connection,
        ctx: StepContext[Any],
        handler: StepHandler[Any, Any],
        result: Any,
        *,
        fence: int | None = None,
        check: bool = False,
        fold: bool = False,
        held: str | None = None,
    ) -> Sequence[str] | None:
        """Records the outcome; None means wait again. A fenced-out attempt commits only the
        events it streamed. `fold`: the caller runs the inline successor next (or `held`,
        when there is none), so its first attempt may begin here (`_begin_successor`)."""
        session = store.lock_session(conn, ctx.session_id)
        store.write_events(conn, session, ctx.unflushed)
        row = store.load_step(conn, ctx.session_id, ctx.step_execution_id)
        if row is None or row.status in ("succeeded", "failed", "cancelled"):
            _save_if_streamed(conn, session, ctx)
            return row.next_steps if row and row.status != "cancelled" else []
        if fence is not None and (row.status != "running" or row.attempts != fence):
            _save_if_streamed(conn, session, ctx)
            return []
        if check and not handler.check(ctx, conn).ready:
            _save_if_streamed(conn, session, ctx)
            return None
        tx = StepTx(conn, session, ctx)
        transition = handler.commit(ctx, tx, result)
        if transition.wait_again:
            self._flush(tx)
            return None
        if fence is None:
            # A Step that waits started when it began waiting (schedule_step).
            started = {"started_at": now_text()} if row.started_at is None else {}
            store.update_step(
                conn, ctx.session_id, ctx.step_execution_id, attempts=row.attempts + 1, **started
            )
        next_steps = self._finish_as_decided(tx, transition)
        if fold:
            self._begin_successor(tx, next_steps, held)
        return next_steps

    def _inline_successor(self, next_steps: Sequence[str]) -> str | None:
        """The successor a first run of `run_step_workflow` drives next in the same workflow:
        the lone sibling of a waiting last Step, else the last."""
        if not next_steps:
            return None
        *parallel, last = next_steps
        waits = [self.step_handlers[store.step_type_of(s)].options.waits for s in next_steps]
        if len(parallel) == 1 and not waits[0] and waits[1]:
            return parallel[0]
        return last

    def _begin_successor(self, tx: StepTx, next_steps: Sequence[str], held: str | None) -> None:
        """Begins the inline successor in its predecessor's commit: the first attempt of one
        that runs user code at once (an Execute and no wait), or the commit of a waiting
        `held` Step without Execute whose condition holds now (and, in turn, its own inline
        successor's begin): one transaction instead of two or three. A crash after this
        commit finds the successor begun (or ended), as after its own transaction today;
        its driver, this workflow next, takes what was begun here (`run_step`)."""
        folds: list[Folded] | None = tx.conn.info.get(_FOLDS)
        if folds is None or self._draining:
            return
        successor = self._inline_successor(next_steps) if next_steps else held
        if successor is None:
            return
        handler = self.step_handlers[store.step_type_of(successor)]
        if next_steps and (handler.options.waits or not handler.has_execute):
            return  # it waits, or runs no user code: its driver looks at it first
        if not next_steps and (handler.has_execute or not handler.options.waits):
            return
        row = (
            tx.ctx.successors.get(successor)
            if next_steps
            else store.load_step(tx.conn, tx.session.session_id, successor)
        )
        if row is None or row.status not in ("scheduled", "waiting") or row.wakes:
            return
        step_input, recovery = stored_input(row)
        ctx: StepContext[Any] = StepContext(
            services=self,
            flow=tx.ctx.flow,
            session_id=row.session_id,
            step_execution_id=successor,
            step_type=row.step_type,
            step_input=step_input,
            recovery=recovery,
            checkpoint=row.checkpoint,
            scheduled_at=row.scheduled_at,
        )
        if handler.has_execute:
            folds.append(Folded(ctx, self._begin_row(tx.conn, tx.session, row, ctx, handler)))
            return
        if handler.options.moves_session_after:
            return  # it asks the balancer before its commit
        # The held Step's condition is looked at in this transaction, as its driver's
        # `likely_ready` commit would; when it does not hold, nothing of it is written here.
        committed = self._commit(tx.conn, ctx, handler, None, check=True, fold=True)
        if committed is not None:
            folds.append(Folded(ctx, Begun(next_steps=committed)))

    def release_folded(self, owner: object) -> None:
        """Gives back the running count of the successors begun for the workflow `owner`
        that it did not drive (it ended on an error on the way)."""
        for key in [key for key, folded in self._folded.items() if folded.owner is owner]:
            del self._folded[key]
            self._attempt_ended()

    def _finish_as_decided(self, tx: StepTx, transition: Transition) -> list[str]:
        """Ends the Step as its begin or commit decided: `failed` with the Transition's error
        when it has one, else `succeeded`."""
        if transition.error is not None:
            return self._finish(tx, transition, "failed", error=transition.error)
        return self._finish(tx, transition, "succeeded")

    def _finish(
        self,
        tx: StepTx,
        transition: Transition,
        status: str,
        error: str | None = None,
        recovery: Recovery | None = None,
    ) -> list[str]:
        """Ends the Step and schedules its next Steps (a failure route with its `recovery`)."""
        conn, session = tx.conn, tx.session
        rows = [
            store.schedule_step(
                conn,
                session,
                step_type,
                step_input,
                status="waiting" if self.step_handlers[step_type].options.waits else "scheduled",
                recovery=None if recovery is None else recovery.to_json(),
            )
            for step_type, step_input in transition.next
        ]
        tx.ctx.successors = {row.step_execution_id: row for row in rows}
        next_ids = [row.step_execution_id for row in rows]
        store.update_step(
            conn,
            session.session_id,
            tx.ctx.step_execution_id,
            status=status,
            error=error,
            next_steps=next_ids,
            ended_at=now_text(),
        )
        self._flush(tx, ended=status)
        return next_ids

    def _flush(self, tx: StepTx, ended: str | None = None) -> None:
        if self.metrics is not None:  # metrics: Steps finished, tool calls' final statuses
            self.metrics.committing(tx, ended)
        capacity = tx.ctx.flow.options.event_capacity_bytes
        store.write_events(tx.conn, tx.session, tx.events, capacity=capacity)
        tx.events.clear()
        store.save_session(tx.conn, tx.session)

    # Services for Steps -------------------------------------------------------------------

    def event_writer(self, ctx: StepScope, turn_id: str | None) -> StreamingEventWriter:
        return StreamingEventWriter(
            self.database,
            ctx.session_id,
            turn_id=turn_id,
            attempt=ctx.attempt,
            step_execution_id=ctx.step_execution_id,
            leftovers=ctx.unflushed,
        )

    def checkpoint_saver(self, ctx: StepScope) -> Callable[[str], Awaitable[None]]:
        async def save(checkpoint: str) -> None:
            await self.database.write(
                lambda conn: store.update_step(
                    conn, ctx.session_id, ctx.step_execution_id, checkpoint=checkpoint
                )
            )
            ctx.checkpoint = checkpoint

        return save

    # Cancellation -------------------------------------------------------------------------

    def _check_cancellations(self, sessions: set[str]) -> None:
        for session_id in sessions & self._running.keys():
            task = asyncio.ensure_future(self._cancel_if_requested(session_id))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _cancel_if_requested(self, session_id: str) -> None:
        running = dict(self._running.get(session_id, {}))
        if not running:
            return

        def statuses(conn: Connection) -> dict[str, str]:
            rows = (store.load_step(conn, session_id, sx) for sx in running)
            return {row.step_execution_id: row.status for row in rows if row is not None}

        for step_execution_id, status in (await self.database.read(statuses)).items():
            if status == "cancelled":
                running[step_execution_id].cancel()


def _save_if_streamed(conn: Connection, session: store.Session, ctx: StepContext[Any]) -> None:
    """Keeps the event counter of the streamed events a commit that records nothing else
    wrote."""
    if ctx.unflushed:
        store.save_session(conn, session)


def _current_task_cancelling() -> bool:
    task = asyncio.current_task()
    return bool(task and task.cancelling())
