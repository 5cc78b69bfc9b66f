"""A turn's UI message stream, live: follows the session's events through the AgentClient
(woken by commits), translates the turn's with `TurnTranslator`, and gives each chunk its
resume token.

A `StreamPlan` says where to begin: the turn a queued message begins (a POST of a user
message), or a known turn from its start; events up to `emit_after` rebuild the
translator's state without being sent (an exact resume, or the continuation after
approvals). The stream ends at the turn's end event; when it waits only for pending
approvals (`finish` `tool-calls`); or, when the committed state shows the turn ended but the
stream has no end event for it (events lost), from the committed state.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from ..client import AgentClient
from ..types import AgentEvent, ResumableSnapshot
from .ui_messages import ToolView, turn_tool_views
from .ui_stream import BrowserParts, Chunk, TurnTranslator, payload_of
from .ui_token import UIStreamToken

# When no event came for this long, the stream looks at the committed state (a turn that
# ended without its end event, a message that left the queue without a turn).
IDLE_CHECK_SECONDS = 5.0
# follow_events is woken by commits; this is only its fallback look.
FALLBACK_LOOK_SECONDS = 30.0
MESSAGE_GONE = (
    "the message left the queue without starting a turn of its own (it was deleted, or "
    "steered into a running turn)"
)


@dataclass(frozen=True)
class StreamPlan:
    session_id: str
    # Follow the session's events after this offset.
    after: int
    # The turn to stream, and the offset just before its turn_started event...
    turn_id: str | None = None
    turn_start: int = 0
    # ...or the queued message whose turn to stream (turn_id None).
    message_id: str | None = None
    # Events up to this offset only rebuild state; `skip` chunks of the next one are sent.
    emit_after: int = 0
    skip: int = 0
    # The parts the browser holds open at `emit_after` (an exact resume re-opens them).
    reopen: BrowserParts = field(default_factory=BrowserParts)


@dataclass(frozen=True)
class UIChunk:
    chunk: Chunk
    # The chunk's resume token (None only for a stream that found no turn).
    token: str | None


class _Follower:
    """follow_events in a task of its own, so the stream can look up from an idle wait."""

    def __init__(self, client: AgentClient, session_id: str, after: int) -> None:
        self.queue: asyncio.Queue[AgentEvent] = asyncio.Queue()
        self._events = client.follow_events(
            session_id, after=after, poll_interval=FALLBACK_LOOK_SECONDS
        )
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        async for event in self._events:
            await self.queue.put(event)

    async def next(self, timeout: float) -> AgentEvent | None:
        if self.queue.empty() and self.task.done():
            self.task.result()  # its error
        try:
            return await asyncio.wait_for(self.queue.get(), timeout)
        except TimeoutError:
            return None

    async def close(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self.task


class ToolBook:
    """The turn's tool calls as the stream shows them, read from committed state when an
    event names a call the book does not know yet, or a result it does not have."""

    def __init__(self, client: AgentClient, session_id: str) -> None:
        self.client = client
        self.session_id = session_id
        self.turn_id: str | None = None
        self.views: dict[str, ToolView] = {}

    def needs(self, event: AgentEvent, payload_call_id: str | None) -> bool:
        if payload_call_id is None:
            return False
        view = self.views.get(payload_call_id)
        if event.type == "tool_call_deferred":
            return view is None
        return event.type == "tool_call_finished" and (view is None or view.outcome is None)

    async def refresh(self) -> None:
        assert self.turn_id is not None
        snapshot = await self.client.get_agent_snapshot(self.session_id)
        self.views.update(turn_tool_views(snapshot, self.turn_id))

    def lookup(self, tool_call_id: str) -> ToolView | None:
        return self.views.get(tool_call_id)


class _TurnStream:
    """The state of one response: the translator, what was sent, where the events stand."""

    def __init__(self, client: AgentClient, plan: StreamPlan) -> None:
        self.client = client
        self.plan = plan
        self.book = ToolBook(client, plan.session_id)
        self.translator: TurnTranslator | None = None
        self.turn_start = plan.turn_start
        self.parts = BrowserParts()
        self.last = plan.after
        self.started = False
        self.done = False
        if plan.turn_id is not None:
            self._adopt(plan.turn_id, plan.turn_start)

    def _adopt(self, turn_id: str, turn_start: int) -> None:
        self.translator = TurnTranslator(turn_id, self.book.lookup)
        self.book.turn_id = turn_id
        self.turn_start = turn_start

    # Tokens and sending --------------------------------------------------------------------

    def _token(self, offset: int, sent: int) -> str | None:
        if self.translator is None:
            return None
        return UIStreamToken(
            turn=self.translator.turn_id,
            start=self.turn_start,
            o=offset,
            k=sent,
            step=self.parts.step,
            text=tuple(self.parts.text),
            reasoning=tuple(self.parts.reasoning),
        ).encode()

    def _send(
        self, chunks: list[Chunk], event_offset: int | None = None, skipped: int = 0
    ) -> list[UIChunk]:
        """Each chunk with its token: after an event's last chunk, the event's offset; after
        one of its other chunks, the offset before it and how many of its chunks were sent.
        Chunks of no event (`event_offset` None) stand where the stream stands."""
        translator = self.translator
        step = translator.step.step_execution_id if translator and translator.step else None
        sent: list[UIChunk] = []
        for index, chunk in enumerate(chunks, start=skipped + 1):
            self.parts.apply(chunk, step)
            if event_offset is None:
                token = self._token(self.last, self._pending_skip())
            elif index == skipped + len(chunks):
                token = self._token(event_offset, 0)
            else:
                token = self._token(event_offset - 1, index)
            sent.append(UIChunk(chunk, token))
        return sent

    def _pending_skip(self) -> int:
        return self.plan.skip if self.last == self.plan.emit_after else 0

    def _start_if_due(self) -> list[UIChunk]:
        if self.started or self.translator is None or self.last < self.plan.emit_after:
            return []
        self.started = True
        reopen = self.plan.reopen
        # The browser's step is open only if its token says so (a continuation after
        # approvals follows a stream that closed it).
        self.translator.step_open = reopen.step is not None
        self.parts = BrowserParts(reopen.step, list(reopen.text), list(reopen.reasoning))
        return self._send(self.translator.start() + reopen.reopen())

    def begin(self) -> list[UIChunk]:
        """The opening chunks, when nothing is to be rebuilt first."""
        return self._start_if_due()

    # Events ----------------------------------------------------------------------------------

    async def on_event(self, event: AgentEvent) -> list[UIChunk]:
        lost = event.offset != self.last + 1
        if self.translator is None and not self._match_turn(event):
            self.last = event.offset
            return []
        translator = self.translator
        assert translator is not None
        silent = event.offset <= self.plan.emit_after
        sent = [] if silent else self._start_if_due()
        if not silent and self.book.needs(event, _call_id(event)):
            await self.book.refresh()
        chunks = translator.feed(event)
        self.last = event.offset
        if silent:
            sent += self._start_if_due()
        else:
            skipped = self.plan.skip if event.offset == self.plan.emit_after + 1 else 0
            sent += self._send(chunks[skipped:], event.offset, skipped)
        if lost and not translator.ended:
            sent += await self.look_at_committed_state()
        self.done = self.done or translator.ended
        return sent

    def _match_turn(self, event: AgentEvent) -> bool:
        if event.type != "turn_started" or event.turn_id is None:
            return False
        if payload_of(event).get("message_id") != self.plan.message_id:
            return False
        self._adopt(event.turn_id, event.offset - 1)
        return True

    async def on_caught_up(self) -> list[UIChunk]:
        """No event is queued: a turn that waits only for approvals ends this stream."""
        translator = self.translator
        if translator is None or not self.started or translator.ended:
            return []
        if not translator.waits_for_approvals_only:
            return []
        read = await self.client.get_agent_snapshot_with_resume_token(self.plan.session_id)
        if read.resume_token != self.last:
            return []  # more events committed: they come next
        state = read.snapshot.state
        pending = {i.interrupt_id for i in read.snapshot.pending_interrupts}
        if state is None or state.active_turn_id != translator.turn_id:
            return []
        if not translator.pending_approvals() <= pending:
            return []
        self.done = True
        return self._send(translator.finish_waiting())

    async def look_at_committed_state(self) -> list[UIChunk]:
        """After an idle wait or a gap: ends the stream when the committed state shows the
        turn ended (or the message gone) and no event after `last` will say so."""
        read = await self.client.get_agent_snapshot_with_resume_token(self.plan.session_id)
        if read.resume_token > self.last and await self._events_after_last():
            return []  # more events committed: they come next
        if self.translator is None:
            return self._message_gone(read)
        state = read.snapshot.state
        translator = self.translator
        if state is None or state.active_turn_id == translator.turn_id or translator.ended:
            return []
        self.done = True
        views = turn_tool_views(read.snapshot, translator.turn_id)
        error = state.last_turn_error if state.active_turn_id is None else None
        sent = self._start_if_due()
        return sent + self._send(translator.end_from_state(views, error))

    async def _events_after_last(self) -> bool:
        """Whether the session still holds an event after `last` (events that were written
        and then removed, by an operator pruning the table, never come)."""
        after = await self.client.read_events(self.plan.session_id, after=self.last, limit=1)
        return bool(after)

    def _message_gone(self, read: ResumableSnapshot) -> list[UIChunk]:
        queued = {m.message_id for m in read.snapshot.queued_messages}
        if self.plan.message_id is None or self.plan.message_id in queued:
            return []
        self.done = True
        chunks: list[Chunk] = [
            {"type": "start"},
            {"type": "error", "errorText": MESSAGE_GONE},
            {"type": "finish", "finishReason": "error"},
        ]
        return self._send(chunks)


async def follow_turn(client: AgentClient, plan: StreamPlan) -> AsyncIterator[UIChunk]:
    """The turn's chunks with their tokens, until the stream ends (see the module)."""
    stream = _TurnStream(client, plan)
    follower = _Follower(client, plan.session_id, plan.after)
    try:
        for chunk in stream.begin():
            yield chunk
        while not stream.done:
            event = await follower.next(IDLE_CHECK_SECONDS)
            if event is None:
                sent = await stream.look_at_committed_state()
            else:
                sent = await stream.on_event(event)
                if not stream.done and follower.queue.empty():
                    sent += await stream.on_caught_up()
            for chunk in sent:
                yield chunk
    finally:
        await follower.close()


def _call_id(event: AgentEvent) -> str | None:
    if event.type not in ("tool_call_deferred", "tool_call_finished"):
        return None
    value = payload_of(event).get("tool_call_id")
    return value if isinstance(value, str) else None
