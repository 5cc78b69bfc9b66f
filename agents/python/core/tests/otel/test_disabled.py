"""Tracing off (the default): a session runs without loading opentelemetry, and nothing
stores a trace context."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dex_agents.otel import TRACING_ENV, make_tracer
from dex_agents.testing import reply_text, reply_tools
from dex_agents.testing.scripted_runner import MODEL_URL_ENV

from .spans import stored_trace_context

CORE = Path(__file__).parent.parent.parent


async def test_an_untraced_worker_never_imports_opentelemetry(model, database_url, tool_log):
    model.enqueue(reply_tools(("r1", "get_weather", {"city": "Lima"})), reply_text("Sunny."))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", TRACING_ENV))}
    env.update({MODEL_URL_ENV: model.base_url, "TOOL_LOG": str(tool_log.path)})
    done = subprocess.run(
        [sys.executable, "-m", "tests.otel.untraced", database_url, "untraced-1"],
        cwd=CORE,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []
    assert tool_log.count("get_weather") == 1
    assert stored_trace_context(database_url, "untraced-1") is None


def test_tracing_is_off_unless_asked(monkeypatch):
    monkeypatch.delenv(TRACING_ENV, raising=False)
    assert make_tracer(None) is None
    assert make_tracer(False) is None
    monkeypatch.setenv(TRACING_ENV, "1")
    assert make_tracer(None) is not None
    assert make_tracer(False) is None


def test_an_unknown_conventions_version_is_refused(monkeypatch):
    monkeypatch.setenv("DEX_AGENTS_OTEL_SEMCONV", "1.20.0")
    with pytest.raises(ValueError, match=r"DEX_AGENTS_OTEL_SEMCONV is '1\.20\.0'"):
        make_tracer(True)
