"""The CLI's tables off a terminal (a pipe, a file) and on one (a pseudo-terminal)."""

from __future__ import annotations

import io
import os
import pty
import re

import pytest

from dex_agents.cli_format import ELLIPSIS, PLAIN_WIDTH, echo, styled, table

ANSI = re.compile(r"\x1b\[[0-9;]*m")
LONG_ID = "session-" + "0123456789abcdef" * 8  # 136 characters: wider than PLAIN_WIDTH
ERROR = "the model answered 500: " + "overloaded, " * 20


def listing() -> list[list[object]]:
    return [
        [LONG_ID, styled("failed"), 3, ERROR],
        ["s-2", styled("succeeded"), 1, None],
    ]


def test_off_a_terminal_rows_are_plain_lines_and_ids_stay_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")  # no colors in a pipe all the same
    monkeypatch.setenv("COLUMNS", "40")
    out = io.StringIO()
    echo(
        "a heading",
        table(["SESSION ID", "STATUS", "ATTEMPTS", "ERROR"], listing(), [None, None, None, 60]),
        file=out,
    )
    lines = out.getvalue().splitlines()

    assert not ANSI.search(out.getvalue())
    assert lines[0] == "a heading"
    assert lines[1].split() == ["SESSION", "ID", "STATUS", "ATTEMPTS", "ERROR"]
    assert len(lines) == 4  # one line a row
    first, second = lines[2].split(), lines[3].split()
    assert first[:3] == [LONG_ID, "failed", "3"]
    assert lines[2].endswith(ELLIPSIS) and len(lines[2]) > PLAIN_WIDTH  # the error is cut
    assert second == ["s-2", "succeeded", "1", "-"]
    assert all(line == line.rstrip() for line in lines)
    # The numbers align right, under their header.
    assert lines[1].index("ATTEMPTS") + len("ATTEMPTS") == lines[2].index(" 3 ") + 2


def test_a_narrow_table_is_as_wide_as_its_cells() -> None:
    out = io.StringIO()
    echo(table(["ID", "STATUS"], [["s-1", "waiting"]]), file=out)
    assert out.getvalue() == "ID   STATUS\ns-1  waiting\n"


def test_on_a_terminal_tables_are_colored_and_fit_its_width(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    leader, follower = pty.openpty()
    with open(follower, "w", encoding="utf-8", closefd=True) as terminal:
        echo(
            table(["SESSION ID", "STATUS", "ATTEMPTS", "ERROR"], listing(), [None, None, None, 60]),
            file=terminal,
        )
        terminal.flush()
    text = _read_all(leader).replace("\r\n", "\n")

    assert "\x1b[1m" in text  # a bold header
    assert "\x1b[31m" in text  # "failed" in red
    plain = ANSI.sub("", text)
    lines = plain.splitlines()
    assert lines and all(len(line) <= 60 for line in lines)
    # The ID is not cut: it wraps within its column.
    assert "".join(line.split()[0] for line in lines[1:] if line.strip()).startswith(LONG_ID)


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the follower side is closed: all was read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode()
