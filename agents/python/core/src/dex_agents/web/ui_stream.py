"""One turn's events as AI SDK UI message stream chunks (`uiMessageChunkSchema` of the `ai`
package, version 7.0.173).

`TurnTranslator.feed(event)` returns the chunks an event adds; `ui_follow` feeds it the live
events and sends the chunks. The mapping:

- the stream opens with `start` (`messageId` `assistant-<turn_id>`);
- a RunModel Step execution (`RunModel-<n>`) is one AI SDK step: `start-step` at its first
  event, `finish-step` when the next one starts or the turn ends;
- `text_delta` and `reasoning_delta` are `text-start`/`-delta`/`-end` and
  `reasoning-start`/`-delta`/`-end`; parts stay open until the Step commits (its first event
  that is not a delta), so a failed attempt's parts can still be taken back;
- a new attempt of the open Step execution (a higher `attempt`) is `reset-step`: the browser
  removes the parts the step added so far (the failed attempt's) and the new attempt's parts
  follow in the same step. A turn that fails while its model call's parts are open takes
  them back the same way (a failed model call stores nothing), so the message holds what the
  stored messages (`/ui-messages`) hold;
- a tool call is a dynamic tool part: `tool-input-available` (`dynamic: true`) at
  `tool_call_deferred`, then `tool-output-available`, `tool-output-error` or
  `tool-output-denied` at `tool_call_finished`, with input and result from the records (or
  the stored messages once the turn ended), through the `lookup` the translator is given;
- an approval is `tool-approval-request` with `approvalId` = the `interrupt_id`;
- a question is a `data-dex-question` part (`id` = the `interrupt_id`) with the question, its
  choices and `status: "pending"`, updated in place to `answered` or `declined`; the tool part
  that asked stays `input-available`, and the stream stays open while it waits (answer it
  with the session API's `/answer`);
- the end: `finish` `stop` (completed); `error` + `finish` `error` (failed); `finish`
  `other` (steered: the steered messages start the next turn); `abort` with reason
  `turn_cancelled` (cancelled); `finish` `tool-calls` when the turn waits only for pending
  approvals (`finish_waiting`), so `useChat` can send the answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..types import AgentEvent
from .ui_messages import QUESTION_PART, ToolOutcome, ToolView, assistant_message_id, question_data

Chunk = dict[str, Any]
ToolLookup = Callable[[str], "ToolView | None"]
ToolState = Literal["running", "approval", "question", "final"]

RUN_MODEL_PREFIX = "RunModel-"
DELTA_EVENTS = ("text_delta", "reasoning_delta")
TURN_END_EVENTS = ("turn_completed", "turn_failed", "turn_steered", "turn_cancelled")
# When a finished call's result is not found (a runner that stores no unfinished-turn
# messages), what its status alone says.
_STATUS_ONLY: dict[str, ToolOutcome] = {
    "succeeded": ToolOutcome("output-available"),
    "failed": ToolOutcome("output-error", error_text="the tool call failed"),
    "outcome_unknown": ToolOutcome("output-error", error_text="the tool call's outcome is unknown"),
    "rejected": ToolOutcome("output-denied"),
}


@dataclass
class _Step:
    step_execution_id: str
    attempt: int


@dataclass
class TurnTranslator:
    """The chunks of one turn, event by event (pure: no I/O)."""

    turn_id: str
    lookup: ToolLookup
    step: _Step | None = None
    step_open: bool = False
    text_id: str | None = None
    reasoning_id: str | None = None
    open_parts: list[tuple[str, str]] = field(default_factory=list)  # (kind, id)
    tools: dict[str, ToolState] = field(default_factory=dict)
    interrupts: dict[str, str] = field(default_factory=dict)  # interrupt ID -> tool call ID
    questions: dict[str, dict[str, Any]] = field(default_factory=dict)
    ended: bool = False

    @property
    def message_id(self) -> str:
        return assistant_message_id(self.turn_id)

    def start(self) -> list[Chunk]:
        return [{"type": "start", "messageId": self.message_id}]

    def feed(self, event: AgentEvent) -> list[Chunk]:
        if event.turn_id != self.turn_id or self.ended:
            return []
        payload = payload_of(event)
        chunks: list[Chunk] = []
        if event.step_execution_id.startswith(RUN_MODEL_PREFIX):
            entered = self._enter_step(event)
            if entered is None:
                return []  # a late event of an earlier attempt
            chunks += entered
        if event.type in DELTA_EVENTS:
            return chunks + self._delta(event, payload)
        if event.type == "turn_failed" and self.open_parts:
            chunks += self._reset_step()
        chunks += self._close_parts()
        handler = _HANDLERS.get(event.type)
        if handler is not None:
            chunks += handler(self, payload)
        return chunks

    # Steps and parts ------------------------------------------------------------------------

    def _enter_step(self, event: AgentEvent) -> list[Chunk] | None:
        step = self.step
        if step is not None and step.step_execution_id == event.step_execution_id:
            if event.attempt < step.attempt:
                return None
            if event.attempt == step.attempt:
                return []
            self.step = _Step(event.step_execution_id, event.attempt)
            return self._reset_step()
        chunks = self._close_step()
        self.step = _Step(event.step_execution_id, event.attempt)
        self.step_open = True
        return [*chunks, {"type": "start-step"}]

    def _close_step(self) -> list[Chunk]:
        chunks = self._close_parts()
        if self.step_open:
            chunks.append({"type": "finish-step"})
            self.step_open = False
        return chunks

    def _close_parts(self) -> list[Chunk]:
        chunks: list[Chunk] = [{"type": f"{kind}-end", "id": i} for kind, i in self.open_parts]
        self.open_parts = []
        self.text_id = self.reasoning_id = None
        return chunks

    def _reset_step(self) -> list[Chunk]:
        """Takes back what the open step streamed (a failed model call attempt's parts): the
        browser removes the step's parts and forgets its open ones, so none is ended."""
        if not self.step_open:
            # The browser's step is closed: reset-step would remove an earlier step's parts.
            return self._close_parts()
        self.open_parts = []
        self.text_id = self.reasoning_id = None
        return [{"type": "reset-step"}]

    def _delta(self, event: AgentEvent, payload: dict[str, Any]) -> list[Chunk]:
        text = payload.get("text")
        if not isinstance(text, str) or not text:
            return []
        kind = "text" if event.type == "text_delta" else "reasoning"
        chunks: list[Chunk] = []
        part_id = self.text_id if kind == "text" else self.reasoning_id
        if part_id is None:
            # A switch between text and reasoning starts a new part; the other stays open.
            part_id = f"{kind}-{event.offset}"
            self.open_parts.append((kind, part_id))
            chunks.append({"type": f"{kind}-start", "id": part_id})
        if kind == "text":
            self.text_id, self.reasoning_id = part_id, None
        else:
            self.reasoning_id, self.text_id = part_id, None
        chunks.append({"type": f"{kind}-delta", "id": part_id, "delta": text})
        return chunks

    # Tool calls and interrupts ----------------------------------------------------------------

    def _deferred(self, payload: dict[str, Any]) -> list[Chunk]:
        call_id = str(payload.get("tool_call_id"))
        self.tools[call_id] = "running"
        view = self.lookup(call_id)
        return [
            {
                "type": "tool-input-available",
                "toolCallId": call_id,
                "toolName": view.tool_name if view else str(payload.get("tool_name")),
                "input": view.input if view else None,
                "dynamic": True,
            }
        ]

    def _finished(self, payload: dict[str, Any]) -> list[Chunk]:
        call_id = str(payload.get("tool_call_id"))
        if call_id not in self.tools:
            return []
        self.tools[call_id] = "final"
        view = self.lookup(call_id)
        outcome = view.outcome if view and view.outcome else None
        if outcome is None:
            outcome = _STATUS_ONLY.get(str(payload.get("status")), _STATUS_ONLY["failed"])
        return [outcome_chunk(call_id, outcome)]

    def _raised(self, payload: dict[str, Any]) -> list[Chunk]:
        interrupt_id = str(payload.get("interrupt_id"))
        call_id = str(payload.get("tool_call_id"))
        if call_id not in self.tools:
            return []
        self.interrupts[interrupt_id] = call_id
        if payload.get("kind") == "question":
            self.tools[call_id] = "question"
            self.questions[interrupt_id] = payload
            return [_question_chunk(interrupt_id, payload, "pending")]
        self.tools[call_id] = "approval"
        request = {"type": "tool-approval-request", "approvalId": interrupt_id}
        return [{**request, "toolCallId": call_id}]

    def _resolved(self, payload: dict[str, Any]) -> list[Chunk]:
        interrupt_id = str(payload.get("interrupt_id"))
        call_id = self.interrupts.pop(interrupt_id, None)
        if call_id is None:
            return []
        if self.tools.get(call_id) in ("approval", "question"):
            self.tools[call_id] = "running"
        raised = self.questions.pop(interrupt_id, None)
        if raised is None:
            return []
        status = "answered" if payload.get("answered") else "declined"
        return [_question_chunk(interrupt_id, raised, status)]

    # The end ------------------------------------------------------------------------------------

    def _end(self, reason: str, error: str | None = None) -> list[Chunk]:
        self.ended = True
        chunks = self._close_step()
        if reason == "error":
            chunks.append({"type": "error", "errorText": error or "the turn failed"})
        if reason == "abort":
            return [*chunks, {"type": "abort", "reason": "turn_cancelled"}]
        return [*chunks, {"type": "finish", "finishReason": reason}]

    def _completed(self, _payload: dict[str, Any]) -> list[Chunk]:
        return self._end("stop")

    def _failed(self, payload: dict[str, Any]) -> list[Chunk]:
        return self._end("error", str(payload.get("error") or ""))

    def _steered(self, _payload: dict[str, Any]) -> list[Chunk]:
        return self._end("other")

    def _cancelled(self, _payload: dict[str, Any]) -> list[Chunk]:
        return self._end("abort")

    @property
    def waits_for_approvals_only(self) -> bool:
        """Every call is final or waits for an approval, and one waits."""
        states = set(self.tools.values())
        return "approval" in states and states <= {"approval", "final"}

    def pending_approvals(self) -> set[str]:
        return {i for i, call in self.interrupts.items() if self.tools.get(call) == "approval"}

    def finish_waiting(self) -> list[Chunk]:
        """The end of a stream whose turn waits for approvals: the browser answers them."""
        self.ended = True
        return [*self._close_step(), {"type": "finish", "finishReason": "tool-calls"}]

    def end_from_state(self, views: dict[str, ToolView], error: str | None) -> list[Chunk]:
        """The end of a turn whose end event the stream did not get: each open call's result
        from committed state, then `finish` (`error` when the session says the turn failed)."""
        chunks: list[Chunk] = []
        for call_id, state in self.tools.items():
            view = views.get(call_id)
            if state != "final" and view is not None and view.outcome is not None:
                self.tools[call_id] = "final"
                chunks.append(outcome_chunk(call_id, view.outcome))
        return chunks + self._end("error" if error else "other", error)


def outcome_chunk(call_id: str, outcome: ToolOutcome) -> Chunk:
    if outcome.state == "output-available":
        return {
            "type": "tool-output-available",
            "toolCallId": call_id,
            "output": outcome.output,
            "dynamic": True,
        }
    if outcome.state == "output-error":
        return {
            "type": "tool-output-error",
            "toolCallId": call_id,
            "errorText": outcome.error_text or "",
            "dynamic": True,
        }
    return {"type": "tool-output-denied", "toolCallId": call_id}


def _question_chunk(interrupt_id: str, payload: dict[str, Any], status: str) -> Chunk:
    return {
        "type": QUESTION_PART,
        "id": interrupt_id,
        "data": question_data(interrupt_id, payload, status),
    }


def payload_of(event: AgentEvent) -> dict[str, Any]:
    """The event's payload as a dict ({} for one that is not a JSON object)."""
    try:
        value = json.loads(event.payload)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


_HANDLERS: dict[str, Callable[[TurnTranslator, dict[str, Any]], list[Chunk]]] = {
    "tool_call_deferred": TurnTranslator._deferred,
    "tool_call_finished": TurnTranslator._finished,
    "interrupt_raised": TurnTranslator._raised,
    "interrupt_resolved": TurnTranslator._resolved,
    "turn_completed": TurnTranslator._completed,
    "turn_failed": TurnTranslator._failed,
    "turn_steered": TurnTranslator._steered,
    "turn_cancelled": TurnTranslator._cancelled,
}


@dataclass
class BrowserParts:
    """What the browser holds open after each chunk sent: the step and the text and
    reasoning parts (what a resume token records)."""

    step: str | None = None
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)

    def apply(self, chunk: Chunk, step_execution_id: str | None) -> None:
        kind = chunk["type"]
        if kind == "start-step":
            self.step = step_execution_id
        elif kind in ("finish-step", "finish", "abort"):
            self.step, self.text, self.reasoning = None, [], []
        elif kind == "reset-step":
            self.text, self.reasoning = [], []
        elif kind in ("text-start", "reasoning-start"):
            self._list(kind).append(chunk["id"])
        elif kind in ("text-end", "reasoning-end"):
            opened = self._list(kind)
            if chunk["id"] in opened:
                opened.remove(chunk["id"])

    def _list(self, kind: str) -> list[str]:
        return self.text if kind.startswith("text") else self.reasoning

    def reopen(self) -> list[Chunk]:
        """The chunks that give a browser which lost its stream state these parts again."""
        return [{"type": "text-start", "id": i} for i in self.text] + [
            {"type": "reasoning-start", "id": i} for i in self.reasoning
        ]
