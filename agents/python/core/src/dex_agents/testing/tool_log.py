"""A tool-run log shared across processes: how many times a tool really ran."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any


class ToolRunLog:
    """Appends one JSON line per tool run; a test reads it after the Worker died or finished."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def record(self, name: str, **details: Any) -> None:
        line = json.dumps({"tool": name, "pid": os.getpid(), **details}) + "\n"
        with open(self.path, "a") as log:
            fcntl.flock(log, fcntl.LOCK_EX)
            log.write(line)
            log.flush()
            os.fsync(log.fileno())

    def entries(self, name: str | None = None) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        rows = [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]
        return [row for row in rows if name is None or row["tool"] == name]

    def count(self, name: str | None = None) -> int:
        return len(self.entries(name))
