"""Plain-text formatting for the CLI: tables, truncation, times and durations. Standard
library only."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from datetime import datetime

ELLIPSIS = "…"
EMPTY = "-"

_WHITESPACE = re.compile(r"\s+")


def one_line(text: str) -> str:
    """Collapses every run of whitespace, newlines included, into one space."""
    return _WHITESPACE.sub(" ", text).strip()


def truncate(text: str, width: int) -> str:
    """Cuts `text` to `width` characters, the last one an ellipsis when anything was cut."""
    if width < 1:
        return ""
    return text if len(text) <= width else text[: width - 1] + ELLIPSIS


def cell(value: object) -> str:
    """A value as table text: None is a dash, text is put on one line."""
    if value is None or value == "":
        return EMPTY
    return one_line(str(value))


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    max_widths: Sequence[int | None] = (),
) -> str:
    """Columns sized to their widest cell, capped by `max_widths` (None: no cap); numbers align
    right. The last column is not padded, so lines carry no trailing spaces."""
    body = [list(row) for row in rows]
    numeric = [
        all(isinstance(row[i], int) for row in body) and bool(body) for i in range(len(headers))
    ]
    lines: list[Sequence[object]] = [headers, *body]
    texts = [[cell(value) for value in line] for line in lines]
    widths = [max(len(line[i]) for line in texts) for i in range(len(headers))]
    for i, cap in enumerate(max_widths):
        if cap is not None:
            widths[i] = min(widths[i], max(cap, len(headers[i])))
    return "\n".join(_table_line(line, widths, numeric) for line in texts)


def _table_line(texts: Sequence[str], widths: Sequence[int], numeric: Sequence[bool]) -> str:
    parts = []
    for i, (text, width) in enumerate(zip(texts, widths, strict=True)):
        text = truncate(text, width)
        if i == len(texts) - 1 and not numeric[i]:
            parts.append(text)
        else:
            parts.append(text.rjust(width) if numeric[i] else text.ljust(width))
    return "  ".join(parts).rstrip()


def compact_json(text: str) -> str:
    """JSON text without optional whitespace; any other text on one line."""
    try:
        value = json.loads(text)
    except ValueError:
        return one_line(text)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def format_time(text: str | None, *, precise: bool = False) -> str:
    """An RFC 3339 time as `2026-12-02 15:44:45 UTC` (its own zone); `precise` adds
    milliseconds and drops the year. Unparseable text is returned as it is."""
    moment = parse_time(text)
    if moment is None:
        return text or EMPTY
    zone = f" {moment.tzname()}" if moment.tzinfo is not None else ""
    if precise:
        return moment.strftime("%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}{zone}"
    return moment.strftime("%Y-%m-%d %H:%M:%S") + zone


def format_duration(start: str | None, end: str | None) -> str:
    """The time from `start` to `end`: `45ms`, `1.25s`, `3m 05s`, `2h 03m`; a dash when either
    is missing."""
    began, ended = parse_time(start), parse_time(end)
    if began is None or ended is None:
        return EMPTY
    return format_seconds((ended - began).total_seconds())


def format_seconds(seconds: float) -> str:
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    if seconds < 60:
        return f"{seconds:.2f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"
