"""Fixtures: the shared ones of dex_agents.testing (a database per test, a scripted model
server, a tool-run log, real Worker processes and a client)."""

from __future__ import annotations

pytest_plugins = ["dex_agents.testing.fixtures"]
