"""Runs one turn with a read on an in-process Worker whose tracing is off (DEX_AGENTS_TRACING
unset), then prints the opentelemetry modules this process loaded, as JSON.

    python -m tests.otel.untraced <database URL> <session ID>
"""

from __future__ import annotations

import asyncio
import json
import sys

from dex_agents import AgentClient, Worker
from dex_agents.testing.sessions import turns_done

from .app import flows


async def main(database_url: str, session_id: str) -> None:
    client = AgentClient(database_url)
    try:
        async with Worker(flows, database_url=database_url) as worker:
            assert worker.tracer is None
            await client.start_session("Traced", "Weather in Lima?", session_id=session_id)
            await client.wait_for(session_id, turns_done(1))
    finally:
        await client.close()
    loaded = sorted(m for m in sys.modules if m.startswith(("opentelemetry", "dex_agents.otel.")))
    print(json.dumps(loaded))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
