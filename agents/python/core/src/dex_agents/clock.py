"""Times on the wire: UTC, milliseconds, and a Z, as every core writes them."""

from __future__ import annotations

from contextvars import ContextVar
from datetime import UTC, datetime, timedelta

# The running Step attempt's deadline (epoch seconds), set around its Execute when the Step
# has a method timeout: a remote runner call sends it to the runner as `deadline`.
STEP_DEADLINE: ContextVar[float | None] = ContextVar("dex_agents_step_deadline", default=None)


def utc_now() -> datetime:
    return datetime.now(UTC)


def format_time(moment: datetime) -> str:
    return (
        moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


def now_text() -> str:
    return format_time(utc_now())


def parse_time(text: str) -> datetime:
    """Accepts the Z form and the +00:00 offset form that Python 0.1.0 wrote."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def after(delta: timedelta) -> str:
    return format_time(utc_now() + delta)


def step_deadline_ms() -> int | None:
    """The running Step attempt's deadline in epoch milliseconds, or None without one."""
    deadline = STEP_DEADLINE.get()
    return None if deadline is None else int(deadline * 1000)
