"""Prometheus metrics of a Worker and of `dex-agents serve` (the `metrics` extra).

Imported only when metrics are turned on (`Worker(metrics=True)`, `--metrics`), so the
engine never needs `prometheus_client`. Two kinds of metric:

- What this process did, counted as it happens: Steps started and finished, Step and
  model-call latencies, failed attempts and retries, tool calls by effect and final status,
  the wake latency of parked Steps, database outages. A count that a commit decides (a Step's
  end, a tool call's final status) moves once the commit succeeded (`db.after_commit`), so
  a transaction retried during an outage is counted once.
- What the database holds, read when scraped (`DatabaseCollector`): sessions by state and
  the queue depth of each flow type, with one grouped query each, so every process that
  scrapes reports the same numbers and nothing is tracked in memory.

Every label set is bounded: flow types, Step types, outcomes, tool effects and statuses.
No session, turn or Step ID is ever a label.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy.engine import Connection, Engine

from . import db, dbos_internals, store
from .routing import STEP_QUEUE, step_queue_name

if TYPE_CHECKING:
    from .stepkit import StepContext, StepScope, StepTx

log = logging.getLogger("dex_agents.metrics")

PREFIX = "dex_agents"
# The Steps whose Execute is one model call.
MODEL_STEPS = frozenset({"RunModel", "CompactContext"})
# Seconds: a Step or a model call (up to the 10 minutes of a long model call) ...
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
# ... and a database outage (up to an hour).
OUTAGE_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600)
# Session states as the `state` label names them, from the Step statuses that mean them.
STEP_STATES = {"running": "running", "waiting": "waiting_hot", "parked": "parked"}
WAITING_FOR_PERSON = "waiting_for_person"
SESSION_STATES = (*STEP_STATES.values(), WAITING_FOR_PERSON)
# A scrape waits this long for the database before it reports it down.
SCRAPE_TIMEOUT_SECONDS = 5.0
# Step start times kept for the latency of their end, at most.
MAX_TRACKED_STEPS = 100_000


class Metrics:
    """The metrics of one process, in a registry of its own (`render` gives the text the
    /metrics endpoint answers)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.steps_started = Counter(
            f"{PREFIX}_steps_started",
            "Step executions whose first attempt began (or that committed at once).",
            ["flow_type", "step_type"],
            registry=r,
        )
        self.steps_finished = Counter(
            f"{PREFIX}_steps_finished",
            "Step executions that ended, by outcome (succeeded, failed).",
            ["flow_type", "step_type", "outcome"],
            registry=r,
        )
        self.step_seconds = Histogram(
            f"{PREFIX}_step_duration_seconds",
            "From a Step's driver starting it (after any wait) to the commit that ended it.",
            ["flow_type", "step_type"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.model_seconds = Histogram(
            f"{PREFIX}_model_call_duration_seconds",
            "One model call (the Execute of a RunModel or CompactContext attempt), by outcome "
            "(ok, error).",
            ["flow_type", "outcome"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.attempt_failures = Counter(
            f"{PREFIX}_step_attempt_failures",
            "Step attempts whose Execute raised (user code, a model or tool error, a timeout).",
            ["flow_type", "step_type"],
            registry=r,
        )
        self.retries = Counter(
            f"{PREFIX}_step_retries",
            "Step attempts begun again after a failed one.",
            ["flow_type", "step_type"],
            registry=r,
        )
        self.tool_calls = Counter(
            f"{PREFIX}_tool_calls",
            "Tool calls that reached their final status (succeeded, failed, rejected, "
            "outcome_unknown), by the tool's declared effect.",
            ["flow_type", "effect", "status"],
            registry=r,
        )
        self.outcome_unknown = Counter(
            f"{PREFIX}_tool_calls_outcome_unknown",
            "Tool calls recorded as outcome_unknown: they may or may not have taken effect.",
            ["flow_type", "effect"],
            registry=r,
        )
        self.wake_seconds = Histogram(
            f"{PREFIX}_wake_latency_seconds",
            "From the commit that woke a parked Step to its driver running again.",
            ["flow_type"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.outages = Counter(
            f"{PREFIX}_database_outages",
            "Database outages this process met (the database unreachable or locked).",
            registry=r,
        )
        self.outage_seconds = Histogram(
            f"{PREFIX}_database_outage_duration_seconds",
            "The length of each database outage that ended.",
            buckets=OUTAGE_BUCKETS,
            registry=r,
        )
        self.outage_active = Gauge(
            f"{PREFIX}_database_outage_active",
            "1 while this process finds the database unavailable.",
            registry=r,
        )
        self._began: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def render(self) -> tuple[bytes, str]:
        """The exposition text and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST

    # The database ---------------------------------------------------------------------------

    def watch_database(self, database: db.Database) -> None:
        """Counts the outages `database` meets."""
        database.outage.listener = self.outage_changed

    def outage_changed(self, length: float | None) -> None:
        if length is None:
            self.outages.inc()
            self.outage_active.set(1)
            return
        self.outage_active.set(0)
        self.outage_seconds.observe(length)

    # Steps (called by the driver, runtime.py) -----------------------------------------------

    def step_began(self, ctx: StepContext[Any], first: bool) -> None:
        """A driver starts a Step's work (after its wait); `first`: no attempt began before."""
        key = (ctx.session_id, ctx.step_execution_id)
        with self._lock:
            if key in self._began:
                return  # a Step without Execute that waits again
            if len(self._began) >= MAX_TRACKED_STEPS:
                self._began.clear()  # Steps that never ended here (cancelled, handed over)
            self._began[key] = time.monotonic()
        if first:
            self.steps_started.labels(ctx.flow.flow_type, ctx.step_type).inc()

    def attempt_ended(
        self, ctx: StepContext[Any], seconds: float, error: BaseException | None
    ) -> None:
        """An attempt's Execute returned or raised (not when the Step was cancelled)."""
        flow_type = ctx.flow.flow_type
        if error is not None:
            self.attempt_failures.labels(flow_type, ctx.step_type).inc()
        if ctx.step_type in MODEL_STEPS:
            outcome = "ok" if error is None else "error"
            self.model_seconds.labels(flow_type, outcome).observe(seconds)

    def retried(self, ctx: StepContext[Any]) -> None:
        self.retries.labels(ctx.flow.flow_type, ctx.step_type).inc()

    def committing(self, tx: StepTx, ended: str | None) -> None:
        """Inside a Step's commit: what it decided, counted once it committed. `ended`: the
        Step's final status when this commit ends it."""
        ctx = tx.ctx
        flow_type = ctx.flow.flow_type
        tools = [
            _tool_outcome(tx.conn, ctx.session_id, event.payload)
            for event in tx.events
            if event.type == "tool_call_finished"
        ]
        if ended is None and not tools:
            return

        def count() -> None:
            for effect, status in tools:
                self.tool_calls.labels(flow_type, effect, status).inc()
                if status == "outcome_unknown":
                    self.outcome_unknown.labels(flow_type, effect).inc()
            if ended is not None:
                self._step_ended(ctx, ended)

        db.after_commit(tx.conn, count)

    def _step_ended(self, ctx: StepScope, outcome: str) -> None:
        flow_type = ctx.flow.flow_type
        self.steps_finished.labels(flow_type, ctx.step_type, outcome).inc()
        with self._lock:
            began = self._began.pop((ctx.session_id, ctx.step_execution_id), None)
        if began is not None:
            self.step_seconds.labels(flow_type, ctx.step_type).observe(time.monotonic() - began)

    async def woken(self, database: db.Database, ctx: StepContext[Any], workflow_id: str) -> None:
        """A woken Step's driver runs: the time since its wake workflow was enqueued, which
        the commit that woke it did."""
        try:
            created = await database.read(lambda conn: _workflow_created_ms(conn, workflow_id))
        except Exception as error:  # a metric never holds a Step up
            log.debug("metrics: no wake latency for %s: %s", workflow_id, error)
            return
        if created is not None:
            latency = max(time.time() - created / 1000.0, 0.0)
            self.wake_seconds.labels(ctx.flow.flow_type).observe(latency)


def _tool_outcome(conn: Connection, session_id: str, payload: dict[str, Any]) -> tuple[str, str]:
    record = store.load_tool_call(conn, session_id, str(payload.get("tool_call_id")))
    effect = record.effect if record is not None else "unknown"
    return str(effect), str(payload.get("status"))


def _workflow_created_ms(conn: Connection, workflow_id: str) -> int | None:
    workflows = dbos_internals.workflow_status(conn)
    query = sa.select(workflows.c.created_at)
    value = conn.execute(query.where(workflows.c.workflow_uuid == workflow_id)).scalar()
    return None if value is None else int(value)


# Read when scraped ----------------------------------------------------------------------------


class DatabaseCollector(Collector):
    """Sessions by state and queue depth per flow type, read from the database at each scrape
    (two grouped queries over indexed or small sets), and `dex_agents_database_up`.

    A scrape waits at most `timeout` for the database: during an outage it reports the
    database down and leaves the other gauges out, rather than hang the scrape."""

    def __init__(
        self, engine: Engine, flow_types: Callable[[], Iterable[str]], *, timeout: float
    ) -> None:
        self._engine = engine
        self._flow_types = flow_types
        self._timeout = timeout
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dex-metrics")
        self._pending: Future[Snapshot] | None = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        snapshot = self._read()
        up = GaugeMetricFamily(
            f"{PREFIX}_database_up", "1 when the last scrape could read the database."
        )
        up.add_metric([], 0 if snapshot is None else 1)
        yield up
        if snapshot is None:
            return
        flow_types = sorted(set(self._flow_types()) | snapshot.flow_types())
        sessions = GaugeMetricFamily(
            f"{PREFIX}_sessions",
            "Sessions by state: running (an attempt runs), waiting_hot (a Step waits in a "
            "Worker's memory), parked (a Step waits in the database), waiting_for_person (a "
            "pending approval or question).",
            labels=["flow_type", "state"],
        )
        queue = GaugeMetricFamily(
            f"{PREFIX}_queue_depth",
            "Step workflows enqueued for the flow type and not yet taken by a Worker.",
            labels=["flow_type"],
        )
        for flow_type in flow_types:
            for state in SESSION_STATES:
                sessions.add_metric(
                    [flow_type, state], snapshot.sessions.get((flow_type, state), 0)
                )
            queue.add_metric([flow_type], snapshot.queued.get(flow_type, 0))
        yield sessions
        yield queue

    def _read(self) -> Snapshot | None:
        if self._pending is not None and not self._pending.done():
            return None  # the last scrape's read still waits for the database
        self._pending = self._pool.submit(self._query)
        try:
            return self._pending.result(timeout=self._timeout)
        except FutureTimeout:
            return None
        except Exception as error:
            log.debug("metrics: the database could not be read: %s", db.one_line_error(error))
            return None

    def _query(self) -> Snapshot:
        with self._engine.connect() as conn, conn.begin():
            return Snapshot(sessions=_sessions_by_state(conn), queued=_queue_depth(conn))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class Snapshot:
    def __init__(self, sessions: dict[tuple[str, str], int], queued: dict[str, int]) -> None:
        self.sessions = sessions
        self.queued = queued

    def flow_types(self) -> set[str]:
        return {flow_type for flow_type, _ in self.sessions} | set(self.queued)


def _sessions_by_state(conn: Connection) -> dict[tuple[str, str], int]:
    """Each query's WHERE is its partial index's predicate, so that SQLite uses the index
    too: it reads only the Steps that run or wait, and the sessions waiting for a person."""
    steps, sessions = db.steps, db.sessions
    counts: dict[tuple[str, str], int] = {}
    for where in (db.ACTIVE_STEPS, "status = 'parked'"):
        query = (
            sa.select(
                sessions.c.flow_type,
                steps.c.status,
                sa.func.count(sa.distinct(steps.c.session_id)),
            )
            .select_from(steps.join(sessions, sessions.c.session_id == steps.c.session_id))
            .where(sa.text(f"dex_steps.{where}"))
            .group_by(sessions.c.flow_type, steps.c.status)
        )
        counts.update({(row[0], STEP_STATES[row[1]]): int(row[2]) for row in conn.execute(query)})
    people = (
        sa.select(sessions.c.flow_type, sa.func.count())
        .where(sa.text(db.WAITING_FOR_PERSON))
        .group_by(sessions.c.flow_type)
    )
    for flow_type, count in conn.execute(people):
        counts[(flow_type, WAITING_FOR_PERSON)] = int(count)
    return counts


def _queue_depth(conn: Connection) -> dict[str, int]:
    if not dbos_internals.has_workflow_status(conn):
        return {}  # no Worker ever launched on this database
    workflows = dbos_internals.workflow_status(conn)
    prefix = step_queue_name("")
    query = (
        sa.select(workflows.c.queue_name, sa.func.count())
        .where(workflows.c.status == "ENQUEUED", workflows.c.queue_name.like(f"{STEP_QUEUE}:%"))
        .group_by(workflows.c.queue_name)
    )
    return {str(name).removeprefix(prefix): int(count) for name, count in conn.execute(query)}


def database_collector(
    url: str, flow_types: Callable[[], Sequence[str]], timeout: float = SCRAPE_TIMEOUT_SECONDS
) -> DatabaseCollector:
    """A collector on an engine of its own, whose SQLite reads wait briefly for a lock."""
    engine = db.create_engine(url, pool_size=1, busy_timeout_ms=int(timeout * 1000))
    return DatabaseCollector(engine, flow_types, timeout=timeout)


def process_metrics(url: str, flow_types: Callable[[], Sequence[str]]) -> Metrics:
    """A process's metrics with the database's gauges, read at each scrape."""
    metrics = Metrics()
    metrics.registry.register(database_collector(url, flow_types))
    return metrics
