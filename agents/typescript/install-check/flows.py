"""The Worker's flow for the installed application's Vercel AI SDK example: `SupportAgent`,
served by the example's own Node process at $EXAMPLE_RUNNER_URL (test_install.py starts it)."""

from __future__ import annotations

import os

from dex_agents.remote import remote_flow

flows = [remote_flow(os.environ["EXAMPLE_RUNNER_URL"], "SupportAgent")]
