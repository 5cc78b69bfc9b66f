"""How soon the `dex-agents` command answers: `--help`, `--version` and the read commands, each
run as a process of its own, as a user runs it (the environment's `dex-agents` script).

Targets: `--help` and `--version` under 0.3 s of CPU; a read command under 1 s. The read
commands read a session of the demo (`dex-agents demo`, run once into a temporary SQLite file
unless --database-url names a database with sessions).

    uv run python bench/cli_startup.py [--runs 10] [--database-url URL]

Prints, per command, the median and the worst of the runs: wall time and CPU time (user +
system, of the process and its children).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROGRAM = str(Path(sys.executable).parent / "dex-agents")
TARGETS = {"--help": 0.3, "--version": 0.3}  # CPU seconds
READ_TARGET = 1.0  # wall seconds


def timed(args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of the command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([PROGRAM, *args], check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def a_session(database_url: str | None) -> tuple[str, str]:
    """A database with a session, and the session's ID: the demo's, unless one is given."""
    if database_url is None:
        path = Path(tempfile.mkdtemp()) / "bench.sqlite"
        database_url = f"sqlite:///{path}"
        print(f"running the demo into {path} ...", flush=True)
        subprocess.run(
            [PROGRAM, "demo", "--database-url", database_url],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    listed = subprocess.run(
        [PROGRAM, "sessions", "--json", "--database-url", database_url],
        check=True,
        capture_output=True,
        text=True,
    )
    return database_url, json.loads(listed.stdout)[0]["session_id"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--database-url")
    options = parser.parse_args()
    database_url, session = a_session(options.database_url)
    on_db = ["--database-url", database_url]
    commands: list[list[str]] = [["--help"], ["--version"]]
    commands += [
        ["sessions", *on_db],
        ["history", session, *on_db],
        ["snapshot", session, *on_db],
        ["messages", session, *on_db],
        ["events", session, *on_db],
    ]
    print(f"{'command':<12} {'wall median (max)':>20} {'CPU median (max)':>20}  target")
    for args in commands:
        timed(args)  # a first run warms the file cache and the bytecode
        runs = [timed(args) for _ in range(options.runs)]
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        name = args[0]
        if name in TARGETS:
            met = "met" if max(cpus) < TARGETS[name] else "NOT met"
            target = f"CPU < {TARGETS[name]:g} s: {met}"
        else:
            met = "met" if max(walls) < READ_TARGET else "NOT met"
            target = f"wall < {READ_TARGET:g} s: {met}"
        print(
            f"{name:<12} {statistics.median(walls):>11.3f} s ({max(walls):.3f})"
            f" {statistics.median(cpus):>11.3f} s ({max(cpus):.3f})  {target}"
        )


if __name__ == "__main__":
    main()
