"""The engine-only Flow of bench_core.py and bench_scale.py: an instant model, one read tool.

A Worker process loads it with `dex-agents worker instant_app:flows` (run from this
directory); bench_core.py runs it in-process.
"""

from __future__ import annotations

from dex_agents.testing.instant_runner import instant_flow

FLOW_TYPE = "Bench"
FLOW = instant_flow(FLOW_TYPE)

flows = [FLOW]
