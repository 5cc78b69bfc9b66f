"""The `dex-agents` command line.

It answers at once: this module imports only click and rich, and each command imports what
it needs when it runs (the client, SQLAlchemy, a Worker and DBOS, the web app), so
`dex-agents --help` costs no database library, and the read commands never import DBOS
(bench/cli_startup.py measures it).

Every command it prints for the user to run next (a hint) runs as printed: it starts the way
this command was started (`hint_command`) and names the same database.
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from .cli_format import (
    EMPTY,
    ROLE_STYLES,
    command_line,
    compact_json,
    echo,
    fields,
    format_duration,
    format_seconds,
    format_time,
    one_line,
    parse_time,
    session_status,
    styled,
    table,
    truncate,
)
from .clock import now_text
from .errors import DexAgentsError, FlowTypeNotHostedWarning, SessionNotFoundError
from .texts import LIST_MESSAGES_DEFAULT_LIMIT, LIST_MESSAGES_MAX_LIMIT, SNAPSHOT_MESSAGE_LIMIT

if TYPE_CHECKING:
    from .client import AgentClient
    from .flow import AgentSessionFlow
    from .types import (
        AgentEvent,
        AgentInterrupt,
        AgentMessage,
        AgentSnapshot,
        AgentToolCall,
        AgentUsage,
        PendingUserMessage,
        StepExecution,
        WorkerInfo,
    )
    from .worker import PendingFlow

COMMANDLINE = ParameterSource.COMMANDLINE
# As dex_agents.db defines them (which imports SQLAlchemy); a test keeps them equal.
DATABASE_URL_ENV = "DEX_AGENTS_DATABASE_URL"
DEFAULT_DATABASE_URL = "sqlite:///dex_agents.sqlite"

T = TypeVar("T")

TEXT_WIDTH = 160
PAYLOAD_WIDTH = 120
ERROR_WIDTH = 60
DETAIL_WIDTH = 60
DELTA_EVENTS = frozenset({"text_delta", "reasoning_delta"})


@click.group()
@click.version_option(package_name="dex-agents", prog_name="dex-agents")
def cli() -> None:
    """Durable agent sessions: run Workers, start sessions, inspect them."""


@cli.command()
@click.argument("target", required=False)
@click.option("--database-url", envvar="DEX_AGENTS_DATABASE_URL", default=None)
@click.option(
    "--worker-id",
    envvar="DEX_AGENTS_WORKER_ID",
    default=None,
    help="A stable ID, so a restart recovers this Worker's Steps at once [env "
    "DEX_AGENTS_WORKER_ID; default: an ID of this process alone].",
)
@click.option(
    "--remote",
    "remotes",
    multiple=True,
    metavar="FLOW=URL",
    help="Host flow type FLOW, whose runner is served at URL by another process "
    "(repeatable; token from DEX_AGENTS_RUNNER_TOKEN).",
)
@click.option(
    "--remote-config",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="FILE.toml",
    help="Host the remote flows of a TOML file: [flows.<FlowType>] url = ..., and options.",
)
@click.option(
    "--http-port",
    envvar="DEX_AGENTS_HTTP_PORT",
    type=click.IntRange(0, 65535),
    default=None,
    help="Serve /livez, /readyz (and /metrics with --metrics) on this port "
    "[env DEX_AGENTS_HTTP_PORT; default: none].",
)
@click.option(
    "--http-host",
    envvar="DEX_AGENTS_HTTP_HOST",
    default="127.0.0.1",
    show_default=True,
    help="The address of --http-port (0.0.0.0 for a container's probes).",
)
@click.option(
    "--metrics",
    is_flag=True,
    envvar="DEX_AGENTS_METRICS",
    help="Prometheus metrics at /metrics of --http-port (extra `metrics`).",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    envvar="DEX_AGENTS_LOG_FORMAT",
    default="text",
    show_default=True,
    help="json: one JSON object a line, with session, turn and Step IDs.",
)
@click.option("--debug", is_flag=True, help="Show the traceback of a failure.")
def worker(
    target: str | None,
    database_url: str | None,
    worker_id: str | None,
    remotes: tuple[str, ...],
    remote_config: str | None,
    http_port: int | None,
    http_host: str,
    metrics: bool,
    log_format: str,
    debug: bool,
) -> None:
    """Run a Worker for the flows at TARGET (module:attribute) and the remote flows.

    SIGTERM or Ctrl-C stops it cleanly: running model and tool calls finish first (up to
    DEX_AGENTS_WORKER_DRAIN_SECONDS, default 20); a second signal stops at once. A database
    that does not answer yet is waited for; so is a remote runner, whose flow is served once
    it answers (the Worker serves its other flows meanwhile).
    """
    if target is None and not remotes and remote_config is None:
        raise click.UsageError("give TARGET (module:attribute), --remote or --remote-config")
    from .logs import configure

    configure(log_format)
    endpoints = {"http_port": http_port, "http_host": http_host, "metrics": metrics}
    try:
        _run_worker(target, database_url, worker_id, remotes, remote_config, endpoints)
    except Exception as error:
        if debug:
            raise
        raise CliError(_worker_failure(error, database_url).splitlines()[0]) from None


def _worker_flows(
    target: str | None, remotes: Sequence[str], remote_config: str | None
) -> list[AgentSessionFlow | PendingFlow]:
    """The flows of TARGET, then those of --remote and --remote-config: each remote flow as
    its runner describes it, or, when the runner is not up yet, pending (the Worker starts
    anyway and serves the flow once the runner answers)."""
    from .remote import parse_remote, read_remote_config, remote_flow_or_pending
    from .worker import load_flows

    flows: list[AgentSessionFlow | PendingFlow] = []
    flows.extend(load_flows(target) if target is not None else [])
    for value in remotes:
        flow_type, url = parse_remote(value)
        flows.append(remote_flow_or_pending(url, flow_type))
    if remote_config is not None:
        for flow_type, url, options in read_remote_config(remote_config):
            flows.append(remote_flow_or_pending(url, flow_type, options))
    return flows


def _run_worker(
    target: str | None,
    database_url: str | None,
    worker_id: str | None,
    remotes: Sequence[str] = (),
    remote_config: str | None = None,
    endpoints: dict[str, Any] | None = None,
) -> None:
    import asyncio
    import gc

    from .worker import Worker

    flows = _worker_flows(target, remotes, remote_config)
    runner = Worker(flows, database_url=database_url, worker_id=worker_id, **(endpoints or {}))
    # What the imports built lives as long as the process: kept out of the collector's full
    # passes, which otherwise walk those some 250,000 objects every few turns (about 170 ms
    # of CPU each).
    gc.collect()
    gc.freeze()

    # Worker.run stops cleanly on SIGTERM and Ctrl-C, as the program's main task.
    asyncio.run(runner.run())


def _worker_failure(error: Exception, database_url: str | None, what: str = "the Worker") -> str:
    """One line: what is wrong and what to do."""
    from sqlalchemy.exc import ArgumentError, DBAPIError

    from .db import one_line_error

    if isinstance(error, DexAgentsError):
        return str(error)
    check = f"check --database-url or {DATABASE_URL_ENV}"
    if isinstance(error, ArgumentError):  # also NoSuchModuleError: an unknown scheme
        return f"cannot use the database URL {_display_url(database_url)}: {error}; {check}"
    if isinstance(error, DBAPIError):
        return (
            f"cannot use the database {_display_url(database_url)}: "
            f"{one_line_error(error)}; {check}"
        )
    return f"{what} failed: {type(error).__name__}: {error} (run with --debug for the traceback)"


@cli.command()
@click.option("--database-url", envvar="DEX_AGENTS_DATABASE_URL", default=None, metavar="URL")
def demo(database_url: str | None) -> None:
    """Run a durable session offline: a read, an approval, a SIGKILL, the Step history."""
    from .db import resolve_database_url
    from .demo import run_demo

    run_demo(resolve_database_url(database_url), hint=hint)


@cli.command()
@click.option("--database-url", envvar="DEX_AGENTS_DATABASE_URL", default=None, metavar="URL")
@click.option("--model", help="A LiteLLM model string [default: the scripted demo model].")
@click.option("--session", "session_id", help="Resume this chat session.")
def chat(database_url: str | None, model: str | None, session_id: str | None) -> None:
    """Chat with a durable agent in the terminal (needs the stepwise extra)."""
    from .chat import main as chat_main
    from .db import resolve_database_url

    def resume_hint(*args: str) -> str:  # resuming the chat keeps its model
        resumes = model is not None and args[:1] == ("chat",)
        return hint(*args, *(["--model", model] if resumes and model else []))

    chat_main(resolve_database_url(database_url), model, session_id, hint=resume_hint)


@cli.command()
@click.option("--database-url", envvar="DEX_AGENTS_DATABASE_URL", default=None, metavar="URL")
@click.option("--to", "target", required=True, metavar="FILE", help="The new file to write.")
def backup(database_url: str | None, target: str) -> None:
    """Copy a SQLite database to FILE while Workers run (Postgres: use pg_dump)."""
    from .backup import backup_sqlite
    from .db import resolve_database_url

    try:
        size = backup_sqlite(resolve_database_url(database_url), target)
    except DexAgentsError as error:
        raise CliError(str(error)) from None
    echo(f"backed up {_display_url(database_url)} to {target} ({size:,} bytes)")


def main() -> None:
    # A stored text may hold anything a str can (a lone surrogate too): print it escaped
    # rather than fail on it.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    _exit_with_parent()
    cli()


PARENT_PID_ENV = "DEX_AGENTS_PARENT_PID"
"""Set by the test harness (dex_agents.testing.processes) to its own process ID: the command
stops when that process is gone, however it ended (SIGKILL too)."""
ORPHAN_CHECK_SECONDS = 0.5
ORPHAN_STOP_SECONDS = 30.0


def _exit_with_parent() -> None:
    """With PARENT_PID_ENV set, a thread watches the parent: once this process has another
    (the parent died), SIGTERM stops this process's group cleanly, and SIGKILL follows if it
    is still there ORPHAN_STOP_SECONDS later. The variable is removed from the environment, so
    that what this process starts does not watch a process that is not its parent."""
    value = os.environ.pop(PARENT_PID_ENV, "")
    if not value.isdigit():
        return
    import threading
    import time

    parent = int(value)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(ORPHAN_CHECK_SECONDS)
        group = os.getpgrp()
        leader = group == os.getpid()  # the harness starts it in a session of its own
        for sig, pause in ((signal.SIGTERM, ORPHAN_STOP_SECONDS), (signal.SIGKILL, 0.0)):
            if leader:
                os.killpg(group, sig)
            else:
                os.kill(os.getpid(), sig)
            time.sleep(pause)

    threading.Thread(target=watch, name="dex-agents-parent-watch", daemon=True).start()


@cli.command("model-server")
@click.option(
    "--script",
    "script_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help='A JSON list of replies: {"text": ...} or {"tool_calls": [{"id", "name", "arguments"}]}.',
)
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@click.option("--once", is_flag=True, help="Answer the script once, then 500s [default: loop].")
@click.option(
    "--log",
    "log_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Append each request received to this file, one JSON line (path, body) each.",
)
def model_server(script_path: str, port: int, once: bool, log_path: str | None) -> None:
    """Serve scripted replies as an OpenAI-compatible model on 127.0.0.1.

    An agent whose model client points at the printed URL runs without a model key."""
    from .testing.model_server import load_script, serve_script

    try:
        replies = load_script(script_path)
    except (ValueError, KeyError) as error:
        raise CliError(str(error)) from None
    try:
        serve_script(
            replies, port=port, once=once, request_log=pathlib.Path(log_path) if log_path else None
        )
    except OSError as error:
        raise CliError(f"cannot listen on 127.0.0.1:{port}: {error}") from None


WEB_TOKEN_ENV = "DEX_AGENTS_WEB_TOKEN"
WEB_EXTRA_HINT = (
    "from a clone of the repository, run it as `uv run --project agents/python/core --extra "
    "web dex-agents serve`; from the wheels scripts/build.sh builds, install it with "
    "`pip install --find-links dist 'dex-agents[web]'`"
)


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--database-url", envvar=DATABASE_URL_ENV, default=None, metavar="URL")
@click.option(
    "--token",
    envvar=WEB_TOKEN_ENV,
    help=f"The bearer token requests must send [env {WEB_TOKEN_ENV}; default: a new one, "
    "printed in the viewer's URL].",
)
@click.option(
    "--no-auth",
    is_flag=True,
    help="Accept every request: anyone who reaches the port reads and drives every session.",
)
@click.option(
    "--cors-origin",
    "cors_origins",
    multiple=True,
    metavar="ORIGIN",
    help="A browser origin allowed to call the API (repeatable).",
)
@click.option(
    "--max-body-bytes",
    envvar="DEX_AGENTS_WEB_MAX_BODY_BYTES",
    type=click.IntRange(min=0),
    default=16 * 1024 * 1024,
    show_default=True,
    help="The longest request body taken in; a longer one gets 413 "
    "[env DEX_AGENTS_WEB_MAX_BODY_BYTES].",
)
@click.option(
    "--header-timeout-seconds",
    envvar="DEX_AGENTS_WEB_HEADER_TIMEOUT_SECONDS",
    type=click.FloatRange(min=0.1),
    default=10.0,
    show_default=True,
    help="A request's headers must arrive within this time, or the connection closes "
    "[env DEX_AGENTS_WEB_HEADER_TIMEOUT_SECONDS].",
)
@click.option(
    "--body-timeout-seconds",
    envvar="DEX_AGENTS_WEB_BODY_TIMEOUT_SECONDS",
    type=click.FloatRange(min=0.1),
    default=30.0,
    show_default=True,
    help="A request's body must arrive in full within this time after its headers, or the "
    "connection closes [env DEX_AGENTS_WEB_BODY_TIMEOUT_SECONDS].",
)
@click.option(
    "--max-connections",
    envvar="DEX_AGENTS_WEB_MAX_CONNECTIONS",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="Open connections past this get 503 and are closed at once "
    "[env DEX_AGENTS_WEB_MAX_CONNECTIONS].",
)
@click.option(
    "--heartbeat-seconds",
    envvar="DEX_AGENTS_WEB_HEARTBEAT_SECONDS",
    type=click.FloatRange(min=0.01),
    default=15.0,
    hidden=True,
)
@click.option(
    "--metrics",
    is_flag=True,
    envvar="DEX_AGENTS_METRICS",
    help="Prometheus metrics at /metrics, with the API's auth (extra `metrics`).",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    envvar="DEX_AGENTS_LOG_FORMAT",
    default="text",
    show_default=True,
    help="json: one JSON object a line.",
)
@click.option("--debug", is_flag=True, help="Show the traceback of a failure.")
def serve(
    host: str,
    port: int,
    database_url: str | None,
    token: str | None,
    no_auth: bool,
    cors_origins: tuple[str, ...],
    max_body_bytes: int,
    header_timeout_seconds: float,
    body_timeout_seconds: float,
    max_connections: int,
    heartbeat_seconds: float,
    metrics: bool,
    log_format: str,
    debug: bool,
) -> None:
    """Serve the session API, its event streams and the viewer over HTTP (extra `web`).

    Prints the viewer's URL; with no token given, a new one is in its fragment. Ctrl-C or
    SIGTERM stops it, closing open streams within a few seconds. --no-auth serves loopback
    only: it needs a loopback --host, and answers only loopback Host names.
    """
    import asyncio
    import secrets

    try:
        from .web.guards import is_loopback_name
        from .web.serve import TransportLimits, viewer_url
        from .web.serve import serve as run_server
    except ImportError as error:
        raise CliError(
            f"dex-agents serve needs the web extra ({error}): {WEB_EXTRA_HINT}"
        ) from None
    if log_format == "json":
        import logging

        from .logs import configure

        configure("json", logging.WARNING)
    if no_auth and token:
        raise CliError(f"--no-auth and --token (or {WEB_TOKEN_ENV}) exclude each other")
    if no_auth and not is_loopback_name(host):
        raise CliError(
            f"--no-auth serves this machine only: --host {host} is not a loopback address "
            "(127.0.0.1, ::1, localhost); drop --no-auth to serve others with a token"
        )
    limits = TransportLimits(
        header_timeout_seconds=header_timeout_seconds,
        body_timeout_seconds=body_timeout_seconds,
        max_connections=max_connections,
        max_body_bytes=max_body_bytes,
    )
    shown = None if no_auth or token else secrets.token_urlsafe(24)
    token = None if no_auth else token or shown

    def announce(bound_port: int) -> None:
        click.echo(f"dex-agents viewer: {viewer_url(host, bound_port, shown)}")

    server = run_server(
        host=host,
        port=port,
        database_url=database_url,
        token=token,
        cors_origins=cors_origins,
        heartbeat_seconds=heartbeat_seconds,
        announce=announce,
        limits=limits,
        metrics=metrics,
    )
    try:
        asyncio.run(server)
    except KeyboardInterrupt:  # before the server started
        raise SystemExit(130) from None
    except OSError as error:
        raise CliError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    except Exception as error:
        if debug:
            raise
        failure = _worker_failure(error, database_url, "the server")
        raise CliError(failure.splitlines()[0]) from None


# Plumbing -----------------------------------------------------------------------------------


class CliError(click.ClickException):
    """An expected failure: `error: <message>` on stderr, exit code 1, no traceback."""

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.message}", err=True)


database_option = click.option(
    "--database-url",
    envvar=DATABASE_URL_ENV,
    default=None,
    metavar="URL",
    help=f"Session database [env {DATABASE_URL_ENV}; default {DEFAULT_DATABASE_URL}, "
    "the file in the working directory].",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead.")
session_argument = click.argument("session_id")


def _call(database_url: str | None, call: Callable[[AgentClient], Awaitable[T]]) -> T:
    """Runs `call` with a client of the database; expected failures become a CliError."""
    import asyncio

    from sqlalchemy.exc import ArgumentError, DBAPIError

    from .client import AgentClient

    async def run() -> T:
        async with AgentClient(database_url) as client:
            return await call(client)

    try:
        return asyncio.run(run())
    except SessionNotFoundError as error:
        raise CliError(
            f"no agent session {error.session_id!r}: check the ID with `{hint('sessions')}` "
            f"(database: {_display_url(database_url)})"
        ) from None
    except (ValueError, DexAgentsError) as error:
        raise CliError(str(error)) from None
    except (ArgumentError, DBAPIError) as error:
        detail = error.orig if isinstance(error, DBAPIError) else error
        raise CliError(
            f"cannot use the database {_display_url(database_url)}: {detail}; "
            f"check --database-url or {DATABASE_URL_ENV}"
        ) from None


def hint(*args: str) -> str:
    """A command for the user to run next, as printed: started as this one was, on the same
    database (`command_line`)."""
    context = click.get_current_context(silent=True)
    url = context.params.get("database_url") if context is not None else None
    if context is None or context.get_parameter_source("database_url") != COMMANDLINE:
        url = None  # the default, or the environment's, which the next command reads too
    return command_line(*args, database_url=url if isinstance(url, str) else None)


def _display_url(database_url: str | None) -> str:
    from .logs import redacted_url

    return redacted_url(database_url or DEFAULT_DATABASE_URL)


def _json_object(
    _ctx: click.Context, _param: click.Parameter, value: str | None
) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        parsed = json.loads(value)
    except ValueError as error:
        raise click.BadParameter(f"not valid JSON ({error})") from None
    if not isinstance(parsed, dict):
        raise click.BadParameter('must be a JSON object, like \'{"model": "small"}\'')
    return parsed


# Sessions -----------------------------------------------------------------------------------


@cli.command()
@database_option
@click.option("--limit", type=click.IntRange(1), default=100, show_default=True)
@json_option
def sessions(database_url: str | None, limit: int, as_json: bool) -> None:
    """List sessions, newest first."""
    summaries = _call(database_url, lambda client: client.list_sessions(limit))
    if as_json:
        click.echo(json.dumps([s.model_dump() for s in summaries], indent=2))
        return
    if not summaries:
        click.echo(
            f"no sessions in {_display_url(database_url)}; "
            f"start one with `{hint('start', 'FLOW_TYPE', 'MESSAGE')}`"
        )
        return
    headers = ["SESSION ID", "FLOW TYPE", "STATUS", "TURNS", "ACTIVE TURN", "CREATED"]
    rows = [
        [
            s.session_id,
            s.flow_type,
            session_status(s.status, s.waiting_for),
            s.turn_count,
            s.active_turn_id,
            format_time(s.created_at),
        ]
        for s in summaries
    ]
    echo(table(headers, rows))


@cli.command()
@database_option
@json_option
def workers(database_url: str | None, as_json: bool) -> None:
    """List the Workers that share the database and when each last beat."""
    found = _call(database_url, lambda client: client.list_workers())
    if as_json:
        click.echo(json.dumps([w.model_dump() for w in found], indent=2))
        return
    if not found:
        click.echo(
            f"no Workers have run on {_display_url(database_url)}; "
            f"start one with `{hint('worker', 'module:flows')}`"
        )
        return
    now = datetime.now(UTC)
    headers = ["WORKER ID", "STATE", "FLOW TYPES", "HOST", "PID", "STARTED", "LAST BEAT"]
    rows = [
        [
            w.worker_id,
            styled(_worker_state(w, now)),
            ", ".join(w.flow_types),
            w.host,
            w.pid,
            format_time(w.started_at),
            f"{format_duration(w.heartbeat_at, now.isoformat())} ago",
        ]
        for w in found
    ]
    echo(table(headers, rows))


def _worker_state(worker: WorkerInfo, now: datetime) -> str:
    """`silent` for a running Worker past its lease: a live Worker takes its Steps over."""
    from . import liveness

    if worker.state == "running" and not liveness.seems_live(worker, now):
        return "silent"
    return worker.state


@cli.command()
@database_option
@click.argument("flow_type")
@click.argument("message", required=False)
@click.option("--session-id", help="The new session's ID [default: a random one].")
@click.option(
    "--settings", metavar="JSON", callback=_json_object, help="Session settings, a JSON object."
)
def start(
    database_url: str | None,
    flow_type: str,
    message: str | None,
    session_id: str | None,
    settings: dict[str, Any] | None,
) -> None:
    """Start a session; prints its ID.

    The session of FLOW_TYPE starts with MESSAGE, if given, once a Worker that hosts
    FLOW_TYPE runs (`dex-agents worker module:flows`)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FlowTypeNotHostedWarning)
        new_id = _call(
            database_url,
            lambda client: client.start_session(
                flow_type, message, session_id=session_id, session_settings=settings
            ),
        )
    for warning in caught:
        click.echo(f"warning: {warning.message}", err=True)
    click.echo(new_id)


@cli.command()
@database_option
@session_argument
@click.argument("message")
def send(database_url: str | None, session_id: str, message: str) -> None:
    """Send a user message.

    The session takes MESSAGE at once when no turn is running, or when the running turn ends."""

    async def call(client: AgentClient) -> tuple[str, AgentSnapshot] | None:
        queued = await client.send_user_message_for_turn(session_id, message)
        if queued is None:
            return None
        return queued.message_id, await client.get_agent_snapshot(session_id)

    sent = _call(database_url, call)
    if sent is None:
        raise CliError("the message is blank; nothing was queued (send some text)")
    queued_id, snapshot = sent
    state = snapshot.state
    still_queued = any(q.message_id == queued_id for q in snapshot.queued_messages)
    if state is None or state.active_turn_id is None or not still_queued:
        # No turn runs, or the Worker has already begun this message's turn.
        click.echo("sent; it starts a turn")
        return
    click.echo(
        f"queued behind the running turn {state.active_turn_id} as {queued_id}; it starts the "
        f"next turn ({hint('steer', session_id, '--queued', queued_id)} redirects the running "
        "turn with it)"
    )


# Interrupts ---------------------------------------------------------------------------------


@cli.command()
@database_option
@session_argument
@click.argument("interrupt_id")
def approve(database_url: str | None, session_id: str, interrupt_id: str) -> None:
    """Approve a pending tool call.

    INTERRUPT_ID is listed under pending interrupts by `dex-agents snapshot`."""
    _resolve(database_url, session_id, interrupt_id, approved=True, message=None)
    click.echo(f"approved {interrupt_id}; the tool call runs")


@cli.command()
@database_option
@session_argument
@click.argument("interrupt_id")
@click.option("--message", help="Why, for the model [default: a generic rejection].")
def reject(
    database_url: str | None, session_id: str, interrupt_id: str, message: str | None
) -> None:
    """Reject a pending tool call, or decline a question.

    INTERRUPT_ID is listed under pending interrupts by `dex-agents snapshot`; the model sees
    the rejection (--message) instead of the tool's result."""
    _resolve(database_url, session_id, interrupt_id, approved=False, message=message)
    click.echo(f"rejected {interrupt_id}; the model is told it did not run")


@cli.command()
@database_option
@session_argument
@click.argument("interrupt_id")
@click.argument("answer")
def answer(database_url: str | None, session_id: str, interrupt_id: str, answer: str) -> None:
    """Answer a pending question (ask_user, or a tool's question)."""

    async def call(client: AgentClient) -> AgentSnapshot | None:
        if await client.answer_question(session_id, interrupt_id, answer):
            return None
        return await client.get_agent_snapshot(session_id)

    snapshot = _call(database_url, call)
    if snapshot is None:
        click.echo(f"answered {interrupt_id}")
        return
    match = next((i for i in snapshot.pending_interrupts if i.interrupt_id == interrupt_id), None)
    if match is not None and match.kind == "question":
        choices = ", ".join(match.choices)
        raise CliError(
            f"the answer is blank, or not one of the choices ({choices}) of a question "
            "that takes no free text"
        )
    raise CliError(_not_pending(session_id, interrupt_id, snapshot, approved=False))


# Turn control -------------------------------------------------------------------------------


@cli.command()
@database_option
@session_argument
@click.argument("message", required=False)
@click.option("--queued", "message_id", help="Steer with this queued message's ID instead.")
def steer(
    database_url: str | None, session_id: str, message: str | None, message_id: str | None
) -> None:
    """Redirect the running turn with MESSAGE (or a queued message).

    Calls that have not taken effect are abandoned; the steered message starts the next
    turn. With no turn running, MESSAGE is queued."""
    steered = _call(
        database_url,
        lambda client: client.steer_user_message(session_id, text=message, message_id=message_id),
    )
    if not steered:
        raise CliError(
            "nothing was steered: give exactly one of MESSAGE or --queued, a non-blank "
            "message, or the ID of a message that is still queued "
            f"(see {hint('snapshot', session_id)})"
        )
    click.echo("steered")


@cli.command()
@database_option
@session_argument
@click.option("--turn", "turn_id", help="Only if this is the active turn.")
def cancel(database_url: str | None, session_id: str, turn_id: str | None) -> None:
    """Stop the running turn: abort its model call and its waiting calls."""
    if not _call(database_url, lambda client: client.cancel_turn(session_id, turn_id)):
        raise CliError("no turn of this session is running (or --turn names another turn)")
    click.echo("cancelling; the turn ends as turn_cancelled")


@cli.command(name="unqueue")
@database_option
@session_argument
@click.argument("message_id")
def unqueue(database_url: str | None, session_id: str, message_id: str) -> None:
    """Delete a queued message (IDs are listed by dex-agents snapshot)."""
    if not _call(database_url, lambda client: client.delete_queued_message(session_id, message_id)):
        raise CliError(f"message {message_id} is not queued")
    click.echo(f"deleted queued message {message_id}")


@cli.command(name="execute-plan")
@database_option
@session_argument
@click.argument("revision", type=int)
def execute_plan(database_url: str | None, session_id: str, revision: int) -> None:
    """Approve plan REVISION for execution."""
    if not _call(database_url, lambda client: client.execute_plan(session_id, revision)):
        raise CliError(
            f"plan revision {revision} cannot run now: it must be the current draft or active "
            "revision, and the session must wait for a message with nothing queued or pending"
        )
    click.echo(f"executing plan revision {revision}")


def _resolve(
    database_url: str | None,
    session_id: str,
    interrupt_id: str,
    *,
    approved: bool,
    message: str | None,
) -> None:
    async def resolve(client: AgentClient) -> AgentSnapshot | None:
        if await client.resolve_interrupt(session_id, interrupt_id, approved, message):
            return None
        return await client.get_agent_snapshot(session_id)

    snapshot = _call(database_url, resolve)
    if snapshot is not None:
        raise CliError(_not_pending(session_id, interrupt_id, snapshot, approved=approved))


def _not_pending(
    session_id: str, interrupt_id: str, snapshot: AgentSnapshot, *, approved: bool
) -> str:
    pending = snapshot.pending_interrupts
    match = next((i for i in pending if i.interrupt_id == interrupt_id), None)
    if match is not None and match.kind == "question" and approved:
        return (
            f"interrupt {interrupt_id} is a question, not a tool approval: answer it with "
            f"{hint('answer', session_id, interrupt_id, 'TEXT')}, or decline it with "
            f"{hint('reject', session_id, interrupt_id)}"
        )
    ids = ", ".join(i.interrupt_id for i in pending) or "none"
    return (
        f"interrupt {interrupt_id} is not pending (already resolved, or its deadline passed); "
        f"pending: {ids}"
    )


# Snapshot and messages ----------------------------------------------------------------------


@cli.command()
@database_option
@session_argument
@click.option(
    "--messages",
    "message_count",
    type=click.IntRange(0, SNAPSHOT_MESSAGE_LIMIT),
    default=20,
    show_default=True,
    help="How many of the last messages to show.",
)
@json_option
def snapshot(database_url: str | None, session_id: str, message_count: int, as_json: bool) -> None:
    """Show a session's state.

    Status, usage, pending interrupts, the active turn's tool calls, queued messages and the
    last messages."""
    snap = _call(database_url, lambda client: client.get_agent_snapshot(session_id))
    if as_json:
        click.echo(snap.to_json(indent=2))
        return
    sections = [
        _state_section(session_id, snap),
        _interrupts_section(session_id, snap.pending_interrupts),
        _tool_calls_section(snap.tool_calls),
        _queue_section("Queued messages", snap.queued_messages),
        _queue_section("Steered messages", snap.steered_messages),
        _recent_messages_section(session_id, snap.messages, message_count),
    ]
    parts: list[RenderableType | str] = []
    for section in sections:
        if section:
            parts += ["", *section] if parts else section
    echo(*parts)


Section = list[RenderableType | str]
"""A part of the snapshot: its lines and tables; empty when it has nothing to show."""


def _heading(text: str) -> Text:
    return Text(text, style="bold")


def _state_section(session_id: str, snap: AgentSnapshot) -> Section:
    state = snap.state
    pairs: list[tuple[str, object]] = [("session", session_id)]
    if state is None:
        pairs.append(("status", "not started: no Worker hosting its flow type has taken it yet"))
    else:
        pairs += [
            ("status", session_status(state.status, snap.waiting_for, detailed=True)),
            ("turns", f"{state.turn_count} completed or failed"),
            ("active turn", state.active_turn_id),
            ("mode", state.interaction_mode),
            ("last error", state.last_turn_error),
        ]
    pairs.append(("usage", _usage(snap.usage)))
    if snap.session_settings:
        pairs.append(("settings", json.dumps(snap.session_settings)))
    if snap.plan is not None:
        done = sum(task.status == "completed" for task in snap.plan.tasks)
        plan = f"revision {snap.plan.revision}, {snap.plan.status}, {done}/{len(snap.plan.tasks)}"
        pairs.append(("plan", plan + " tasks completed"))
    if snap.context_summary is not None:
        summary = snap.context_summary
        pairs.append(("summary", f"messages up to #{summary.last_sequence} are summarized"))
    return [fields(pairs)]


def _usage(usage: AgentUsage) -> str:
    calls = "model call" if usage.model_calls == 1 else "model calls"
    return (
        f"{usage.model_calls} {calls}, {usage.input_tokens:,} input tokens "
        f"({usage.cached_input_tokens:,} cached), {usage.output_tokens:,} output tokens "
        f"({usage.reasoning_tokens:,} reasoning)"
    )


def _interrupts_section(session_id: str, interrupts: list[AgentInterrupt]) -> Section:
    if not interrupts:
        return ["Pending interrupts: none"]
    headers = ["ID", "KIND", "TOOL", "ARGUMENTS", "DEADLINE"]
    rows = [
        [i.interrupt_id, i.kind, i.tool_name, _interrupt_detail(i), _deadline(i.deadline)]
        for i in interrupts
    ]
    listing = table(headers, rows, [None, None, None, DETAIL_WIDTH, None])
    hints = [_resolve_hint(session_id, i) for i in interrupts[:3]]
    return [_heading(f"Pending interrupts ({len(interrupts)})"), listing, *hints]


def _resolve_hint(session_id: str, interrupt: AgentInterrupt) -> str:
    first = interrupt.interrupt_id
    if interrupt.kind == "question":
        return (
            f"  answer with: {hint('answer', session_id, first, 'TEXT')}  |  "
            f"decline: {hint('reject', session_id, first)}"
        )
    return (
        f"  resolve with: {hint('approve', session_id, first)}  |  "
        f"{hint('reject', session_id, first, '--message', 'TEXT')}"
    )


def _interrupt_detail(interrupt: AgentInterrupt) -> str:
    if interrupt.kind == "question" and interrupt.question:
        choices = f" [{' / '.join(interrupt.choices)}]" if interrupt.choices else ""
        return f"{interrupt.question}{choices}"
    return compact_json(interrupt.arguments)


def _deadline(deadline: str | None) -> str:
    moment = parse_time(deadline)
    if moment is None:
        return deadline or "none"
    remaining = (moment - datetime.now(UTC)).total_seconds()
    when = "passed" if remaining <= 0 else f"in {format_seconds(remaining)}"
    return f"{format_time(deadline)} ({when})"


def _tool_calls_section(calls: list[AgentToolCall]) -> Section:
    if not calls:
        return ["Tool calls of the active turn: none"]
    headers = ["ID", "TOOL", "EFFECT", "STATUS", "DETAIL"]
    rows = [
        [c.tool_call_id, c.tool_name, c.effect, styled(c.status), _call_detail(c)] for c in calls
    ]
    listing = table(headers, rows, [None, None, None, None, DETAIL_WIDTH])
    return [_heading(f"Tool calls of {calls[0].turn_id} ({len(calls)})"), listing]


def _call_detail(call: AgentToolCall) -> str | None:
    if call.error:
        return f"error: {call.error}"
    if call.rejection_message:
        return f"rejected: {call.rejection_message}"
    if call.output is not None:
        return f"output: {compact_json(call.output)}"
    if call.input_question:
        return f"asks: {call.input_question}"
    return f"args: {compact_json(call.arguments)}"


def _queue_section(title: str, messages: list[PendingUserMessage]) -> Section:
    if not messages:
        return [f"{title}: none"] if title.startswith("Queued") else []
    rows = [[m.message_id, m.message.text] for m in messages]
    listing = table(["ID", "MESSAGE"], rows, [None, TEXT_WIDTH])
    return [_heading(f"{title} ({len(messages)})"), listing]


def _recent_messages_section(session_id: str, messages: list[AgentMessage], count: int) -> Section:
    if count == 0:
        return []
    if not messages:
        return ["Messages: none yet"]
    shown = messages[-count:]
    section: Section = [
        _heading(f"Last {len(shown)} messages" if len(shown) > 1 else "Last message"),
        transcript(shown),
    ]
    if shown[0].sequence > 1:
        earlier = hint("messages", session_id, "--before", str(shown[0].sequence))
        section.append(f"earlier: {earlier}")
    return section


def transcript(messages: Iterable[AgentMessage], *, full: bool = False) -> Table:
    """A row a message: `#seq`, role and content, on one line cut to fit, or (`full`) the
    whole text, wrapped."""
    rows = [[f"#{m.sequence}", styled(m.role, ROLE_STYLES), _message_content(m)] for m in messages]
    headers = ["#", "ROLE", "MESSAGE"]
    if full:
        return table(headers, rows, wrap=[2])
    return table(headers, rows, [None, None, TEXT_WIDTH])


def _message_content(message: AgentMessage) -> str:
    tool = f"{message.tool_name or 'tool'} [{message.tool_call_id}]"
    if message.role == "tool":
        return f"{tool} returned {compact_json(message.tool_output or '')}"
    if message.tool_call_id and message.tool_name:
        arguments = compact_json(message.tool_arguments or "{}")
        call = f"calls {message.tool_name}({arguments}) [{message.tool_call_id}]"
        return f"{message.text}\n{call}" if message.text else call
    if message.text is not None:
        return message.text
    return f"(no display text) {compact_json(message.framework_item)}"


@cli.command()
@database_option
@session_argument
@click.option("--before", type=click.IntRange(1), help="Only messages before this sequence.")
@click.option(
    "--limit",
    type=click.IntRange(1, LIST_MESSAGES_MAX_LIMIT),
    default=LIST_MESSAGES_DEFAULT_LIMIT,
    show_default=True,
)
@click.option("--full", is_flag=True, help="Whole texts instead of one truncated line each.")
@json_option
def messages(
    database_url: str | None,
    session_id: str,
    before: int | None,
    limit: int,
    full: bool,
    as_json: bool,
) -> None:
    """List a session's messages.

    One page, oldest first; page back with --before."""
    page = _call(database_url, lambda client: client.list_agent_messages(session_id, before, limit))
    if as_json:
        click.echo(page.to_json(indent=2))
        return
    if not page.messages:
        click.echo(f"no messages before #{before}" if before else "no messages yet")
        return
    # Oldest first: the way to the earlier messages goes above them.
    if page.next_before_sequence is None:
        click.echo("(from the first message)")
    else:
        more = [] if limit == LIST_MESSAGES_DEFAULT_LIMIT else ["--limit", str(limit)]
        earlier = hint("messages", session_id, "--before", str(page.next_before_sequence), *more)
        click.echo(f"(earlier messages: {earlier})")
    echo(transcript(page.messages, full=full))


# History and events -------------------------------------------------------------------------


@cli.command()
@database_option
@session_argument
@json_option
def history(database_url: str | None, session_id: str, as_json: bool) -> None:
    """Show a session's Step executions.

    The chain of Step types, then one row per Step execution, in the order they were
    scheduled."""
    steps = _call(database_url, lambda client: client.get_step_history(session_id))
    if as_json:
        from pydantic import TypeAdapter

        from .types import StepExecution

        click.echo(TypeAdapter(list[StepExecution]).dump_json(steps, indent=2).decode())
        return
    click.echo(" -> ".join(step.step_type for step in steps))
    click.echo()
    headers = ["#", "STEP EXECUTION", "TYPE", "STATUS", "ATTEMPTS", "STARTED", "DURATION", "ERROR"]
    rows = [_step_row(number, step) for number, step in enumerate(steps, 1)]
    echo(table(headers, rows, [None] * 7 + [ERROR_WIDTH]))


def _step_row(number: int, step: StepExecution) -> list[object]:
    """A Step that waits started when it began waiting: its duration is its wait, and one
    still waiting shows how long it has waited so far."""
    started = format_time(step.started_at, precise=True) if step.started_at else EMPTY
    duration = format_duration(step.started_at, step.ended_at)
    if step.ended_at is None and step.started_at and step.status in ("waiting", "parked"):
        duration = f"{format_duration(step.started_at, now_text())} so far"
    return [
        number,
        step.step_execution_id,
        step.step_type,
        styled(step.status),
        step.attempts,
        started,
        duration,
        step.error,
    ]


@cli.command()
@database_option
@session_argument
@click.option("--after", type=click.IntRange(0), default=0, help="Only events after this offset.")
@click.option("--follow", is_flag=True, help="Keep printing new events until Ctrl-C.")
@json_option
def events(
    database_url: str | None, session_id: str, after: int, follow: bool, as_json: bool
) -> None:
    """Print a session's events; --follow streams them.

    One line per event: offset, type, turn, Step execution, attempt and payload. A run of
    text or reasoning deltas prints as one line."""
    printer = EventPrinter(as_json=as_json, start_offset=after)
    if follow:
        _follow(database_url, session_id, printer)
        return
    _call(database_url, lambda client: _read_all(client, session_id, printer))
    printer.close()
    if printer.count == 0 and not as_json:
        click.echo(f"no events after offset {after}")


async def _read_all(client: AgentClient, session_id: str, printer: EventPrinter) -> None:
    batch_size = 1000
    while True:
        batch = await client.read_events(session_id, after=printer.last_offset, limit=batch_size)
        for event in batch:
            printer.feed(event)
        if len(batch) < batch_size:
            return


def _follow(database_url: str | None, session_id: str, printer: EventPrinter) -> None:
    async def follow(client: AgentClient) -> None:
        async for event in client.follow_events(session_id, after=printer.last_offset):
            printer.feed(event)

    try:
        _call(database_url, follow)
    except KeyboardInterrupt:
        printer.close()
        click.echo(
            f"stopped after offset {printer.last_offset}; continue with: "
            f"{hint('events', session_id, '--after', str(printer.last_offset), '--follow')}",
            err=True,
        )


class EventPrinter:
    """Prints events one line each; a run of deltas of one Step attempt streams onto one line."""

    HEADER = f"{'OFFSET':>6}  {'TYPE':<22}  {'TURN':<8}  {'STEP EXECUTION':<24}  ATTEMPT  PAYLOAD"

    def __init__(self, *, as_json: bool, start_offset: int) -> None:
        self.as_json = as_json
        self.last_offset = start_offset
        self.count = 0
        self._run: tuple[str, str, int] | None = None
        self._run_start = 0
        self._run_length = 0

    def feed(self, event: AgentEvent) -> None:
        if self.as_json:
            click.echo(event.to_json())
        else:
            self._print(event)
        self.last_offset = event.offset
        self.count += 1

    def close(self) -> None:
        """Ends an open run of deltas."""
        if self._run is None:
            return
        runs = f"  ({self._run_length} deltas, offsets {self._run_start}-{self.last_offset})"
        click.echo('"' + (runs if self._run_length > 1 else ""))
        self._run = None

    def _print(self, event: AgentEvent) -> None:
        if self.count == 0:
            click.echo(self.HEADER)
        text = _delta_text(event)
        key = (event.type, event.step_execution_id, event.attempt)
        if text is not None and key == self._run:
            click.echo(_escaped(text), nl=False)
            self._run_length += 1
            return
        self.close()
        if text is None:
            click.echo(f"{self._prefix(event)}  {truncate(_payload(event.payload), PAYLOAD_WIDTH)}")
            return
        click.echo(f'{self._prefix(event)}  "{_escaped(text)}', nl=False)
        self._run, self._run_start, self._run_length = key, event.offset, 1

    @staticmethod
    def _prefix(event: AgentEvent) -> str:
        step = truncate(event.step_execution_id or EMPTY, 24)
        return (
            f"{event.offset:>6}  {truncate(event.type, 22):<22}  "
            f"{truncate(event.turn_id or EMPTY, 8):<8}  {step:<24}  {event.attempt:>7}"
        )


def _delta_text(event: AgentEvent) -> str | None:
    if event.type not in DELTA_EVENTS:
        return None
    try:
        payload = json.loads(event.payload)
    except ValueError:
        return None
    text = payload.get("text") if isinstance(payload, dict) else None
    return text if isinstance(text, str) else None


def _escaped(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _payload(payload: str) -> str:
    """A JSON object as `key=value` pairs; anything else as compact JSON."""
    try:
        value = json.loads(payload)
    except ValueError:
        return one_line(payload)
    if not isinstance(value, dict):
        return compact_json(payload)
    return " ".join(f"{key}={_payload_value(item)}" for key, item in value.items())


def _payload_value(value: object) -> str:
    if isinstance(value, str) and value and not any(c.isspace() or c in "\"'=" for c in value):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
