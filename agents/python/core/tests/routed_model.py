"""A scripted model that answers each request by what it asks, for tests whose sessions run
concurrently on several Workers, where a queue of replies would go to whichever asks first.

`write ...` asks for the slow single-attempt write, `email ...` for the email that needs an
approval; a tool result ends the turn with it (`done: <result>`); anything else is echoed
(`echo: <message>`) after a pause, as a model takes time.
"""

from __future__ import annotations

from typing import Any

from dex_agents.testing import ScriptedModelServer, ScriptedReply, reply_text, reply_tools

WRITE_SECONDS = 1.5


class RoutedModelServer(ScriptedModelServer):
    """Answers every request with `answer(request body)`: real streamed HTTP, as scripted."""

    def __init__(self, write_seconds: float = WRITE_SECONDS) -> None:
        super().__init__(loop=[reply_text("unused")])  # a reply for every request
        self.write_seconds = write_seconds

    def _respond(self, exchange: Any, path: str, body: dict[str, Any], *rest: Any) -> None:
        stream, number, _, hang = rest
        super()._respond(exchange, path, body, stream, number, self.answer(body), hang)

    def answer(self, body: dict[str, Any]) -> ScriptedReply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return reply_text(f"done: {last['content']}", delay_seconds=0.1)
        text = last["content"]
        call_id = text.replace(" ", "-")
        if text.startswith("write"):
            return reply_tools((call_id, "slow_write", {"seconds": self.write_seconds}))
        if text.startswith("email"):
            return reply_tools((call_id, "send_email", {"to": "ana@example.com", "body": text}))
        return reply_text(f"echo: {text}", delay_seconds=0.3)
