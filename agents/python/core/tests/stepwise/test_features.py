"""The shared features suite (`dex_agents.testing.features`) on StepwiseRunner, the core's
own runner: built-ins, plan mode, session settings, compaction and an MCP tool source through
one real Worker per backend."""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing.features import FeatureApp, FeatureSuite
from dex_agents.testing.shared_worker import chat_completions


class TestStepwiseFeatures(FeatureSuite):
    app = FeatureApp(
        worker_target="tests.apps.features:flows",
        worker_cwd=Path(__file__).parent.parent.parent,
        model_view=chat_completions,
    )
