"""Warm run states (runner.py) are invisible from outside: the shared check
(dex_agents.testing.warm) on the matrix's agent, and the cold path whenever the kept state does
not stand for the committed one."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from dex_agents.testing import RunnerDriver, ScriptedModelServer, ToolRunLog
from dex_agents.testing.shared_worker import WorkerApp
from dex_agents.testing.warm import (
    WarmWorkerSuite,
    assert_warm_matches_cold,
    decide,
    tool_log_env,
    warm_script,
)

from dex_agents_openai_agents import OpenAIAgentsRunner

from .apps.scripted import matrix_agent, scripted_run_config

ROOT = Path(__file__).parent.parent


def _runner(warm_runs: int, model_url: str) -> OpenAIAgentsRunner:
    config = scripted_run_config(model_url, max_retries=0)
    return OpenAIAgentsRunner(matrix_agent(), run_config=config, warm_runs=warm_runs)


async def test_warm_and_cold_send_the_same_bytes_and_store_and_stream_the_same(
    tool_log: ToolRunLog,
) -> None:
    warm = await assert_warm_matches_cold(_runner, tool_log)
    # Every model step after tool calls resumed warm but the steered turn's second one.
    assert (warm.warm_runs.hits, warm.warm_runs.misses) == (5, 1)


async def test_each_model_call_of_a_restored_run_resends_the_turn_so_far_in_the_same_bytes(
    model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    """A prompt cache matches the bytes of a request's prefix: the cold path's run state,
    restored from JSON, sends the items of earlier calls as the live run sent them."""
    runner = _runner(0, model.base_url)
    model.enqueue(*warm_script())
    with tool_log_env(tool_log):
        driver = RunnerDriver(runner)
        await driver.turn("Help with ticket t-1, please.", decide=decide)
    inputs = [[json.dumps(item) for item in request.body["input"]] for request in model.requests]
    assert len(inputs) == 5
    for before, after in itertools.pairwise(inputs):
        assert after[: len(before)] == before


class TestWarmInAWorker(WarmWorkerSuite):
    app = WorkerApp(worker_target="tests.apps.matrix:flows", worker_cwd=ROOT)
