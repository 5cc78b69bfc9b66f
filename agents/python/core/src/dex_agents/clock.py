"""Times on the wire: UTC, milliseconds, and a Z, as every core writes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


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
