"""Log lines an operator can ship: one JSON object per line (`--log-format json`).

Each line carries the time, level, logger and message, and, when the line was logged while a
Step ran, the session, turn and Step execution IDs as fields of their own (`session_id`,
`turn_id`, `step_execution_id`), read from the Step the driver is running (`current_step`,
a context variable the driver sets; database transactions run with the caller's context).
A failure's traceback is a field (`traceback`) only on error lines: an expected condition
(an outage, a failed attempt that is retried) is logged as a warning with its one-line
`error`, never a traceback.
"""

from __future__ import annotations

import json
import logging
import os
import traceback
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

if TYPE_CHECKING:
    from .stepkit import StepContext

LOG_FORMAT_ENV = "DEX_AGENTS_LOG_FORMAT"
LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# The Step the current task drives (runtime.run_step sets it).
current_step: ContextVar[StepContext[Any] | None] = ContextVar("dex_current_step", default=None)


class JsonFormatter(logging.Formatter):
    """One JSON object per record, with the IDs of the Step being run."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(step_fields())
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            line["error"] = f"{type(error).__name__}: {error}"
            if record.levelno >= logging.ERROR:
                line["traceback"] = "".join(traceback.format_exception(*record.exc_info))
        return json.dumps(line, default=str)


def step_fields() -> dict[str, str]:
    """The IDs of the Step being run here, if any."""
    ctx = current_step.get()
    if ctx is None:
        return {}
    fields = {"session_id": ctx.session_id, "step_execution_id": ctx.step_execution_id}
    turn_id = _turn_id(ctx)
    if turn_id:
        fields["turn_id"] = turn_id
    return fields


def _turn_id(ctx: StepContext[Any]) -> str | None:
    """The turn of what the Step's begin loaded (a turn, a tool call record), else of its
    input."""
    for holder in (ctx.loaded, getattr(ctx.loaded, "record", None), ctx.step_input):
        turn_id = (
            holder.get("turn_id") if isinstance(holder, dict) else getattr(holder, "turn_id", None)
        )
        if isinstance(turn_id, str):
            return turn_id
    return None


def configure(log_format: str | None = None, level: int = logging.INFO) -> None:
    """Configures the root logger for a command: `log_format` text or json (default: from
    DEX_AGENTS_LOG_FORMAT, else text)."""
    chosen = (log_format or os.environ.get(LOG_FORMAT_ENV) or "text").lower()
    if chosen not in LOG_FORMATS:
        raise ValueError(f"the log format must be text or json, not {chosen!r}")
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if chosen == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=True)


def redacted_url(url: str | URL) -> str:
    """A database URL as logs and messages show it: its password hidden; a text that is no
    URL, as its repr."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return repr(url)
