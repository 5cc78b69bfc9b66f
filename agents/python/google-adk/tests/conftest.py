"""Fixtures: the shared ones of dex_agents.testing (a database per test, a scripted model
server, a tool-run log, real Worker processes and a client). LiteLLM reads its bundled model
cost map instead of fetching it (the tests and their Workers run offline)."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

pytest_plugins = ["dex_agents.testing.fixtures"]
