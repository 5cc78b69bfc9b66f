"""Fixtures: the shared ones of dex_agents.testing (databases, the scripted model server, the
tool-run log, real Worker processes, a client)."""

pytest_plugins = ["dex_agents.testing.fixtures"]
