"""Several Workers on one database: every session completes and each model call runs once."""

from __future__ import annotations

import asyncio

from dex_agents.testing import reply_text

from .helpers import turns_done


async def test_two_workers_share_one_database(make_worker, model, client):
    model.enqueue(*(reply_text(f"answer {n}") for n in range(8)))
    with make_worker(DEX_AGENTS_WORKER_ID="worker-a"), make_worker(DEX_AGENTS_WORKER_ID="worker-b"):
        sessions = [await client.start_session("Assistant", f"question {n}") for n in range(8)]
        snapshots = await asyncio.gather(*(client.wait_for(s, turns_done(1)) for s in sessions))

    assert len(model.requests) == 8  # every model call ran exactly once
    answers = sorted(s.messages[-1].text or "" for s in snapshots)
    assert answers == sorted(f"answer {n}" for n in range(8))
    for session in sessions:
        history = [step.step_type for step in await client.get_step_history(session)]
        assert history == ["StartAgentSession", "RunModel", "AwaitUserMessage"]
