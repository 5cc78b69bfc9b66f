"""`dex-agents chat`: a terminal chat with a durable Stepwise agent on the SQLite default.

With `--model` (any LiteLLM model string, with its provider's key in the environment) the
agent talks to that model. Without it, a clearly labelled scripted demo model walks through a
read tool, an approval, an `ask_user` question and a `durable_wait`. Approvals and questions
are answered inline. The Worker runs as a child process: Ctrl-C during a turn (or at an
approval or question prompt) cancels the turn and returns to the prompt, Ctrl-C or Ctrl-D at
the prompt leaves and stops the Worker, and `dex-agents chat --session ID` shows the last
messages and resumes the session where it stood, even after the Worker was killed with SIGKILL.

On a terminal the prompts are prompt_toolkit's and a status line shows while the model
thinks; from a pipe the chat reads plain lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from datetime import timedelta
from typing import Any, Protocol

from .cli_format import compact_json, hint_command, one_line, truncate
from .client import AgentClient
from .flow import AgentSessionFlow, AgentSessionOptions
from .testing import ScriptedModelServer, WorkerProcess, reply_text, reply_tools
from .tool_context import current_tool_execution
from .types import AgentEvent, AgentInterrupt, AgentMessage

FLOW_TYPE = "ChatAssistant"
MODEL_ENV = "DEX_AGENTS_CHAT_MODEL"
API_BASE_ENV = "DEX_AGENTS_CHAT_API_BASE"
SCRIPTED_MODEL = "openai/dex-scripted-demo"
HISTORY_MESSAGES = 20
LINE_WIDTH = 100
NOTES: dict[str, str] = {}


def get_weather(city: str) -> dict[str, Any]:
    """Today's weather in a city.

    Args:
        city: The city's name.
    """
    return {"city": city, "celsius": 21, "sky": "sunny"}


def save_note(title: str, text: str) -> str:
    """Saves a note under a title (an idempotent write: saving it again changes nothing).

    Args:
        title: The note's title.
        text: The note's text.
    """
    NOTES[title] = text
    return f"saved note {title!r}"


def send_message(to: str, text: str) -> str:
    """Sends a message to someone (a non-idempotent write: it needs approval).

    Args:
        to: Who receives it.
        text: The message.
    """
    key = current_tool_execution().idempotency_key
    return f"message to {to} sent (idempotency key {key})"


def build_flows() -> list[AgentSessionFlow]:
    from .stepwise import AgentDefinition, ModelClient, StepwiseRunner, tool

    model = os.environ.get(MODEL_ENV, SCRIPTED_MODEL)
    api_base = os.environ.get(API_BASE_ENV)
    client = ModelClient(model, api_base=api_base, api_key="demo" if api_base else None)
    definition = AgentDefinition(
        name="Assistant",
        instructions=(
            "You are a concise assistant in a terminal chat. Use the tools when they help; "
            "ask the user with ask_user when you need a choice."
        ),
        tools=[
            tool(effect="read")(get_weather),
            tool(effect="idempotent_write")(save_note),
            tool(effect="non_idempotent_write")(send_message),
        ],
        model=client,
    )
    options = AgentSessionOptions(
        built_in_tools=("ask_user", "durable_wait", "write_todos"),
        max_durable_wait=timedelta(minutes=10),
    )
    return [AgentSessionFlow(StepwiseRunner(definition), flow_type=FLOW_TYPE, options=options)]


def demo_script(server: ScriptedModelServer) -> None:
    """What the scripted demo model answers, in order, whatever the user types."""
    server.enqueue(
        reply_tools(("call_weather", "get_weather", {"city": "Lisbon"})),
        reply_text("It is 21 °C and sunny in Lisbon. Shall I message someone about it?"),
        reply_tools(
            ("call_message", "send_message", {"to": "Ana", "text": "Lisbon is sunny, 21 °C."})
        ),
        reply_text("Done. Next, I can plan a walk for you."),
        reply_tools(
            (
                "call_ask",
                "ask_user",
                {"question": "Morning or evening walk?", "choices": ["morning", "evening"]},
            )
        ),
        reply_tools(("call_wait", "durable_wait", {"seconds": 3, "reason": "let the sun rise"})),
        reply_text("The wait is over: enjoy your walk along the river."),
    )
    over = f"(The scripted demo is over. Run {hint_command()} chat --model MODEL)"
    for _ in range(50):
        server.enqueue(reply_text(over))


class Interrupted(Exception):
    """Ctrl-C (or the end of input) at an approval or question prompt."""


class Prompter(Protocol):
    async def ask(self, message: str) -> str:
        """One line of input; EOFError at the end of input, KeyboardInterrupt on Ctrl-C."""
        ...


class TerminalPrompter:
    """prompt_toolkit's prompts: Ctrl-C and Ctrl-D are keys there, never a stuck read."""

    def __init__(self) -> None:
        from prompt_toolkit import PromptSession

        self.session: PromptSession[str] = PromptSession()

    async def ask(self, message: str) -> str:
        # SIGINT stays with the chat (handle_sigint=False): at the prompt Ctrl-C is a key.
        return await self.session.prompt_async(message, handle_sigint=False)


class LinePrompter:
    """Plain lines from a stdin that is not a terminal (a pipe, a file).

    A daemon thread reads them, so a read in progress never holds the chat's exit.
    """

    def __init__(self) -> None:
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()
        self.reader: threading.Thread | None = None

    def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            for line in sys.stdin:
                loop.call_soon_threadsafe(self.lines.put_nowait, line.rstrip("\r\n"))
        finally:
            with contextlib.suppress(RuntimeError):  # the loop closed first
                loop.call_soon_threadsafe(self.lines.put_nowait, None)

    async def ask(self, message: str) -> str:
        if self.reader is None:
            loop = asyncio.get_running_loop()
            self.reader = threading.Thread(target=self._read, args=(loop,), daemon=True)
            self.reader.start()
        print(message, end="", flush=True)
        line = await self.lines.get()
        if line is None:
            self.lines.put_nowait(None)  # every later read ends too
            raise EOFError
        return line


def on_terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


class Status:
    """A "thinking…" line rewritten in place while a model call runs (on a terminal only)."""

    FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.task: asyncio.Task[None] | None = None

    def show(self, text: str = "thinking…") -> None:
        if self.enabled and self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._spin(text))

    def clear(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.task = None
            sys.stdout.write("\r\x1b[K")
            sys.stdout.flush()

    async def _spin(self, text: str) -> None:
        started = time.monotonic()
        for frame in itertools.cycle(self.FRAMES):
            elapsed = time.monotonic() - started
            sys.stdout.write(f"\r\x1b[K{frame} {text} {elapsed:.0f}s  (Ctrl-C cancels the turn)")
            sys.stdout.flush()
            await asyncio.sleep(0.1)


def plain_hint(*args: str) -> str:
    """A `dex-agents` command line, for a chat not started by the command line."""
    return " ".join(["dex-agents", *args])


class Chat:
    def __init__(
        self,
        client: AgentClient,
        session_id: str,
        prompter: Prompter | None = None,
        status: Status | None = None,
        hint: Callable[..., str] | None = None,
    ) -> None:
        self.client = client
        self.session_id = session_id
        self.hint = hint or plain_hint
        self.prompter = prompter or LinePrompter()
        self.status = status or Status(enabled=False)
        self.offset = 0
        self.streaming = False
        self.turn: asyncio.Task[None] | None = None
        self.draining = False

    async def catch_up(self) -> None:
        """Skips the events already shown, so a resumed chat prints only what is new."""
        events = await self.client.read_events(self.session_id, after=0, limit=1_000_000)
        self.offset = events[-1].offset if events else 0

    async def show_history(self, count: int = HISTORY_MESSAGES) -> None:
        """The last messages of a resumed session, one line each."""
        page = await self.client.list_agent_messages(self.session_id, limit=count)
        if not page.messages:
            return
        print(f"--- the last {len(page.messages)} messages of this session ---")
        if page.next_before_sequence is not None:
            before = str(page.next_before_sequence)
            print(f"(earlier: {self.hint('messages', self.session_id, '--before', before)})")
        for message in page.messages:
            print(history_line(message))
        print("---")

    async def prompt(self) -> str:
        return await self.prompter.ask("\nyou> ")

    async def ask(self, message: str) -> str:
        """A prompt inside a turn: Ctrl-C or the end of input there interrupts the turn."""
        try:
            return await self.prompter.ask(message)
        except (KeyboardInterrupt, EOFError) as error:
            raise Interrupted from error

    def interrupt(self) -> bool:
        """Ctrl-C outside a prompt: cancels the running turn; False when none runs (or when
        the chat already waits for a cancelled turn to end: then Ctrl-C leaves)."""
        if self.draining or self.turn is None or self.turn.done():
            return False
        self.turn.cancel()
        return True

    async def run_turn(self, text: str) -> None:
        await self.interruptible(self.send_and_follow(text))

    async def resume_turn(self) -> None:
        self.status.show()
        await self.interruptible(self.follow_turn())

    async def send_and_follow(self, text: str) -> None:
        # The message is sent whole even if Ctrl-C comes meanwhile, so its turn can be cancelled.
        send = asyncio.ensure_future(self.client.send_user_message(self.session_id, text))
        try:
            sent = await asyncio.shield(send)
        except asyncio.CancelledError:
            await send
            raise
        if not sent:
            print("(a blank message is not sent)")
            return
        self.status.show()
        await self.follow_turn()

    async def interruptible(self, work: Coroutine[Any, Any, None]) -> None:
        """Runs `work` as the current turn: Ctrl-C (or Interrupted) cancels the turn."""
        self.turn = asyncio.ensure_future(work)
        try:
            await self.turn
        except (asyncio.CancelledError, Interrupted):
            if not self.turn.done():  # this task itself was cancelled: pass it on
                self.turn.cancel()
                raise
            await self.cancel_turn()
        finally:
            self.turn = None
            self.status.clear()

    async def cancel_turn(self) -> None:
        self.status.clear()
        self.end_stream()
        if not await self.client.cancel_turn(self.session_id):
            print("\n(no turn is running)")
            return
        print("\n(cancelling the turn … Ctrl-C again leaves the chat)")
        self.draining = True
        try:
            await self.follow_turn(answering=False)
        finally:
            self.draining = False

    async def follow_turn(self, answering: bool = True) -> None:
        """Prints the turn as it streams, answering approvals and questions inline."""
        while True:
            events = await self.client.read_events(self.session_id, after=self.offset)
            for event in events:
                self.offset = event.offset
                if await self.show(event, answering):
                    return
            if not events:
                await asyncio.sleep(0.05)

    async def show(self, event: AgentEvent, answering: bool = True) -> bool:
        """Prints one event; True when the turn ended."""
        payload = json.loads(event.payload)
        if event.type == "text_delta":
            self.status.clear()
            if not self.streaming:
                print("\nassistant> ", end="")
                self.streaming = True
            print(payload["text"], end="", flush=True)
            return False
        if event.type not in TOOL_EVENTS and event.type not in TURN_END_EVENTS:
            return False  # an event the chat does not show: the status line stays
        self.status.clear()
        self.end_stream()
        if event.type == "tool_call_started":
            print(f"  · running {payload['tool_name']}")
        elif event.type == "tool_call_finished":
            print(f"  · {payload['tool_name']}: {payload['status']}")
            if answering:
                self.status.show()  # the model answers next
        elif event.type == "timer_started":
            print(f"  · waiting until {payload['wait_until']} ({payload['reason']})")
        elif event.type == "interrupt_raised":
            if answering:
                await self.resolve(payload)
        elif event.type == "turn_cancelled":
            print("(the turn was cancelled)")
            return True
        elif event.type == "turn_completed":
            return True
        elif event.type == "turn_failed":
            print(f"  ! the turn failed: {payload['error']}")
            return True
        return False

    def end_stream(self) -> None:
        if self.streaming:
            print()
            self.streaming = False

    async def resolve(self, payload: dict[str, Any]) -> None:
        snapshot = await self.client.get_agent_snapshot(self.session_id)
        pending = {i.interrupt_id: i for i in snapshot.pending_interrupts}
        interrupt = pending.get(payload["interrupt_id"])
        if interrupt is None:
            return  # already resolved (an earlier run of this chat answered it)
        if interrupt.kind == "tool_approval":
            await self.approve(interrupt)
        else:
            await self.answer(interrupt)

    async def approve(self, interrupt: AgentInterrupt) -> None:
        question = f"  ? approve {interrupt.tool_name} {compact_json(interrupt.arguments)} [y/N] "
        reply = (await self.ask(question)).strip().lower()
        approved = reply in ("y", "yes")
        await self.client.resolve_interrupt(
            self.session_id, interrupt.interrupt_id, approved, None if approved else "Not now."
        )

    async def answer(self, interrupt: AgentInterrupt) -> None:
        choices = f" ({' / '.join(interrupt.choices)})" if interrupt.choices else ""
        reply = await self.ask(f"  ? {interrupt.question}{choices} ")
        if not reply.strip():
            await self.client.resolve_interrupt(self.session_id, interrupt.interrupt_id, False)
        elif not await self.client.answer_question(self.session_id, interrupt.interrupt_id, reply):
            print("  (not one of the choices; asking again)")
            await self.answer(interrupt)


TOOL_EVENTS = ("tool_call_started", "tool_call_finished", "timer_started", "interrupt_raised")
TURN_END_EVENTS = ("turn_completed", "turn_cancelled", "turn_failed")


def history_line(message: AgentMessage) -> str:
    """One line of an earlier message, as the chat showed it."""
    if message.role == "user":
        prefix, body = "you> ", message.text or ""
    elif message.role == "tool":
        output = compact_json(message.tool_output or "")
        prefix, body = "  · ", f"{message.tool_name or 'tool'} returned {output}"
    elif message.tool_name:
        call = f"calls {message.tool_name}({compact_json(message.tool_arguments or '{}')})"
        text = message.text
        prefix, body = ("assistant> ", f"{text}  {call}") if text else ("  · ", call)
    else:
        prefix, body = "assistant> ", message.text or ""
    return prefix + truncate(one_line(body), LINE_WIDTH - len(prefix))


async def run_chat(
    database_url: str,
    model: str | None,
    session_id: str | None,
    hint: Callable[..., str] = plain_hint,
) -> None:
    loop = asyncio.get_running_loop()
    main_task = asyncio.current_task()
    assert main_task is not None
    chat: Chat | None = None

    def on_sigint() -> None:
        # Ctrl-C outside a prompt: cancels the running turn, or else leaves the chat.
        if chat is None or not chat.interrupt():
            main_task.cancel()

    loop.add_signal_handler(signal.SIGINT, on_sigint)
    server = None if model else ScriptedModelServer().start()
    env = {MODEL_ENV: model or SCRIPTED_MODEL}
    if server is not None:
        demo_script(server)
        env[API_BASE_ENV] = server.base_url
        print("[scripted demo model: no model key needed; pass --model to use a real one]")
    worker = WorkerProcess("dex_agents.chat:build_flows", database_url=database_url, env=env)
    client = AgentClient(database_url)
    try:
        print(f"Starting a Worker on {database_url} …")
        worker.start()
        resumed = session_id is not None
        if session_id is None:
            session_id = await client.start_session(FLOW_TYPE)
        terminal = on_terminal()
        chat = Chat(
            client,
            session_id,
            TerminalPrompter() if terminal else LinePrompter(),
            Status(enabled=terminal),
            hint,
        )
        await chat.catch_up()
        if resumed:
            await chat.show_history()
        print(f"Session {session_id}: resume it with {hint('chat', '--session', session_id)}")
        snapshot = await client.get_agent_snapshot(session_id)
        if snapshot.state and snapshot.state.active_turn_id:
            print("(resuming the turn that was running)")
            await chat.resume_turn()
        await chat_loop(chat)
    except asyncio.CancelledError:
        if main_task.uncancel() > 0:
            raise
        print("\nbye")
    finally:
        if chat is not None:
            chat.status.clear()
        print("Stopping the Worker …", flush=True)
        worker.stop()
        print("Worker stopped.")
        await client.close()
        if server is not None:
            server.stop()
        loop.remove_signal_handler(signal.SIGINT)


async def chat_loop(chat: Chat) -> None:
    while True:
        try:
            text = await chat.prompt()
        except (EOFError, KeyboardInterrupt):
            print("\nbye")
            return
        if text.strip() in ("/quit", "/exit"):
            return
        await chat.run_turn(text)


def main(
    database_url: str,
    model: str | None,
    session_id: str | None,
    hint: Callable[..., str] = plain_hint,
) -> None:
    """Runs the chat; `hint(*args)` is the command line of the `dex-agents` command `args` on
    the same database (and model), as the user can type it."""
    try:
        asyncio.run(run_chat(database_url, model, session_id, hint))
    except KeyboardInterrupt:
        print("\nbye", file=sys.stderr)
