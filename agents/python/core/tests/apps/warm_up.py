"""A Worker app whose runners warm up (`WarmUpRunner`): one writes the file at $WARM_UP_FILE,
the other's warm-up fails."""

from __future__ import annotations

import os
from pathlib import Path

from dex_agents import AgentSessionFlow
from dex_agents.testing import ScriptedRunner


class MarkingRunner(ScriptedRunner):
    async def warm_up(self) -> None:
        Path(os.environ["WARM_UP_FILE"]).write_text("warm")


class FailingRunner(ScriptedRunner):
    async def warm_up(self) -> None:
        raise RuntimeError("no tokenizer for scripted-model")


flows = [
    AgentSessionFlow(MarkingRunner(), flow_type="Marked"),
    AgentSessionFlow(FailingRunner(), flow_type="Failing"),
]
