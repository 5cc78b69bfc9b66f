"""The Worker's flow for the README's example: `SupportAgent`, served by the example's own Node
process at $README_RUNNER_URL (`test_readme_example.py` starts it)."""

from __future__ import annotations

import os

from dex_agents.remote import remote_flow

flows = [remote_flow(os.environ["README_RUNNER_URL"], "SupportAgent")]
