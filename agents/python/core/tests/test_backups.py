"""Backups, as docs/deployment.md tells an operator to take and restore them: a SQLite file
copied online by `dex-agents backup`, a Postgres database by `pg_dump -Fc` and `pg_restore`
into a fresh database, each taken while a Worker runs.

A Worker on the restored copy carries its sessions on from where the backup found them: the
approval that waited waits again and its queued message follows; an approved write that ran
after the backup runs again, with the same idempotency key; a write that was running at the
backup is recorded `outcome_unknown`, never run again.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from dex_agents import AgentClient, texts
from dex_agents.cli import cli
from dex_agents.testing import ToolRunLog, WorkerProcess
from dex_agents.testing.fixtures import fresh_postgres_database
from dex_agents.testing.scripted_runner import MODEL_URL_ENV

from .helpers import pending_interrupt, turns_done, wait_until
from .outages import postgres_bin
from .routed_model import RoutedModelServer


@pytest.fixture
def model() -> Iterator[RoutedModelServer]:
    # A write long enough for the backup to be taken, and the original lost, while it runs.
    with RoutedModelServer(write_seconds=20.0) as server:
        yield server


def back_up_and_restore(database_url: str, tmp_path: Path, name: str) -> Iterator[str]:
    """Backs the database up as docs/deployment.md says (while its Worker runs), restores the
    backup into a fresh database and yields that database's URL."""
    backup = tmp_path / "backup.dump"
    if database_url.startswith("sqlite"):
        command = [sys.executable, "-m", "dex_agents", "backup", "--database-url", database_url]
        done = subprocess.run(
            [*command, "--to", str(backup)], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"backed up {database_url} to {backup} (")
        fresh = tmp_path / "restored.sqlite"
        shutil.copyfile(backup, fresh)  # a restore: the backup copied where the URL points
        yield f"sqlite:///{fresh}"
        return
    bin_dir = postgres_bin()
    if bin_dir is None:
        pytest.skip("pg_dump and pg_restore are not installed (Debian: the postgresql package)")
    dump = [f"{bin_dir}/pg_dump", "-Fc", "--file", str(backup), database_url]
    subprocess.run(dump, check=True, capture_output=True, timeout=60)
    for fresh_url in fresh_postgres_database(name):
        restore = [f"{bin_dir}/pg_restore", "--no-owner", "--dbname", fresh_url, str(backup)]
        subprocess.run(restore, check=True, capture_output=True, timeout=60)
        yield fresh_url


async def test_a_backup_taken_while_a_worker_runs_restores_and_its_sessions_go_on(
    make_worker, model, client, tool_log, database_url, worker_target, worker_cwd, tmp_path
):
    original = make_worker(DEX_AGENTS_WORKER_ID="original").start()
    waiting = await client.start_session("Assistant", "email 1")
    await client.wait_for(waiting, pending_interrupt("email-1"))
    assert await client.send_user_message(waiting, "queued 1")
    writing = await client.start_session("Assistant", "write 1")
    wait_until(lambda: tool_log.count("slow_write") == 1, what="the write to start")

    restored = back_up_and_restore(database_url, tmp_path, "restored")
    restored_url = next(restored)
    # The original goes on after the backup (the email is approved and sent), and is lost.
    assert await client.resolve_interrupt(waiting, "email-1", approved=True)
    await client.wait_for(waiting, turns_done(2))
    original.kill()
    assert [e["phase"] for e in tool_log.entries("slow_write")] == ["started"]

    worker = WorkerProcess(
        worker_target,
        database_url=restored_url,
        cwd=worker_cwd,
        env={MODEL_URL_ENV: model.base_url, "TOOL_LOG": str(tool_log.path)},
        log_path=tmp_path / "restored-worker.log",
    )
    try:
        async with AgentClient(restored_url) as copy:
            worker.start()
            await _sessions_go_on(copy, waiting, writing, tool_log)
        worker.stop()
        assert worker.process is not None and worker.process.returncode == 0
    finally:
        worker.kill()
        restored.close()


async def _sessions_go_on(copy: AgentClient, waiting: str, writing: str, tool_log: ToolRunLog):
    # The approval waits again, its message still queued behind it.
    snapshot = await copy.get_agent_snapshot(waiting)
    assert [i.interrupt_id for i in snapshot.pending_interrupts] == ["email-1"]
    assert [m.message.text for m in snapshot.queued_messages] == ["queued 1"]
    # Approved again, the email is sent again: the external system sees the same key twice.
    assert await copy.resolve_interrupt(waiting, "email-1", approved=True)
    snapshot = await copy.wait_for(waiting, turns_done(2), timeout=60)
    answers = [m.text for m in snapshot.messages if m.role == "assistant" and m.text]
    assert answers == ["done: sent to ana@example.com", "echo: queued 1"]
    sent = tool_log.entries("send_email")
    assert len(sent) == 2 and sent[0]["key"] == sent[1]["key"]
    # The write had begun at the backup: its outcome is unknown, and it is not run again.
    snapshot = await copy.wait_for(writing, turns_done(1), timeout=60)
    assert snapshot.messages[-1].text == f"done: {texts.OUTCOME_UNKNOWN_TEXT}"
    assert [e["phase"] for e in tool_log.entries("slow_write")] == ["started"]
    # And the sessions take new turns.
    for session in (waiting, writing):
        result = await copy.run_turn(session, "after", timeout=60)
        assert (result.status, result.text) == ("completed", "echo: after")


def test_backup_refuses_an_existing_file_and_points_postgres_to_pg_dump(tmp_path):
    existing = tmp_path / "existing.sqlite"
    existing.write_bytes(b"keep me")
    source = f"sqlite:///{tmp_path / 'dex.sqlite'}"
    (tmp_path / "dex.sqlite").write_bytes(b"")

    refused = CliRunner().invoke(cli, ["backup", "--database-url", source, "--to", str(existing)])
    postgres = CliRunner().invoke(
        cli, ["backup", "--database-url", "postgresql://h/dex", "--to", str(tmp_path / "x")]
    )

    assert refused.exit_code == 1
    assert refused.output == f"error: {existing} already exists: give a new file to back up to\n"
    assert existing.read_bytes() == b"keep me"
    assert postgres.exit_code == 1 and "pg_dump -Fc" in postgres.output
    assert not (tmp_path / "x").exists()
