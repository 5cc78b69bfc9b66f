"""Formatting for the CLI: tables (rich), truncation, times and durations, and the commands
it prints for the user to run next.

Tables are rich renderables printed by `echo`. On a terminal they take its width and colors;
anywhere else (a pipe, a file, a test) they are plain text with no ANSI codes and no trailing
spaces, one row per line, `PLAIN_WIDTH` columns wide (wider only to keep IDs whole).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO

import click
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

ELLIPSIS = "…"
EMPTY = "-"
PLAIN_WIDTH = 120
"""The width of a table printed to anything but a terminal."""
SHRUNK_WIDTH = 12
"""How narrow a column that gives way may get, header aside."""

STATUS_STYLES = {
    "succeeded": "green",
    "completed": "green",
    "approved": "green",
    "running": "cyan",
    "running_model": "cyan",
    "running_tools": "cyan",
    "compacting_context": "cyan",
    "scheduled": "blue",
    "waiting": "yellow",
    "parked": "yellow",
    "waiting_for_user_message": "yellow",
    "awaiting_approval": "yellow",
    "awaiting_answer": "yellow",
    "waiting_for_timer": "yellow",
    "failed": "red",
    "outcome_unknown": "red",
    "rejected": "magenta",
    "cancelled": "magenta",
    "stopped": "dim",
    "silent": "red",
}
ROLE_STYLES = {"user": "cyan", "assistant": "green", "tool": "magenta"}

_WHITESPACE = re.compile(r"\s+")

PROGRAM = "dex-agents"
COMMAND_ENV = "DEX_AGENTS_COMMAND"
"""How to start the command line, for the commands it prints: for a wrapper that starts it in a
way `hint_command` cannot see."""


def hint_command() -> str:
    """How the user started this command line, as they can type it again where they stand:
    `dex-agents` when that is the one on the PATH; run by `uv run --project DIR`, the same
    command with DIR relative to the working directory; `python -m dex_agents` by the same
    interpreter; else the program's own path. COMMAND_ENV overrides it."""
    configured = os.environ.get(COMMAND_ENV, "").strip()
    if configured:
        return configured
    program = Path(sys.argv[0]).absolute() if sys.argv and sys.argv[0] else None
    if program is not None and program.name == "__main__.py":  # python -m dex_agents
        python = "python" if _on_path("python", Path(sys.executable)) else sys.executable
        return f"{shlex.quote(python)} -m dex_agents"
    if program is None or program.name != PROGRAM:
        return PROGRAM  # not started as the command (embedded, a test's runner)
    project = _uv_project(program)
    if project is not None:
        return f"uv run --project {shlex.quote(os.path.relpath(project))} {PROGRAM}"
    if _on_path(PROGRAM, program):
        return PROGRAM
    return shlex.quote(str(program))


def _uv_project(program: Path) -> Path | None:
    """The project whose environment `uv run` ran `program` in: the one of its `.venv`, else
    (an environment set by UV_PROJECT_ENVIRONMENT) the project this package is installed from
    in editable mode; None outside `uv run`, which sets UV (and puts the environment's bin on
    the PATH, where `dex-agents` would be found only under `uv run`)."""
    if "UV" not in os.environ:
        return None
    candidates = [program.parents[2]] if program.parent.parent.name == ".venv" else []
    candidates.append(Path(__file__).resolve().parents[2])  # src/dex_agents/cli_format.py
    return next((c for c in candidates if (c / "pyproject.toml").is_file()), None)


def _on_path(name: str, program: Path) -> bool:
    found = shutil.which(name)
    return found is not None and os.path.normpath(os.path.abspath(found)) == os.path.normpath(
        program
    )


def command_line(*args: str, database_url: str | None = None) -> str:
    """A `dex-agents` command the user can run as printed: `hint_command()`, the arguments,
    and the database this one used when it was not the default."""
    words = list(args)
    if database_url:
        words += ["--database-url", database_url]
    return " ".join([hint_command(), *(shlex.quote(word) for word in words)])


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


def console(file: IO[str] | None = None) -> Console:
    """A console on `file` (standard output): a terminal's width and colors on a terminal,
    else `PLAIN_WIDTH` columns and no ANSI codes, whatever FORCE_COLOR or COLUMNS say."""
    stream = file if file is not None else sys.stdout
    is_terminal = stream.isatty()
    return Console(
        file=stream,
        force_terminal=is_terminal,
        force_jupyter=False,
        force_interactive=False,
        color_system="auto" if is_terminal else None,
        width=None if is_terminal else PLAIN_WIDTH,
        markup=False,
        emoji=False,
        highlight=False,
    )


def echo(*parts: RenderableType | str, file: IO[str] | None = None) -> None:
    """Prints each part on its own lines to `file` (standard output), through click (so stored
    text that cannot be encoded is escaped, as `main` set up): a str as it is, never wrapped
    or cut, anything else rendered by rich."""
    chunks: list[str] = []
    for part in parts:
        if isinstance(part, str):
            chunks.append(part + "\n")
            continue
        out = console(file)
        if isinstance(part, Listing):
            part = part.fitted(out)
        with out.capture() as captured:
            out.print(part)
        text = captured.get()
        if not out.is_terminal:
            text = "\n".join(line.rstrip() for line in text.split("\n"))
        chunks.append(text)
    click.echo("".join(chunks), file=file, nl=False)


def styled(value: object, styles: dict[str, str] = STATUS_STYLES) -> Text:
    """A cell whose style follows its value (a status, a role); plain where there is none."""
    text = cell(value)
    return Text(text, style=styles.get(text, ""))


WAITING_TEXTS = {"approval": "waiting for approval", "answer": "waiting for an answer"}
"""What a session that waits on a person shows instead of its `running_tools` status."""


def session_status(status: str | None, waiting_for: str | None, detailed: bool = False) -> Text:
    """A session's status cell: what it waits on a person for when it does (the contract's
    status stays `running_tools` meanwhile; `detailed` adds it), else its status."""
    if waiting_for is None:
        return styled(status or "not started")
    text = WAITING_TEXTS.get(waiting_for, f"waiting for {waiting_for}")
    if detailed and status:
        text += f" (status {status})"
    return Text(text, style="bold yellow")


class Listing(Table):
    """A table that knows how wide a console must be to show its uncut columns whole."""

    min_console_width = 0

    def fitted(self, out: Console) -> Listing:
        """Off a terminal, the console widens so each row stays on one line. A terminal too
        narrow keeps its width, and the uncut columns (IDs, statuses, times) then wrap in their
        cells: the table stays whole, and no line runs past the terminal's edge."""
        if out.width >= self.min_console_width:
            return self
        if not out.is_terminal:
            out.width = self.min_console_width
            return self
        for column in self.columns:
            if column.no_wrap:
                column.no_wrap, column.overflow = False, "fold"
                for text in column.cells:
                    if isinstance(text, Text):
                        text.no_wrap, text.overflow = False, "fold"
        return self


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    max_widths: Sequence[int | None] = (),
    *,
    wrap: Sequence[int] = (),
    show_header: bool = True,
) -> Table:
    """Columns sized to their widest cell, capped by `max_widths` (None: no cap); numbers align
    right. A cell is one line, cut with an ellipsis at its cap or where the console is too
    narrow, except in the `wrap` columns, whose text wraps onto more lines as it is (newlines
    kept). Only the capped and wrapped columns give way when the table is too wide; the
    console widens to show the others whole (IDs, statuses, times). A `Text` cell keeps its
    style."""
    body = [list(row) for row in rows]
    listing = Listing(
        box=None,
        show_header=show_header,
        header_style="bold",
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
    )
    for i, header in enumerate(headers):
        cap = max_widths[i] if i < len(max_widths) else None
        numeric = bool(body) and all(isinstance(row[i], int) for row in body)
        listing.add_column(
            header,
            justify="right" if numeric else "left",
            # A column rich may narrow when the table does not fit: no_wrap=False.
            no_wrap=cap is None and i not in wrap,
            overflow="fold" if i in wrap else "ellipsis",
            max_width=max(cap, len(header)) if cap is not None else None,
        )
    cells = [[_cell_text(value, i in wrap) for i, value in enumerate(row)] for row in body]
    for row_cells in cells:
        listing.add_row(*row_cells)
    needed = 2 * (len(headers) - 1)
    for i, header in enumerate(headers):
        widest = max([len(header), *(t.cell_len for row in cells for t in row[i : i + 1])])
        gives_way = listing.columns[i].max_width is not None or i in wrap
        needed += min(widest, max(len(header), SHRUNK_WIDTH)) if gives_way else widest
    listing.min_console_width = needed
    return listing


def fields(pairs: Iterable[tuple[str, object]], key_width: int = 12) -> Table:
    """`name  value` lines, the values aligned after `key_width` columns and wrapped there."""
    grid = Table.grid(padding=(0, 1, 0, 0))
    grid.add_column(min_width=key_width, no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    for name, value in pairs:
        grid.add_row(name, value if isinstance(value, Text) else Text(cell(value)))
    return grid


def _cell_text(value: object, wrap: bool) -> Text:
    if isinstance(value, Text):
        text = value.copy()
    else:
        text = Text(str(value) if wrap and value is not None else cell(value))
    if not wrap:
        text.no_wrap = True
        text.overflow = "ellipsis"
    return text


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
