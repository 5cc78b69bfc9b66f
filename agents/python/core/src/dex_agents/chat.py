"""`dex-agents chat`: a terminal chat with a durable Stepwise agent on the SQLite default.

With `--model` (any LiteLLM model string, with its provider's key in the environment) the
agent talks to that model. Without it, a clearly labelled scripted demo model walks through a
read tool, an approval, an `ask_user` question and a `durable_wait`. Approvals and questions
are answered inline. The Worker runs as a child process: Ctrl-C during a turn cancels the
turn, Ctrl-C at the prompt leaves, and `dex-agents chat --session ID` resumes the session
where it stood, even after the Worker was killed with SIGKILL.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from .client import AgentClient
from .flow import AgentSessionFlow, AgentSessionOptions
from .testing import ScriptedModelServer, WorkerProcess, reply_text, reply_tools
from .tool_context import current_tool_execution
from .types import AgentEvent, AgentInterrupt

FLOW_TYPE = "ChatAssistant"
MODEL_ENV = "DEX_AGENTS_CHAT_MODEL"
API_BASE_ENV = "DEX_AGENTS_CHAT_API_BASE"
SCRIPTED_MODEL = "openai/dex-scripted-demo"
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
    for _ in range(50):
        server.enqueue(reply_text("(The scripted demo is over. Run dex-agents chat --model …)"))


class Chat:
    def __init__(
        self, client: AgentClient, session_id: str, ask: Callable[[str], str] = input
    ) -> None:
        self.client = client
        self.session_id = session_id
        self.ask = ask
        self.offset = 0
        self.streaming = False

    async def catch_up(self) -> None:
        """Skips the events already shown, so a resumed chat prints only what is new."""
        events = await self.client.read_events(self.session_id, after=0, limit=1_000_000)
        self.offset = events[-1].offset if events else 0

    async def prompt(self) -> str:
        return await asyncio.to_thread(self.ask, "\nyou> ")

    async def run_turn(self, text: str) -> None:
        if not await self.client.send_user_message(self.session_id, text):
            print("(a blank message is not sent)")
            return
        await self.follow_turn()

    async def follow_turn(self) -> None:
        """Prints the turn as it streams, answering approvals and questions inline."""
        while True:
            events = await self.client.read_events(self.session_id, after=self.offset)
            for event in events:
                self.offset = event.offset
                if await self.show(event):
                    return
            if not events:
                await asyncio.sleep(0.05)

    async def show(self, event: AgentEvent) -> bool:
        """Prints one event; True when the turn ended."""
        payload = json.loads(event.payload)
        if event.type == "text_delta":
            if not self.streaming:
                print("\nassistant> ", end="")
                self.streaming = True
            print(payload["text"], end="", flush=True)
            return False
        self.end_stream()
        if event.type == "tool_call_started":
            print(f"  · running {payload['tool_name']}")
        elif event.type == "tool_call_finished":
            print(f"  · {payload['tool_name']}: {payload['status']}")
        elif event.type == "timer_started":
            print(f"  · waiting until {payload['wait_until']} ({payload['reason']})")
        elif event.type == "interrupt_raised":
            await self.resolve(payload)
        elif event.type in ("turn_completed", "turn_cancelled"):
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
        question = f"  ? approve {interrupt.tool_name} {interrupt.arguments} [y/N] "
        reply = (await asyncio.to_thread(self.ask, question)).strip().lower()
        approved = reply in ("y", "yes")
        await self.client.resolve_interrupt(
            self.session_id, interrupt.interrupt_id, approved, None if approved else "Not now."
        )

    async def answer(self, interrupt: AgentInterrupt) -> None:
        choices = f" ({' / '.join(interrupt.choices)})" if interrupt.choices else ""
        reply = await asyncio.to_thread(self.ask, f"  ? {interrupt.question}{choices} ")
        if not reply.strip():
            await self.client.resolve_interrupt(self.session_id, interrupt.interrupt_id, False)
        elif not await self.client.answer_question(self.session_id, interrupt.interrupt_id, reply):
            print("  (not one of the choices; asking again)")
            await self.answer(interrupt)


async def run_chat(database_url: str, model: str | None, session_id: str | None) -> None:
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
        if session_id is None:
            session_id = await client.start_session(FLOW_TYPE)
        chat = Chat(client, session_id)
        await chat.catch_up()
        print(f"Session {session_id}: resume it with dex-agents chat --session {session_id}")
        snapshot = await client.get_agent_snapshot(session_id)
        if snapshot.state and snapshot.state.active_turn_id:
            print("(resuming the turn that was running)")
            await chat.follow_turn()
        await loop(chat)
    finally:
        worker.stop()
        await client.close()
        if server is not None:
            server.stop()


async def loop(chat: Chat) -> None:
    while True:
        try:
            text = await chat.prompt()
        except (EOFError, KeyboardInterrupt):
            print("\nbye")
            return
        if text.strip() in ("/quit", "/exit"):
            return
        try:
            await chat.run_turn(text)
        except (KeyboardInterrupt, asyncio.CancelledError):
            await chat.client.cancel_turn(chat.session_id)
            print("\n(cancelled the turn)")
            await chat.follow_turn()


def main(database_url: str, model: str | None, session_id: str | None) -> None:
    try:
        asyncio.run(run_chat(database_url, model, session_id))
    except KeyboardInterrupt:
        print("\nbye", file=sys.stderr)
