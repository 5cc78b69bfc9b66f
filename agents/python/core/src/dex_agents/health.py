"""Liveness, readiness and metrics over HTTP for orchestrators and Prometheus.

A Worker serves them on its optional `--http-port` from a small standard-library HTTP server
on a thread of its own, so a probe is answered even while the Worker's event loop is busy
(and liveness can tell when it is stuck):

- `GET /livez`: 200 while the process's event loop answers within `LOOP_TIMEOUT_SECONDS`.
- `GET /readyz`: 200 once the Worker launched, while it is not stopping, the database
  answers a read within `DATABASE_TIMEOUT_SECONDS` and the Worker's own transactions are not
  failing; 503 otherwise (during a database outage).
- `GET /metrics`: the Prometheus metrics, with `--metrics` (the `metrics` extra).

Each answers a JSON body `{"status": "ok" | "unavailable", "checks": {...}}` saying which
check failed. `dex-agents serve` answers /livez and /readyz from its own routes
(web/app.py) with the same checks of its database.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

import sqlalchemy as sa

from . import db

if TYPE_CHECKING:
    from .worker import Worker

log = logging.getLogger("dex_agents")

LOOP_TIMEOUT_SECONDS = 5.0
DATABASE_TIMEOUT_SECONDS = 2.0


@dataclass
class Health:
    """A probe's answer: each check's result (a short text) and whether all passed."""

    checks: dict[str, str] = field(default_factory=dict)
    ok: bool = True

    def check(self, name: str, passed: bool, detail: str) -> None:
        self.checks[name] = detail
        self.ok = self.ok and passed

    def as_json(self) -> dict[str, object]:
        return {"status": "ok" if self.ok else "unavailable", "checks": self.checks}

    def body(self) -> bytes:
        return json.dumps(self.as_json()).encode()

    @property
    def status_code(self) -> int:
        return 200 if self.ok else 503


class DatabaseProbe:
    """Whether the database answers a read of the schema version within `timeout`, on an
    engine of its own (a Worker's reads retry for as long as an outage lasts). A probe whose
    read still hangs from before reports the database unavailable without starting another."""

    def __init__(self, url: str, timeout: float = DATABASE_TIMEOUT_SECONDS) -> None:
        self._engine = db.create_engine(url, pool_size=1, busy_timeout_ms=int(timeout * 1000))
        self._timeout = timeout
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dex-health")
        self._pending: Future[None] | None = None
        self._lock = threading.Lock()

    def check(self) -> tuple[bool, str]:
        with self._lock:
            if self._pending is not None and not self._pending.done():
                return False, "unavailable: the last read has not answered"
            self._pending = pending = self._pool.submit(self._read)
        try:
            pending.result(timeout=self._timeout)
        except FutureTimeout:
            return False, f"unavailable: no answer within {self._timeout:g} s"
        except Exception as error:
            return False, f"unavailable: {db.one_line_error(error)}"
        return True, "ok"

    def _read(self) -> None:
        with self._engine.connect() as conn:
            conn.execute(sa.text("SELECT max(version) FROM dex_schema_version"))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._engine.dispose()


def loop_answers(loop: asyncio.AbstractEventLoop | None, timeout: float) -> tuple[bool, str]:
    """Whether `loop` runs a callback within `timeout` (None: not started yet, alive)."""
    if loop is None or loop.is_closed():
        return True, "ok"
    answered = threading.Event()
    try:
        loop.call_soon_threadsafe(answered.set)
    except RuntimeError:
        return True, "ok"  # closed meanwhile: the process is stopping
    if answered.wait(timeout):
        return True, "ok"
    return False, f"the event loop did not answer within {timeout:g} s"


Probe = Callable[[], Health]
Metrics = Callable[[], tuple[bytes, str]]


class HealthServer:
    """The HTTP server of /livez, /readyz and (given `metrics`) /metrics, on a thread."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        live: Probe,
        ready: Probe,
        metrics: Metrics | None = None,
    ) -> None:
        routes: dict[str, Callable[[], tuple[int, bytes, str]]] = {
            "/livez": lambda: _json(live()),
            "/readyz": lambda: _json(ready()),
        }
        if metrics is not None:
            routes["/metrics"] = lambda: (200, *metrics())
        self._server = ThreadingHTTPServer((host, port), _handler(routes))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="dex-health-http", daemon=True
        )

    @property
    def port(self) -> int:
        port: int = self._server.server_address[1]
        return port

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _json(health: Health) -> tuple[int, bytes, str]:
    return health.status_code, health.body(), "application/json"


def _handler(
    routes: Mapping[str, Callable[[], tuple[int, bytes, str]]],
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            route = routes.get(self.path.split("?", 1)[0])
            if route is None:
                known = ", ".join(sorted(routes))
                self._answer(404, json.dumps({"detail": f"not found; try {known}"}).encode(), "")
                return
            try:
                status, body, content_type = route()
            except Exception:
                log.exception("the health endpoint %s failed", self.path)
                status, body, content_type = 500, b'{"status":"error"}', "application/json"
            self._answer(status, body, content_type)

        def _answer(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type or "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # probes every few seconds would drown the Worker's log

    return Handler


class WorkerEndpoints:
    """A Worker's HTTP endpoints: started with the Worker's `run`, stopped when it ends."""

    def __init__(self, worker: Worker, loop: asyncio.AbstractEventLoop) -> None:
        self._worker = worker
        self._loop = loop
        self._database = DatabaseProbe(worker.database_url)
        metrics = worker.metrics.render if worker.metrics is not None else None
        self._server = HealthServer(
            worker.http_host,
            worker.http_port or 0,
            live=self.live,
            ready=self.ready,
            metrics=metrics,
        ).start()

    @property
    def port(self) -> int:
        return self._server.port

    def live(self) -> Health:
        health = Health()
        health.check("event_loop", *loop_answers(self._loop, LOOP_TIMEOUT_SECONDS))
        return health

    def ready(self) -> Health:
        health = Health()
        worker = self._worker
        launched = worker.launched
        health.check("launched", launched, "ok" if launched else "not taking Steps")
        health.check("database", *self._database.check())
        runtime = worker.runtime
        if runtime is not None and runtime.database.outage.active:
            # SQLite in WAL mode reads while a lock keeps every write out: the Worker's own
            # failing transactions say so.
            health.check("database_writes", False, "unavailable: the Worker's writes fail")
        # A flow waiting for its runner does not make the Worker unready: it takes that flow
        # type's Steps, which wait, and serves the others.
        waiting = "".join(f"; waiting for {p.waiting_for}" for p in worker.pending_flows)
        health.check("flows", True, f"hosts {', '.join(worker.flow_types)}{waiting}")
        return health

    def stop(self) -> None:
        self._server.stop()
        self._database.close()
