"""The shared features suite (`dex_agents.testing.features`) on this package's features app:
built-ins, plan mode, session settings, compaction and an MCP tool source through one real
Worker per backend."""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing.features import FeatureApp, FeatureSuite
from dex_agents.testing.shared_worker import responses


class TestFeatures(FeatureSuite):
    app = FeatureApp(
        worker_target="tests.apps.features:flows",
        worker_cwd=Path(__file__).parent.parent,
        model_view=responses,
    )
