"""`dex-agents chat` on a real terminal (a pty): Ctrl-C cancels a running turn and an approval,
the chat answers the next message, and Ctrl-C at the prompt leaves with the Worker stopped."""

from __future__ import annotations

import fcntl
import os
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

from dex_agents import SyncAgentClient
from dex_agents.testing import ScriptedModelServer, reply_text, reply_tools

pytest.importorskip("litellm")
pytest.importorskip("prompt_toolkit")

CTRL_C = "\x03"
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\r")


class Terminal:
    """A child process on a pty of its own, as its controlling terminal."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.master = master
        self.process = subprocess.Popen(
            command,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=cwd,
            start_new_session=True,
            # Makes the pty the controlling terminal, so Ctrl-C there sends SIGINT.
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self.raw = b""
        self.mark = 0
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 4096)
            except OSError:  # the child closed the pty
                return
            if not data:
                return
            with self.lock:
                self.raw += data

    @property
    def screen(self) -> str:
        """What was written so far, without the escape sequences."""
        with self.lock:
            return ESCAPES.sub("", self.raw.decode(errors="replace"))

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def wait_for(self, text: str, timeout: float = 120) -> None:
        """Waits until `text` shows after the last text waited for."""
        deadline = time.monotonic() + timeout
        while (found := self.screen.find(text, self.mark)) < 0:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise AssertionError(f"{text!r} did not show; the screen:\n{self.screen[-4000:]}")
            time.sleep(0.05)
        self.mark = found + len(text)

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        os.close(self.master)


def test_ctrl_c_cancels_turns_and_leaves_cleanly_on_a_terminal(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chat.sqlite'}"
    with ScriptedModelServer() as model:
        model.enqueue(
            reply_text("This answer never comes.", hang=True),
            reply_tools(("call_message", "send_message", {"to": "Ana", "text": "Hi"})),
            reply_text("Hello again, I am here."),
        )
        env = {
            **os.environ,
            "TERM": "xterm",
            "PROMPT_TOOLKIT_NO_CPR": "1",
            "DEX_AGENTS_CHAT_API_BASE": model.base_url,
        }
        command = [sys.executable, "-m", "dex_agents", "chat", "--database-url", url]
        terminal = Terminal([*command, "--model", "openai/scripted"], env, tmp_path)
        try:
            terminal.wait_for("you>")
            terminal.send("Tell me a long story\r")
            model.wait_for_requests(1, timeout=120)
            terminal.wait_for("thinking…")
            terminal.send(CTRL_C)  # during the running model call
            terminal.wait_for("(the turn was cancelled)")

            terminal.wait_for("you>")
            terminal.send("Message Ana\r")
            terminal.wait_for("? approve send_message")
            terminal.send(CTRL_C)  # at the approval prompt
            terminal.wait_for("(the turn was cancelled)")

            terminal.wait_for("you>")
            terminal.send("Are you there?\r")
            terminal.wait_for("assistant> Hello again, I am here.")

            terminal.wait_for("you>")
            terminal.send(CTRL_C)  # at the prompt: leave
            assert terminal.process.wait(timeout=60) == 0
            terminal.reader.join(timeout=5)
        finally:
            terminal.close()
    screen = terminal.screen
    assert "bye" in screen
    assert "Worker stopped." in screen
    assert "Traceback" not in screen, screen
    assert "send_message: succeeded" not in screen

    client = SyncAgentClient(url)
    try:
        workers = client.list_workers()
        assert workers and all(w.state == "stopped" for w in workers)
        (session,) = client.list_sessions()
        snapshot = client.get_agent_snapshot(session.session_id)
        assert snapshot.state is not None and snapshot.state.turn_count == 3
        assert snapshot.state.active_turn_id is None
        assert not snapshot.pending_interrupts
    finally:
        client.close()
