"""Worker: hosts one or more AgentSessionFlows and runs their Steps."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import logging
import os
import signal
import socket
import sys
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from dbos import DBOS
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from . import liveness
from . import runtime as runtime_module
from .balance import Balancer
from .db import (
    DATABASE_URL_ENV,
    Database,
    QuietOutageFilter,
    create_dbos_engine,
    is_sqlite,
    is_unavailable_text,
    one_line_error,
    resolve_database_url,
)
from .dbos_internals import slow_queue_listing, slow_unused_housekeeping
from .dequeue import Dequeuer
from .errors import FlowLoadError, WorkerError
from .flow import AgentSessionFlow
from .logs import redacted_url
from .otel import make_tracer
from .parking import hot_window_setting
from .routing import DRIVER_VERSION, STEP_WORKFLOW, step_queue_name
from .runner import warm_up_runners
from .runtime import Runtime, route_step_workflows
from .steps import STEP_HANDLERS
from .waker import WAKE_POLL_SECONDS

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from .health import WorkerEndpoints
    from .metrics import Metrics

log = logging.getLogger("dex_agents")

# How often a Worker polls its queues for Steps besides being woken by the commits that
# enqueue them (see `dequeue.py`): a safety net, so seldom. Each poll of each queue costs a
# Worker CPU whether or not anything waits (about 0.3% of a core at once a second).
QUEUE_POLL_SECONDS = 5.0
QUEUE_POLL_SECONDS_ENV = "DEX_AGENTS_QUEUE_POLL_SECONDS"

# How often DBOS looks at its internal queue and runs its background jobs, which dex-agents
# never gives work, and lists the queues, which a Worker registers once at its start
# (dbos_internals.slow_unused_housekeeping, slow_queue_listing).
UNUSED_HOUSEKEEPING_SECONDS = 30.0

WORKER_ID_ENV = "DEX_AGENTS_WORKER_ID"
DRAIN_SECONDS_ENV = "DEX_AGENTS_WORKER_DRAIN_SECONDS"
DEFAULT_DRAIN_SECONDS = 20.0
READY_FILE_ENV = "DEX_AGENTS_READY_FILE"
# The Worker's HTTP endpoints for orchestrators and Prometheus (health.py, metrics.py).
HTTP_PORT_ENV = "DEX_AGENTS_HTTP_PORT"
HTTP_HOST_ENV = "DEX_AGENTS_HTTP_HOST"
METRICS_ENV = "DEX_AGENTS_METRICS"


class PendingFlow(Protocol):
    """A flow a Worker hosts before it can serve it, such as a remote flow whose runner is
    not up yet (`dex_agents.remote.PendingRemoteFlow`): the Worker takes the flow type's Steps
    from the start, and they wait, without writing anything, until `ready` returns the flow."""

    @property
    def flow_type(self) -> str: ...

    @property
    def waiting_for(self) -> str:
        """What the flow waits for, as the log and /readyz say it."""
        ...

    async def ready(self) -> AgentSessionFlow:
        """The flow once it can be served; FlowLoadError stops the Worker."""
        ...


class Worker:
    """Runs the Steps of every session of its flows, on the SQLite default or Postgres.

    One Worker per process (DBOS keeps one instance per process). A Worker ID names one live
    Worker: a second Worker with the ID of a live one refuses to start (WorkerIdInUseError). A
    restarted Worker with the same `worker_id` recovers every Step execution that was in
    flight at once; without one (nor DEX_AGENTS_WORKER_ID), each process takes an ID of its own.
    """

    def __init__(
        self,
        flows: AgentSessionFlow | Sequence[AgentSessionFlow | PendingFlow],
        *,
        database_url: str | None = None,
        worker_id: str | None = None,
        wake_poll_interval: float = WAKE_POLL_SECONDS,
        queue_poll_interval: float | None = None,
        lease_seconds: float | None = None,
        drain_seconds: float | None = None,
        tracing: bool | TracerProvider | None = None,
        hot_window: float | None = None,
        http_port: int | None = None,
        http_host: str | None = None,
        metrics: bool | None = None,
    ) -> None:
        """`flows` may hold pending flows (`PendingFlow`, such as what
        `dex_agents.remote.remote_flow_or_pending` returns for a runner that is not up yet):
        the Worker hosts their flow types at once and serves each when it is ready.

        `tracing`: OpenTelemetry GenAI spans of every activation, model call and tool
        call (the `otel` extra). True uses the global TracerProvider, a TracerProvider that
        one, False none; None (the default) turns it on when DEX_AGENTS_TRACING is 1.

        `hot_window`: seconds a waiting Step (for a message, an approval, a timer) stays in
        this Worker's memory before it parks in the database, where it costs no Worker
        anything until a commit or its due time wakes it on any Worker of its flow type;
        by default DEX_AGENTS_HOT_WINDOW_SECONDS, else 10.

        `http_port`: serve /livez, /readyz (and /metrics with `metrics`) on this port of
        `http_host` (default 127.0.0.1; 0.0.0.0 for a container's probes); by default
        DEX_AGENTS_HTTP_PORT, else none. `metrics`: Prometheus metrics (the `metrics` extra)
        at /metrics; by default on when DEX_AGENTS_METRICS is 1."""
        given = [flows] if isinstance(flows, AgentSessionFlow) else list(flows)
        if not given:
            raise ValueError("a Worker needs at least one AgentSessionFlow")
        # The flows it serves; a pending flow moves here once it is ready.
        self.flows = [flow for flow in given if isinstance(flow, AgentSessionFlow)]
        self.pending_flows = [flow for flow in given if not isinstance(flow, AgentSessionFlow)]
        types = [flow.flow_type for flow in given]
        self.flow_types = types
        if len(set(types)) != len(types):
            raise ValueError(f"flow types must be unique, got {types}")
        self.database_url = resolve_database_url(database_url)
        _check_sqlite_directory(self.database_url)
        self.worker_id = worker_id or os.environ.get(WORKER_ID_ENV) or default_worker_id()
        self.wake_poll_interval = wake_poll_interval
        self.queue_poll_interval = (
            queue_poll_interval
            if queue_poll_interval is not None
            else float(os.environ.get(QUEUE_POLL_SECONDS_ENV, QUEUE_POLL_SECONDS))
        )
        # How long a silent Worker keeps its Steps before a live one takes them over.
        self.lease_seconds = liveness.lease_seconds(lease_seconds)
        # How long a clean stop waits for running model and tool calls to finish.
        self.drain_seconds = (
            drain_seconds
            if drain_seconds is not None
            else float(os.environ.get(DRAIN_SECONDS_ENV, DEFAULT_DRAIN_SECONDS))
        )
        self.tracer = make_tracer(tracing)
        self.hot_window = hot_window_setting(hot_window, os.environ)
        self.http_port = http_port if http_port is not None else _env_port(HTTP_PORT_ENV)
        self.http_host = http_host or os.environ.get(HTTP_HOST_ENV) or "127.0.0.1"
        self.metrics = _metrics(metrics, types, self.database_url)
        self.endpoints: WorkerEndpoints | None = None
        self._stop_now = asyncio.Event()
        self._stopped = asyncio.Event()
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.runtime: Runtime | None = None
        # What stopped the Worker after it launched (a pending flow that could not be served).
        self._failure: Exception | None = None

    async def run(self) -> None:
        """Runs until `stop()` is called or the task is cancelled.

        As the program's main task (`asyncio.run(Worker(flows).run())`, as `dex-agents worker`
        runs it), it behaves like `dex-agents worker`: with logging not configured it logs its
        start (the flows it hosts) and its stop to standard error, and SIGTERM or Ctrl-C stop
        it cleanly, with no traceback (a second signal stops at once). Run by `async with`,
        it leaves logging and signals to the application."""
        if self._task is not None:  # started by __aenter__
            await self._serve()
            return
        with _as_main_task(self):
            await self._serve()

    async def _serve(self) -> None:
        """`_run`, with the Worker's HTTP endpoints (health, metrics) when it has a port."""
        self.endpoints = self._start_endpoints()
        try:
            await self._run()
        finally:
            if self.endpoints is not None:
                self.endpoints.stop()

    async def _run(self) -> None:
        # Before any Step runs: the first model call must not pay for imports and set-up.
        await warm_up_runners(flow.runner for flow in self.flows)
        database = Database(self.database_url)
        if self.metrics is not None:
            self.metrics.watch_database(database)
        if not await _wait_for_database(database, self._stopped):
            database.close()
            return  # stopped before the database answered
        database.create_schema()
        runtime = Runtime(
            self.flows,
            database,
            STEP_HANDLERS,
            wake_poll_interval=self.wake_poll_interval,
            tracer=self.tracer,
            hot_window=self.hot_window,
        )
        for pending in self.pending_flows:
            runtime.expect_flow(pending.flow_type)
        runtime.waker.bind(asyncio.get_running_loop())
        runtime.metrics = self.metrics
        runtime_module.set_current_runtime(runtime)
        self.runtime = runtime
        dequeuer = Dequeuer(runtime.queues)
        lease = liveness.WorkerLease(
            database,
            self.worker_id,
            self.flow_types,
            functools.partial(_recover_workflows, database, dequeuer.kick_all_threadsafe),
            lease_seconds=self.lease_seconds,
            waker=runtime.waker,
        )
        try:
            # Before DBOS launches: its launch recovers every unfinished workflow of this ID.
            await lease.claim()
            await database.write(lambda conn: route_step_workflows(conn, [self.worker_id]))
        except BaseException:
            runtime_module.set_current_runtime(None)
            database.close()
            raise
        DBOS(
            config={
                "name": "dex-agents",
                "system_database_url": self.database_url,
                "system_database_engine": create_dbos_engine(self.database_url),
                "application_version": DRIVER_VERSION,
                "executor_id": self.worker_id,
                # dex-agents uses none of DBOS's messages, events or streams, so DBOS needs no
                # LISTEN connection on Postgres (psycopg's wait on it woke its thread ten
                # times a second) and no notifier thread; its polling stand-in looks at no
                # waiter once a second. A stopping Worker waits for that sleep to end.
                "use_listen_notify": False,
                "notification_listener_polling_interval_sec": 1.0,
                "log_level": os.environ.get("DEX_AGENTS_DBOS_LOG_LEVEL", "WARNING"),
            }
        )
        slow_unused_housekeeping(UNUSED_HOUSEKEEPING_SECONDS)
        background: list[asyncio.Task[None]] = []
        # DBOS says an outage once per retry and per queue poll; the Database says it once.
        logging.getLogger("dbos").addFilter(QuietOutageFilter())
        # Only the Steps of hosted flow types: each flow type has a queue of its own.
        queue_names = {flow_type: step_queue_name(flow_type) for flow_type in self.flow_types}
        DBOS.listen_queues(list(queue_names.values()))
        try:
            DBOS.launch()
            for flow_type, queue_name in queue_names.items():
                runtime.queues[flow_type] = await DBOS.register_queue_async(
                    queue_name, polling_interval_sec=self.queue_poll_interval
                )
            slow_queue_listing(UNUSED_HOUSEKEEPING_SECONDS)
            runtime.waker.add_remote_listener(dequeuer.on_wake)
            # A commit of this Worker that wakes a parked Step claims its wake here too.
            database.on_parked_wake = dequeuer.kick_threadsafe
            await lease.register()
            background.append(asyncio.create_task(runtime.waker.poll_forever()))
            # DBOS's launch re-enqueues this ID's unfinished workflows in a thread of its own;
            # the recovery a takeover does (it is idempotent) has them all queued, and takes
            # them, with what waited for a Worker, at once.
            await asyncio.to_thread(
                _recover_workflows, database, dequeuer.kick_all_threadsafe, [self.worker_id]
            )
            background.append(asyncio.create_task(lease.run_forever()))
            background.append(asyncio.create_task(runtime.wake_due_forever()))
            runtime.balancer = Balancer(
                database,
                self.worker_id,
                list(queue_names),
                STEP_WORKFLOW,
                lambda: lease.workers,
            )
            dequeuer.excess = runtime.balancer.excess
            background.append(asyncio.create_task(runtime.balancer.run_forever()))
            log.info(
                "dex-agents Worker %s on %s hosts %s%s",
                self.worker_id,
                redacted_url(self.database_url),
                ", ".join(self.flow_types),
                "".join(f"; waiting for {p.waiting_for}" for p in self.pending_flows),
            )
            background += [
                asyncio.create_task(self._serve_when_ready(runtime, pending))
                for pending in self.pending_flows
            ]
            # Ready while a pending flow waits: the Worker takes every hosted flow type's
            # Steps, and serves the others (see docs/remote-runners.md).
            _announce_ready()
            self._ready.set()
            await self._stopped.wait()
            await self._drain(runtime)
            if self._failure is not None:
                raise self._failure
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await dequeuer.close()
            # Stopping cancels every Step that waits (for a message, an approval); each
            # resumes when a Worker takes it over, so DBOS's warning per task is noise here.
            logging.getLogger("dbos").addFilter(_quiet_shutdown_cancellations)
            DBOS.destroy(workflow_completion_timeout_sec=0)
            # DBOS made its executor, now shut down, this loop's default one: give the loop a
            # fresh one, so that it goes on (and can run a Worker again).
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())
            runtime_module.set_current_runtime(None)
            # Only now that nothing runs here may the other Workers take the Steps over.
            try:
                await lease.release()
            except Exception:
                log.warning("could not hand this Worker's Steps over; they wait for its lease")
            database.close()
            log.info("dex-agents Worker %s stopped", self.worker_id)

    async def _serve_when_ready(self, runtime: Runtime, pending: PendingFlow) -> None:
        """Serves a pending flow once it is ready; one that cannot be served stops the Worker
        with its error, as it would have stopped it from starting."""
        try:
            flow = await pending.ready()
            if flow.flow_type != pending.flow_type:
                raise FlowLoadError(
                    f"{pending!r} became flow type {flow.flow_type!r}, not {pending.flow_type!r}"
                )
            await warm_up_runners([flow.runner])
        except Exception as error:
            log.error("cannot serve %s: %s; stopping", pending.flow_type, error)
            self._failure = error
            self.stop()
            return
        runtime.serve_flow(flow)
        self.flows.append(flow)
        self.pending_flows.remove(pending)
        log.info("dex-agents Worker %s serves %s", self.worker_id, flow.flow_type)

    def _start_endpoints(self) -> WorkerEndpoints | None:
        if self.http_port is None:
            if self.metrics is not None:
                log.warning("metrics are on but no HTTP port is set: give --http-port")
            return None
        from .health import WorkerEndpoints

        endpoints = WorkerEndpoints(self, asyncio.get_running_loop())
        log.info(
            "health%s at http://%s:%d",
            " and metrics" if self.metrics else "",
            self.http_host,
            endpoints.port,
        )
        return endpoints

    @property
    def launched(self) -> bool:
        """Whether the Worker takes Steps (launched and not stopping)."""
        return self._ready.is_set() and not self._stopped.is_set()

    async def __aenter__(self) -> Worker:
        """Runs the Worker in the background of this event loop, as an application that embeds
        it does (a web app's lifespan, a script): returns once the Worker takes Steps, or
        raises what stopped it from starting. Leaving the block stops it cleanly.

            async with Worker(flows):
                result = await client.start_session_and_wait("Assistant", "Hello")
        """
        if self._task is not None:
            raise RuntimeError("this Worker is already running")
        self._task = asyncio.create_task(self.run(), name=f"dex-agents Worker {self.worker_id}")
        ready = asyncio.create_task(self._ready.wait())
        try:
            await asyncio.wait([self._task, ready], return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # cancelled while starting
            ready.cancel()
            self.stop()
            self.stop()  # the second call stops at once
            await asyncio.gather(self._task, return_exceptions=True)
            raise
        if not ready.done():
            ready.cancel()
            self._task.result()  # raises what ended run()
            raise WorkerError("the Worker stopped before it was ready")
        return self

    async def __aexit__(self, *_: object) -> None:
        self.stop()
        if self._task is not None:
            task, self._task = self._task, None
            await task

    def stop(self) -> None:
        """Stops cleanly: running model and tool calls finish first (up to `drain_seconds`).
        A second call stops at once."""
        if self._stopped.is_set():
            self._stop_now.set()
        self._stopped.set()

    async def _drain(self, runtime: Runtime) -> None:
        drain = asyncio.ensure_future(runtime.drain(self.drain_seconds))
        stop_now = asyncio.ensure_future(self._stop_now.wait())
        await asyncio.wait([drain, stop_now], return_when=asyncio.FIRST_COMPLETED)
        stop_now.cancel()
        still_running = drain.result() if drain.done() else runtime.attempts_running
        drain.cancel()
        if still_running:
            log.warning(
                "stopping with %d Steps still running; they run again, or record "
                "outcome_unknown, on the Worker that takes them over",
                still_running,
            )


# Errors of a database that is not up yet (or not reachable yet): a Worker waits for it.
_UNREACHABLE = ("could not translate host name", "timeout expired", "name or service not known")
DATABASE_RETRY_SECONDS = 2.0


async def _wait_for_database(database: Database, stopped: asyncio.Event) -> bool:
    """True once the database answers, False when stopped first; logs one line while it is
    unreachable. Other errors (a wrong password, a missing database) are raised at once."""
    logged = False
    while not stopped.is_set():
        try:
            await asyncio.to_thread(_ping, database)
            if logged:
                log.info("the database answers")
            return True
        except DBAPIError as error:
            if not _unreachable(error):
                raise
            if not logged:
                log.warning(
                    "database unreachable at %s, retrying every %g s (%s)",
                    redacted_url(database.url),
                    DATABASE_RETRY_SECONDS,
                    one_line_error(error),
                )
                logged = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopped.wait(), DATABASE_RETRY_SECONDS)
    return False


def _ping(database: Database) -> None:
    with database.engine.connect() as conn:
        conn.exec_driver_sql("SELECT 1")


def _unreachable(error: DBAPIError) -> bool:
    text = str(error.orig)
    return (
        error.connection_invalidated
        or is_unavailable_text(text)
        or any(marker in text.lower() for marker in _UNREACHABLE)
    )


def _check_sqlite_directory(url: str) -> None:
    if not is_sqlite(url):
        return
    path = make_url(url).database
    if path and path != ":memory:" and not Path(path).parent.is_dir():
        raise WorkerError(
            f"the directory of the SQLite database {path} does not exist: create it, or pass "
            f"another --database-url (or {DATABASE_URL_ENV})"
        )


def _env_port(name: str) -> int | None:
    text = os.environ.get(name)
    if not text:
        return None
    if not text.isdigit() or int(text) > 65535:
        raise WorkerError(f"{name} must be a port number from 0 to 65535, not {text!r}")
    return int(text)


def _metrics(explicit: bool | None, flow_types: Sequence[str], url: str) -> Metrics | None:
    on = explicit if explicit is not None else os.environ.get(METRICS_ENV, "") in ("1", "true")
    if not on:
        return None
    try:
        from .metrics import process_metrics
    except ImportError as error:
        raise WorkerError(
            f"metrics need the metrics extra ({error}): pip install 'dex-agents[metrics]'"
        ) from None
    hosted = list(flow_types)
    return process_metrics(url, lambda: hosted)


def default_worker_id() -> str:
    """An ID of this process alone: its host and pid, and a random part for pid reuse."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def _recover_workflows(
    database: Database, dequeue: Callable[[], None], worker_ids: list[str]
) -> int:
    """Hands the unfinished workflows of the given Workers back to their flow types' queues
    (DBOS recovery: each is admitted to exactly one runner, whichever Worker takes it), and
    has this Worker take what it hosts at once."""
    database.write_sync(lambda conn: route_step_workflows(conn, worker_ids))
    recovered = len(DBOS._recover_pending_workflows(worker_ids))
    dequeue()
    return recovered


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


@contextlib.contextmanager
def _as_main_task(worker: Worker) -> Iterator[None]:
    """Logging of this package to standard error when the program configured none, and
    SIGTERM and SIGINT (Ctrl-C) calling `worker.stop()`, for as long as the Worker runs."""
    package = logging.getLogger("dex_agents")
    handler: logging.Handler | None = None
    if not logging.getLogger().handlers and not package.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        package.addHandler(handler)
    level = package.level
    if handler is not None and level == logging.NOTSET:
        package.setLevel(logging.INFO)
    loop = asyncio.get_running_loop()
    signals: list[signal.Signals] = []
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            if not _unclaimed(sig):
                continue  # the application handles it (a server's own shutdown)
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, worker.stop)
                signals.append(sig)
    try:
        yield
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
        if handler is not None:
            package.removeHandler(handler)
            package.setLevel(level)


def _unclaimed(sig: signal.Signals) -> bool:
    """Whether the signal still has Python's or asyncio.run's own handler (no application
    took it over): SIG_DFL, SIG_IGN (inherited by a background job), the default SIGINT
    handler, or asyncio.run's, which cancels the main task."""
    handler = signal.getsignal(sig)
    if handler in (signal.SIG_DFL, signal.SIG_IGN, signal.default_int_handler):
        return True
    func = getattr(handler, "func", None)  # asyncio.Runner's functools.partial
    return getattr(func, "__qualname__", "") == "Runner._on_sigint"


def _quiet_shutdown_cancellations(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("Asyncio task cancelled for workflow or step")


def _announce_ready() -> None:
    ready_file = os.environ.get(READY_FILE_ENV)
    if ready_file:
        Path(ready_file).write_text(f"{socket.gethostname()} {os.getpid()}\n")


def load_flows(target: str) -> list[AgentSessionFlow]:
    """Loads `module:attribute`, a flow or a sequence of flows (or a function returning one)."""
    if ":" not in target:
        raise FlowLoadError(
            f"expected module:attribute, such as myapp.agents:flows, not {target!r}"
        )
    module_name, attribute = target.split(":", 1)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as error:
        raise FlowLoadError(
            f"cannot import {module_name!r} ({type(error).__name__}: {error}); check the module "
            "path of TARGET and run from the directory it is relative to"
        ) from error
    try:
        value: Any = getattr(module, attribute)
    except AttributeError:
        raise FlowLoadError(f"module {module_name!r} has no attribute {attribute!r}") from None
    if callable(value) and not isinstance(value, AgentSessionFlow):
        value = value()
    return _flows_of(target, value)


def _flows_of(target: str, value: Any) -> list[AgentSessionFlow]:
    if isinstance(value, AgentSessionFlow):
        return [value]
    wrap = "wrap each runner as AgentSessionFlow(runner, flow_type=...)"
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise FlowLoadError(
            f"{target} is a {type(value).__name__}, not an AgentSessionFlow or a list of them; "
            + wrap
        )
    flows = list(value)
    for flow in flows:
        if not isinstance(flow, AgentSessionFlow):
            raise FlowLoadError(
                f"{target} must hold AgentSessionFlow objects, found a {type(flow).__name__}; "
                + wrap
            )
    return flows
