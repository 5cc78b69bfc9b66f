"""The CLI answers at once because of what it does not import: `dex-agents --help` no database
library, the read commands not DBOS. (How long it takes is bench/cli_startup.py's business.)
And the commands it prints start the way it was started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dex_agents
from dex_agents import cli_format, db
from dex_agents.cli import DATABASE_URL_ENV, DEFAULT_DATABASE_URL
from dex_agents.cli_format import COMMAND_ENV, hint_command

HEAVY = ("dbos", "sqlalchemy", "pydantic", "dex_agents.client", "dex_agents.worker",
         "dex_agents.steps")  # fmt: skip


def imported_by(code: str, *argv: str, cwd: Path | None = None) -> dict[str, bool]:
    """Which of HEAVY a fresh interpreter has imported after `code` (run with `argv`)."""
    probe = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}})))\n"
        f"sys.argv = {['dex-agents', *argv]!r}\n"
        f"{code}\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd, timeout=120
    )
    last = run.stdout.strip().splitlines()[-1]
    loaded: dict[str, bool] = json.loads(last)
    return loaded


def test_help_imports_no_database_library() -> None:
    loaded = imported_by("from dex_agents.cli import main\nmain()", "--help")
    assert not any(loaded.values()), loaded


def test_a_read_command_does_not_import_dbos(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'read.sqlite'}"
    db.Database(url).create_schema()
    loaded = imported_by("from dex_agents.cli import main\nmain()", "history", "nope",
                         "--database-url", url)  # fmt: skip
    assert loaded["dex_agents.client"] and not loaded["dbos"], loaded
    assert not loaded["dex_agents.worker"] and not loaded["dex_agents.steps"]


def test_the_package_loads_its_public_names_on_first_use() -> None:
    loaded = imported_by("import dex_agents")
    assert not any(loaded.values()), loaded
    assert set(dex_agents.__all__) <= set(dex_agents._HOMES)
    for name in dex_agents._HOMES:  # each is the object its module defines
        home = __import__(f"dex_agents.{dex_agents._HOMES[name]}", fromlist=[name])
        assert getattr(dex_agents, name) is getattr(home, name), name
    assert set(dex_agents._HOMES) <= set(dir(dex_agents))
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        dex_agents.Nothing  # noqa: B018


def test_the_cli_names_the_database_as_the_package_does() -> None:
    assert DATABASE_URL_ENV == db.DATABASE_URL_ENV
    assert DEFAULT_DATABASE_URL == db.DEFAULT_DATABASE_URL


def test_hints_start_the_way_the_command_was_started(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(COMMAND_ENV, raising=False)
    monkeypatch.delenv("UV", raising=False)
    monkeypatch.chdir(tmp_path)
    bin_dir = tmp_path / "project" / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (tmp_path / "project" / "pyproject.toml").write_text("")
    program = bin_dir / "dex-agents"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(program), "history"])

    monkeypatch.setenv("PATH", "/nonexistent")  # not on the PATH: its own path
    assert hint_command() == str(program)
    monkeypatch.setenv("PATH", str(bin_dir))  # the one on the PATH (an activated venv)
    assert hint_command() == "dex-agents"
    monkeypatch.setenv("UV", "uv")  # under `uv run`, which puts its bin on the PATH
    assert hint_command() == "uv run --project project dex-agents"
    monkeypatch.setenv(COMMAND_ENV, "my-wrapper dex-agents")
    assert hint_command() == "my-wrapper dex-agents"
    monkeypatch.delenv(COMMAND_ENV)

    monkeypatch.setattr(sys, "argv", [str(Path(cli_format.__file__).parent / "__main__.py")])
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))
    expected = "python -m dex_agents" if Path(sys.executable).name == "python" else None
    assert hint_command() in (expected, f"{sys.executable} -m dex_agents")
    monkeypatch.setattr(sys, "argv", ["pytest"])  # not started as the command
    assert hint_command() == "dex-agents"
    assert cli_format.command_line("history", "s 1", database_url="sqlite:///a b") == (
        "dex-agents history 's 1' --database-url 'sqlite:///a b'"
    )
