"""AgentClient: starts sessions and calls the contract's RPCs from any process.

Each RPC is one transaction with the contract's locks; a Step that must start runs through the
DBOS queue, enqueued in that same transaction, so an RPC either commits with its Steps or
not at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
import uuid
import warnings
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar

from sqlalchemy.engine import Connection

from . import liveness, rpcs, store, texts, validation
from .clock import utc_now
from .db import Database, resolve_database_url
from .errors import ChannelMessageNotFoundError as ChannelMessageNotFoundError
from .errors import DatabaseNotFoundError as DatabaseNotFoundError
from .errors import FlowTypeNotHostedWarning, InvalidInputError
from .errors import MessageTooLargeError as MessageTooLargeError
from .errors import SessionExistsError as SessionExistsError
from .events import read_events
from .types import (
    AgentEvent,
    AgentMessagesPage,
    AgentSessionStartInput,
    AgentSnapshot,
    AgentUsage,
    AgentUserMessage,
    QueuedUserMessage,
    ResumableSnapshot,
    SessionSummary,
    StepExecution,
    TurnResult,
    TurnStatus,
    WorkerInfo,
    waiting_for,
)
from .waker import WAKE_POLL_SECONDS, Waker

T = TypeVar("T")


class AgentClient:
    """Async client. Every method raises `SessionNotFoundError` for an unknown session ID."""

    def __init__(self, database_url: str | None = None) -> None:
        self.database_url = resolve_database_url(database_url)
        self._database: Database | None = None
        self._dbos_migrated = False
        self._dbos_lock = threading.Lock()
        # Wake-ups for wait_for, follow_events and run_turn: started on first use, in the
        # event loop that waits.
        self._waker: Waker | None = None
        self._wake_task: asyncio.Task[None] | None = None
        # follow_events' reads in flight, shared by the followers at the same offset.
        self._event_reads: dict[tuple[str, int, int], asyncio.Task[list[AgentEvent]]] = {}

    # Plumbing -----------------------------------------------------------------------------

    def _db(self, *, create: bool = False) -> Database:
        if self._database is None:
            if not create:
                _check_sqlite_file(self.database_url)
            database = Database(self.database_url, retry_seconds=10.0)
            try:
                database.create_schema()  # migrates too (SchemaTooNewError for a newer database)
            except BaseException:
                database.close()
                raise
            self._database = database
        return self._database

    def _ready_to_enqueue(self) -> None:
        """DBOS's tables, for the writes that enqueue Steps (a session's first Step, a parked
        Step's wake). Reads never need them, so a process that only reads (`dex-agents
        history`) never imports DBOS, the larger part of the client's start-up."""
        with self._dbos_lock:  # two first writes at once migrate once
            if self._dbos_migrated:
                return
            from dbos import DBOS

            DBOS.migrate(self.database_url)
            self._dbos_migrated = True

    async def _opened(self, *, create: bool = False) -> Database:
        """The database, opened (and migrated) on a thread the first time only."""
        if self._database is not None:
            return self._database
        return await asyncio.to_thread(lambda: self._db(create=create))

    async def _write(self, fn: Callable[[Connection], T], *, create: bool = False) -> T:
        database = await self._opened(create=create)
        if not self._dbos_migrated:  # before the transaction: DBOS migrates on its own
            await asyncio.to_thread(self._ready_to_enqueue)
        return await database.write(fn)

    async def _read(self, fn: Callable[[Connection], T]) -> T:
        database = await self._opened()
        return await database.read(fn)

    def _enqueue(self, conn: Connection, session: store.Session, step_execution_id: str) -> None:
        """Enqueues a Step on its flow type's queue, which only Workers hosting it read, and
        wakes them: they take it at once."""
        assert self._database is not None
        self._database.enqueuer.enqueue(
            conn, session.flow_type, session.session_id, step_execution_id
        )

    async def _wake_feed(self) -> Waker:
        """This client's wake-ups: its own commits at once, other processes' by their commit
        (as a Worker's)."""
        database = await self._opened()
        loop = asyncio.get_running_loop()
        task = self._wake_task
        if self._waker is None or task is None or task.done() or task.get_loop() is not loop:
            if task is not None:
                with contextlib.suppress(RuntimeError):  # its loop closed
                    task.cancel()
            waker = Waker(database, WAKE_POLL_SECONDS, prune=False, turns_only=True)
            waker.bind(loop)
            database.on_wake = waker.notify_threadsafe
            self._waker = waker
            self._wake_task = loop.create_task(waker.poll_forever())
        return self._waker

    async def connect(self, *, create: bool = False) -> None:
        """Opens the database now rather than at the first call, creating its tables (or
        migrating them) when `create` is true, as a Worker does. Raises DatabaseNotFoundError for a
        missing SQLite file without `create`, DatabaseUnavailableError, or SchemaTooNewError."""
        await asyncio.to_thread(lambda: self._db(create=create))

    async def close(self) -> None:
        await self._stop_wake_feed()
        if self._database is not None:
            self._database.close()
            self._database = None

    async def _stop_wake_feed(self) -> None:
        task, self._wake_task, self._waker = self._wake_task, None, None
        if self._database is not None:
            self._database.on_wake = None
        if task is not None:
            with contextlib.suppress(RuntimeError):  # its loop closed
                task.cancel()
            if task.get_loop() is asyncio.get_running_loop():
                await asyncio.wait([task])

    async def __aenter__(self) -> AgentClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    # Sessions -----------------------------------------------------------------------------

    async def start_session(
        self,
        flow_type: str,
        initial_message: str | None = None,
        *,
        session_id: str | None = None,
        session_settings: dict[str, Any] | None = None,
        warn_if_not_hosted: bool = True,
    ) -> str:
        """Starts a session of a Flow type a Worker hosts; returns its ID. Warns
        (FlowTypeNotHostedWarning) when no live Worker hosts the flow type, unless
        `warn_if_not_hosted` is false (`not_hosted_reason` says it then)."""
        validation.identifier(flow_type, "flow_type")
        validation.optional_free_text(initial_message, "initial_message")
        if session_id is None:
            session_id = f"session-{uuid.uuid4().hex}"
        validation.path_identifier(session_id, "session_id")
        if session_settings is not None:
            validation.session_settings(session_settings)
        start = AgentSessionStartInput(
            initial_message=initial_message, session_settings=session_settings
        )

        await self._write(
            lambda conn: rpcs.start_session(conn, session_id, flow_type, start, self._enqueue),
            create=True,
        )
        if warn_if_not_hosted:
            await self._warn_if_not_hosted(flow_type)
        return session_id

    async def start_session_and_wait(
        self,
        flow_type: str,
        initial_message: str,
        *,
        session_id: str | None = None,
        session_settings: dict[str, Any] | None = None,
        timeout: float = 300.0,
    ) -> TurnResult:
        """Starts a session with `initial_message` and waits for that first turn's outcome
        (see `run_turn`); the result carries the new session's ID."""
        validation.free_text(initial_message, "initial_message")
        if not initial_message.strip():
            raise InvalidInputError("initial_message must not be blank", "initial_message")
        session_id = await self.start_session(
            flow_type,
            initial_message,
            session_id=session_id,
            session_settings=session_settings,
        )
        # The initial message begins the session's first turn, before any queued message.
        return await self._await_turn(
            session_id, timeout, after=0, is_start=lambda event: event.turn_id == "turn-1"
        )

    async def not_hosted_reason(self, flow_type: str) -> str | None:
        """Why a session of `flow_type` would wait for a Worker: None when a live Worker
        hosts the flow type."""
        now = utc_now()
        live = [w for w in await self.list_workers() if liveness.seems_live(w, now)]
        if any(flow_type in w.flow_types for w in live):
            return None
        others = sorted({t for w in live for t in w.flow_types})
        hosted = f"live Workers host {', '.join(others)}" if others else "no Worker is live"
        return (
            f"no live Worker hosts flow type {flow_type!r} ({hosted}); the session "
            f"waits until a Worker that hosts {flow_type!r} starts"
        )

    async def _warn_if_not_hosted(self, flow_type: str) -> None:
        reason = await self.not_hosted_reason(flow_type)
        if reason is not None:
            warnings.warn(FlowTypeNotHostedWarning(reason), stacklevel=3)

    async def list_sessions(self, limit: int = 100) -> list[SessionSummary]:
        validation.integer(limit, "limit", minimum=1)
        rows = await self._read(lambda conn: store.list_sessions(conn, limit))
        return [
            SessionSummary(
                session_id=s.session_id,
                flow_type=s.flow_type,
                status=s.state.status if s.state else None,
                turn_count=s.state.turn_count if s.state else 0,
                active_turn_id=s.state.active_turn_id if s.state else None,
                created_at=s.created_at,
                updated_at=s.updated_at,
                waiting_for=waiting_for(s.pending_interrupts),
            )
            for s in rows
        ]

    async def list_workers(self) -> list[WorkerInfo]:
        """The Workers that share this database, as their liveness rows show them."""
        return await self._read(liveness.list_workers)

    # RPCs ---------------------------------------------------------------------------------

    async def send_user_message(self, session_id: str, message: str | AgentUserMessage) -> bool:
        """Queues a user message; the session takes it when no turn runs. False for blank text."""
        return await self.send_user_message_for_turn(session_id, message) is not None

    async def run_turn(
        self, session_id: str, message: str | AgentUserMessage, *, timeout: float = 300.0
    ) -> TurnResult:
        """Sends a user message and waits for the outcome of the turn it begins: completed,
        failed, steered, cancelled, or waiting_for_interrupts (with the pending interrupts;
        resolve them, then `wait_for_turn` with the result's `event_offset`). A message sent
        while a turn runs waits in the queue, and this waits for its own later turn. Raises
        TimeoutError when the turn has not reached an outcome within `timeout` seconds."""
        validation.identifier(session_id, "session_id")
        message = validation.user_message(message)
        if not message.text.strip():
            await self._read(lambda conn: store.read_session(conn, session_id))
            raise InvalidInputError("message must not be blank", "message")

        # The wake-ups before the message is queued: none of its turn's can precede them.
        seen = (await self._wake_feed()).generation(store.turn_wake_key(session_id))
        queued = await self._queue_user_message(session_id, message)
        if queued is None:
            raise InvalidInputError("this session's Flow does not enable plan mode", "message")
        return await self._await_turn(
            session_id,
            timeout,
            after=queued.event_offset,
            is_start=lambda event: _payload(event).get("message_id") == queued.message_id,
            seen=seen,
        )

    async def send_user_message_for_turn(
        self, session_id: str, message: str | AgentUserMessage
    ) -> QueuedUserMessage | None:
        """`send_user_message` that says where to find the turn the message begins: the first
        `turn_started` event after `event_offset` whose payload has this `message_id` (a
        steer may move the message into the running turn's successor instead). None where
        send_user_message returns false."""
        validation.identifier(session_id, "session_id")
        message = validation.user_message(message)
        if not message.text.strip():
            await self._read(lambda conn: store.read_session(conn, session_id))
            return None
        return await self._queue_user_message(session_id, message)

    async def _queue_user_message(
        self, session_id: str, message: AgentUserMessage
    ) -> QueuedUserMessage | None:
        return await self._write(lambda conn: rpcs.send_user_message(conn, session_id, message))

    async def wait_for_turn(
        self, session_id: str, turn_id: str, *, after: int = 0, timeout: float = 300.0
    ) -> TurnResult:
        """Waits for what turn `turn_id` does after the event offset `after` (a `TurnResult`'s
        `event_offset`): ends, or raises new interrupts. Usage counts from `after`."""
        validation.identifier(session_id, "session_id")
        validation.identifier(turn_id, "turn_id")
        validation.integer(after, "after", minimum=0)
        await self._read(lambda conn: store.read_session(conn, session_id))  # SessionNotFoundError
        return await self._await_turn(
            session_id, timeout, after=after, turn_id=turn_id, is_start=lambda _: False
        )

    async def _await_turn(
        self,
        session_id: str,
        timeout: float,
        *,
        after: int,
        is_start: Callable[[AgentEvent], bool],
        turn_id: str | None = None,
        seen: int | None = None,
    ) -> TurnResult:
        """Reads the session's events after `after` until the turn (`turn_id`, or the one whose
        turn_started event `is_start` picks) has an outcome. Woken only by the commits that
        write an outcome or an interrupt (`store.TURN_OUTCOME_EVENTS`), it reads a turn's
        events about once, however many commits the turn makes; a read a second bounds what a
        lost wake-up could cost. `seen`: a wake-up generation from before the turn could have
        begun; the first read then waits for a wake-up after it."""
        waker = await self._wake_feed()
        wake_key = store.turn_wake_key(session_id)
        database = await self._opened()
        deadline = time.monotonic() + timeout
        if seen is not None:
            await waker.wait(wake_key, seen, min(timeout, 1.0))
        usage = AgentUsage()
        first_sequence = 0
        interrupted = False
        while True:
            generation = waker.generation(wake_key)
            batch = await read_events(database, session_id, after=after, limit=_EVENT_PAGE)
            for event in batch:
                after = event.offset
                if turn_id is None:
                    if event.type == "turn_started" and is_start(event):
                        turn_id = event.turn_id
                        first_sequence = int(_payload(event).get("sequence", 1))
                    continue
                if event.turn_id != turn_id:
                    continue
                if event.type in store.TURN_END_STATUSES:
                    status = store.TURN_END_STATUSES[event.type]
                    error = _payload(event).get("error") if status == "failed" else None
                    return await self._turn_result(
                        session_id, turn_id, status, first_sequence, usage, after, error=error
                    )
                if event.type == "usage_recorded":
                    recorded = _payload(event).get("recorded") or {}
                    usage = usage.plus(AgentUsage.model_validate(recorded))
                elif event.type == "interrupt_raised":
                    interrupted = True
            if turn_id is not None and interrupted and len(batch) < _EVENT_PAGE:
                # Caught up: the turn waits on interrupts when they are still pending.
                result = await self._turn_result(
                    session_id, turn_id, "waiting_for_interrupts", first_sequence, usage, after
                )
                if result.interrupts:
                    return result
                interrupted = False
            if len(batch) == _EVENT_PAGE:
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                which = f"turn {turn_id}" if turn_id else "the turn of the message sent"
                raise TimeoutError(
                    f"{which} of session {session_id} did not reach an outcome within {timeout:g} s"
                )
            await waker.wait(wake_key, generation, min(remaining, 1.0))

    async def _turn_result(
        self,
        session_id: str,
        turn_id: str,
        status: TurnStatus,
        first_sequence: int,
        usage: AgentUsage,
        offset: int,
        *,
        error: str | None = None,
    ) -> TurnResult:
        def read(conn: Connection) -> TurnResult:
            messages = store.turn_messages(
                conn, session_id, turn_id, after_sequence=max(first_sequence - 1, 0)
            )
            interrupts = []
            if status == "waiting_for_interrupts":
                session = store.read_session(conn, session_id)
                if session.state is not None and session.state.active_turn_id == turn_id:
                    interrupts = list(session.pending_interrupts)
            text = next(
                (m.text for m in reversed(messages) if m.role == "assistant" and m.text), None
            )
            return TurnResult(
                session_id=session_id,
                turn_id=turn_id,
                status=status,
                text=text,
                error=error,
                messages=messages,
                interrupts=interrupts,
                usage=usage,
                event_offset=offset,
            )

        return await self._read(read)

    async def resolve_interrupt(
        self,
        session_id: str,
        interrupt_id: str,
        approved: bool,
        rejection_message: str | None = None,
    ) -> bool:
        """Approves or rejects a pending approval (or declines a question). False when the
        interrupt is not pending or its deadline passed."""
        validation.identifier(session_id, "session_id")
        validation.identifier(interrupt_id, "interrupt_id")
        validation.flag(approved, "approved")
        validation.optional_free_text(rejection_message, "rejection_message")

        return await self._write(
            lambda conn: rpcs.resolve_interrupt(
                conn, session_id, interrupt_id, approved, rejection_message
            )
        )

    async def answer_question(self, session_id: str, interrupt_id: str, answer: str) -> bool:
        """Answers a pending question. False when it is not a pending question, its deadline
        passed, or the answer is blank or not one of its choices while free text is not
        allowed."""
        validation.identifier(session_id, "session_id")
        validation.identifier(interrupt_id, "interrupt_id")
        validation.free_text(answer, "answer")

        return await self._write(
            lambda conn: rpcs.answer_question(conn, session_id, interrupt_id, answer)
        )

    async def execute_plan(self, session_id: str, revision: int) -> bool:
        """Approves a draft (or active) plan revision for execution. False unless the session
        waits for a user message with nothing queued, steered or pending, and no execution of
        that revision is already accepted."""
        validation.identifier(session_id, "session_id")
        validation.integer(revision, "revision")

        return await self._write(lambda conn: rpcs.execute_plan(conn, session_id, revision))

    async def steer_user_message(
        self, session_id: str, *, text: str | None = None, message_id: str | None = None
    ) -> bool:
        """Redirects the active turn: by new text, or by moving a queued message (by its ID).
        With no active turn, text is queued as send_user_message queues it."""
        validation.identifier(session_id, "session_id")
        validation.optional_free_text(text, "text")
        validation.optional_identifier(message_id, "message_id")
        if (text is None) == (message_id is None) or (text is not None and not text.strip()):
            await self._read(lambda conn: store.read_session(conn, session_id))
            return False

        return await self._write(
            lambda conn: rpcs.steer_user_message(conn, session_id, text, message_id)
        )

    async def delete_queued_message(self, session_id: str, message_id: str) -> bool:
        """Deletes a queued message; False when it is not pending."""
        validation.identifier(session_id, "session_id")
        validation.identifier(message_id, "message_id")

        return await self._write(
            lambda conn: rpcs.delete_queued_message(conn, session_id, message_id)
        )

    async def cancel_turn(self, session_id: str, turn_id: str | None = None) -> bool:
        """Stops the active turn (or `turn_id`, when it is the active one): cancels a running
        model call and every waiting approval, question, timer and task poll; the turn ends
        as turn_cancelled. True means the request is recorded."""
        validation.identifier(session_id, "session_id")
        validation.optional_identifier(turn_id, "turn_id")

        return await self._write(
            lambda conn: rpcs.cancel_turn(conn, session_id, turn_id, self._enqueue)
        )

    async def update_session_settings(
        self, session_id: str, session_settings: dict[str, Any] | None
    ) -> bool:
        """Replaces the settings the next turn starts with; {} clears them. False (the contract's
        answer) for settings start_session refuses: None, not a strict JSON object, too large."""
        validation.identifier(session_id, "session_id")
        try:
            validation.session_settings(session_settings)
        except InvalidInputError:
            await self._read(lambda conn: store.read_session(conn, session_id))
            return False

        settings = session_settings or {}
        return await self._write(
            lambda conn: rpcs.update_session_settings(conn, session_id, settings)
        )

    async def get_agent_snapshot(self, session_id: str) -> AgentSnapshot:
        validation.identifier(session_id, "session_id")

        return await self._read(lambda conn: rpcs.get_agent_snapshot(conn, session_id))

    async def get_agent_snapshot_with_resume_token(self, session_id: str) -> ResumableSnapshot:
        """The snapshot and the offset of the last event it reflects, read in one
        consistent transaction: following the events after `resume_token` (read_events,
        follow_events) misses none and repeats none of what the snapshot shows."""
        validation.identifier(session_id, "session_id")
        return await self._read(
            lambda conn: rpcs.get_agent_snapshot_with_resume_token(conn, session_id)
        )

    async def list_agent_messages(
        self, session_id: str, before_sequence: int | None = None, limit: int = 50
    ) -> AgentMessagesPage:
        """Oldest first; page backwards with `next_before_sequence`. Limit clamped to 1..200."""
        validation.identifier(session_id, "session_id")
        validation.optional_integer(before_sequence, "before_sequence")
        validation.integer(limit, "limit")
        limit = max(1, min(limit, texts.LIST_MESSAGES_MAX_LIMIT))

        return await self._read(
            lambda conn: rpcs.list_agent_messages(conn, session_id, before_sequence, limit)
        )

    # History and events -------------------------------------------------------------------

    async def get_step_history(self, session_id: str) -> list[StepExecution]:
        validation.identifier(session_id, "session_id")

        def read(conn: Connection) -> list[StepExecution]:
            store.read_session(conn, session_id)
            return store.step_history(conn, session_id)

        return await self._read(read)

    async def read_events(
        self, session_id: str, after: int = 0, limit: int = 1000
    ) -> list[AgentEvent]:
        """Events after the resume token `after` (an event's `offset`)."""
        validation.identifier(session_id, "session_id")
        validation.integer(after, "after", minimum=0)
        validation.integer(limit, "limit", minimum=1)
        database = await self._opened()
        await database.read(lambda conn: store.read_session(conn, session_id))
        return await read_events(database, session_id, after=after, limit=limit)

    async def turn_start_offset(self, session_id: str, turn_id: str) -> int | None:
        """The resume token just before turn `turn_id`'s `turn_started` event (read the turn's
        events after it), or None when the session has no such turn."""
        validation.identifier(session_id, "session_id")
        validation.identifier(turn_id, "turn_id")

        def read(conn: Connection) -> int | None:
            store.read_session(conn, session_id)
            return store.turn_start_offset(conn, session_id, turn_id)

        return await self._read(read)

    async def follow_events(
        self, session_id: str, after: int = 0, poll_interval: float = 1.0
    ) -> AsyncIterator[AgentEvent]:
        """Yields events live, from the resume token on, until the caller stops. Woken by the
        commit that appends them; `poll_interval` is only the fallback between two looks.

        Any number of followers share this client's one wake feed, and followers of a session
        at the same offset share each read, so a commit costs one query, not one a follower."""
        validation.identifier(session_id, "session_id")
        validation.integer(after, "after", minimum=0)
        waker = await self._wake_feed()
        database = await self._opened()
        await database.read(lambda conn: store.read_session(conn, session_id))
        while True:
            generation = waker.generation(session_id)
            batch = await self._shared_read(database, session_id, after, generation)
            for event in batch:
                after = event.offset
                yield event
            if not batch:
                await waker.wait(session_id, generation, poll_interval)

    async def _shared_read(
        self, database: Database, session_id: str, after: int, generation: int
    ) -> list[AgentEvent]:
        """The events after `after`, read once for every follower that asks at the same wake
        generation: a read that began after a follower saw `generation` sees every commit
        that generation counts, so sharing it misses nothing."""
        loop = asyncio.get_running_loop()
        key = (session_id, after, generation)
        read = self._event_reads.get(key)
        if read is None or read.get_loop() is not loop:
            read = loop.create_task(read_events(database, session_id, after=after))
            self._event_reads[key] = read
            read.add_done_callback(lambda done: self._forget_read(key, done))
        # Shielded: one follower that stops does not cancel the read the others await.
        return await asyncio.shield(read)

    def _forget_read(self, key: tuple[str, int, int], read: asyncio.Task[list[AgentEvent]]) -> None:
        if self._event_reads.get(key) is read:
            del self._event_reads[key]
        if not read.cancelled():
            read.exception()  # each follower that awaits it still gets it

    async def wait_for(
        self,
        session_id: str,
        predicate: Callable[[AgentSnapshot], bool],
        timeout: float = 30.0,
        poll_interval: float = 1.0,
    ) -> AgentSnapshot:
        """Waits until `predicate` holds for the snapshot; raises TimeoutError with the last
        one. The snapshot is read again when a commit changes the session (`poll_interval`
        is only the fallback between two looks)."""
        validation.identifier(session_id, "session_id")
        waker = await self._wake_feed()
        deadline = time.monotonic() + timeout
        while True:
            generation = waker.generation(session_id)
            snapshot = await self.get_agent_snapshot(session_id)
            if predicate(snapshot):
                return snapshot
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                state = snapshot.state.model_dump_json() if snapshot.state else "not started"
                raise TimeoutError(
                    f"session {session_id} did not reach the expected state within "
                    f"{timeout:g} s; state: {state}"
                )
            await waker.wait(session_id, generation, min(poll_interval, remaining))


class SyncAgentClient:
    """The same calls, blocking, for scripts and notebooks (not for use inside a running
    event loop)."""

    def __init__(self, database_url: str | None = None) -> None:
        self._client = AgentClient(database_url)
        self._loop = asyncio.new_event_loop()

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        try:
            return self._loop.run_until_complete(coroutine)
        finally:
            # Between calls this loop does not run: a wake-up feed would go unread (on
            # Postgres, notifications would pile up for this connection). A waiting call
            # starts its own.
            if self._client._wake_task is not None:
                self._loop.run_until_complete(self._client._stop_wake_feed())

    def start_session(
        self,
        flow_type: str,
        initial_message: str | None = None,
        *,
        session_id: str | None = None,
        session_settings: dict[str, Any] | None = None,
    ) -> str:
        return self._run(
            self._client.start_session(
                flow_type,
                initial_message,
                session_id=session_id,
                session_settings=session_settings,
            )
        )

    def start_session_and_wait(
        self,
        flow_type: str,
        initial_message: str,
        *,
        session_id: str | None = None,
        session_settings: dict[str, Any] | None = None,
        timeout: float = 300.0,
    ) -> TurnResult:
        return self._run(
            self._client.start_session_and_wait(
                flow_type,
                initial_message,
                session_id=session_id,
                session_settings=session_settings,
                timeout=timeout,
            )
        )

    def run_turn(
        self, session_id: str, message: str | AgentUserMessage, *, timeout: float = 300.0
    ) -> TurnResult:
        return self._run(self._client.run_turn(session_id, message, timeout=timeout))

    def wait_for_turn(
        self, session_id: str, turn_id: str, *, after: int = 0, timeout: float = 300.0
    ) -> TurnResult:
        return self._run(
            self._client.wait_for_turn(session_id, turn_id, after=after, timeout=timeout)
        )

    def list_sessions(self, limit: int = 100) -> list[SessionSummary]:
        return self._run(self._client.list_sessions(limit))

    def list_workers(self) -> list[WorkerInfo]:
        return self._run(self._client.list_workers())

    def send_user_message(self, session_id: str, message: str | AgentUserMessage) -> bool:
        return self._run(self._client.send_user_message(session_id, message))

    def resolve_interrupt(
        self,
        session_id: str,
        interrupt_id: str,
        approved: bool,
        rejection_message: str | None = None,
    ) -> bool:
        return self._run(
            self._client.resolve_interrupt(session_id, interrupt_id, approved, rejection_message)
        )

    def update_session_settings(
        self, session_id: str, session_settings: dict[str, Any] | None
    ) -> bool:
        return self._run(self._client.update_session_settings(session_id, session_settings))

    def answer_question(self, session_id: str, interrupt_id: str, answer: str) -> bool:
        return self._run(self._client.answer_question(session_id, interrupt_id, answer))

    def execute_plan(self, session_id: str, revision: int) -> bool:
        return self._run(self._client.execute_plan(session_id, revision))

    def steer_user_message(
        self, session_id: str, *, text: str | None = None, message_id: str | None = None
    ) -> bool:
        return self._run(
            self._client.steer_user_message(session_id, text=text, message_id=message_id)
        )

    def delete_queued_message(self, session_id: str, message_id: str) -> bool:
        return self._run(self._client.delete_queued_message(session_id, message_id))

    def cancel_turn(self, session_id: str, turn_id: str | None = None) -> bool:
        return self._run(self._client.cancel_turn(session_id, turn_id))

    def get_agent_snapshot(self, session_id: str) -> AgentSnapshot:
        return self._run(self._client.get_agent_snapshot(session_id))

    def list_agent_messages(
        self, session_id: str, before_sequence: int | None = None, limit: int = 50
    ) -> AgentMessagesPage:
        return self._run(self._client.list_agent_messages(session_id, before_sequence, limit))

    def get_step_history(self, session_id: str) -> list[StepExecution]:
        return self._run(self._client.get_step_history(session_id))

    def read_events(self, session_id: str, after: int = 0, limit: int = 1000) -> list[AgentEvent]:
        return self._run(self._client.read_events(session_id, after, limit))

    def wait_for(
        self,
        session_id: str,
        predicate: Callable[[AgentSnapshot], bool],
        timeout: float = 30.0,
        poll_interval: float = 1.0,
    ) -> AgentSnapshot:
        return self._run(self._client.wait_for(session_id, predicate, timeout, poll_interval))

    def close(self) -> None:
        self._run(self._client.close())
        self._loop.close()


# How many events one read returns (read_events' default limit).
_EVENT_PAGE = 1000


def _payload(event: AgentEvent) -> dict[str, Any]:
    value = json.loads(event.payload)
    return value if isinstance(value, dict) else {}


def _check_sqlite_file(url: str) -> None:
    """Reads never create a database: a wrong working directory or URL gets a clear error."""
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///")
        if path and path != ":memory:" and not os.path.exists(path):
            raise DatabaseNotFoundError(
                f"no dex-agents database at {path}: start a session first, or pass the "
                "database your Worker uses (--database-url or DEX_AGENTS_DATABASE_URL)"
            )
