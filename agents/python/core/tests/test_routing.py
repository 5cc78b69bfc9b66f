"""Each flow type's Steps reach only the Workers that host it: a session of a flow type no
running Worker hosts waits, intact, until one starts."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import warnings

import pytest

from dex_agents import FlowTypeNotHostedWarning
from dex_agents.testing import ScriptedReply

from .helpers import no_failed_workflows, step_workflows, turns_done


async def test_a_flow_type_no_worker_hosts_waits_intact_and_runs_once_a_worker_hosts_it(
    database_url, make_worker, model, client
):
    model.enqueue(ScriptedReply(text="Hello from Assistant."))
    with make_worker():  # hosts Assistant only
        with pytest.warns(FlowTypeNotHostedWarning, match="'Weather'.*Assistant"):
            waiting = await client.start_session("Weather", "Rain tomorrow?")
        # The Assistant Worker keeps serving its own flow type meanwhile.
        served = await client.start_session("Assistant", "Hi")
        await client.wait_for(served, turns_done(1), timeout=30)
        await asyncio.sleep(1.0)  # several queue polls of the Assistant Worker

        history = await client.get_step_history(waiting)
        assert [(s.step_type, s.status) for s in history] == [("StartAgentSession", "scheduled")]
        assert set(step_workflows(database_url, waiting).values()) == {"ENQUEUED"}
        assert len(model.requests) == 1

        model.enqueue(ScriptedReply(text="No rain."))
        with make_worker("tests.apps.basic:weather_flows"):
            snapshot = await client.wait_for(waiting, turns_done(1), timeout=30)
            with warnings.catch_warnings():
                warnings.simplefilter("error", FlowTypeNotHostedWarning)
                await client.start_session("Weather")  # hosted now: no warning

    assert [m.text for m in snapshot.messages] == ["Rain tomorrow?", "No rain."]
    assert no_failed_workflows(database_url, waiting)
    assert model.requests[1].body["messages"][0]["content"] == "You are a weather assistant."


def test_cli_start_warns_when_no_live_worker_hosts_the_flow_type(database_url):
    result = subprocess.run(
        [sys.executable, "-m", "dex_agents", "start", "Wether", "hello"],
        env={"DEX_AGENTS_DATABASE_URL": database_url, "PATH": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith("session-")
    assert result.stderr.strip() == (
        "warning: no live Worker hosts flow type 'Wether' (no Worker is live); "
        "the session waits until a Worker that hosts 'Wether' starts"
    )
