"""The matrix (`matrix.py`) on a Claude Agent SDK runner, Python or TypeScript, in one place.

The Claude Code CLI is a whole-turn harness: a RunModel Step is one CLI run, which runs the
turn's model calls and its read tools itself and stops before a write call, which becomes a
tool Step. Some rows of the matrix therefore cannot occur with it, and the many-sessions row
occurs with other Step shapes. `ClaudeHarnessMatrix` goes before the matrix suite in a test
class's bases (`MatrixSuite`, or `node_runner.NodeRunnerMatrixSuite` for the TypeScript
runner): it serves the suite's replies from the scripted Anthropic server with the tools named
as the model sees them (`mcp__matrix__<tool>`: the app gives the CLI its tools as the
in-process SDK MCP server `matrix`), skips the rows that cannot occur with the reason, and has
the many-sessions row expect a read session's Steps without a tool Step
(`MatrixSuite.reads_run_in_tool_steps`).

Both packages' READMEs (Integration mode, Effects, Limits) say why each row cannot occur.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import pytest

from .anthropic_features import FeatureAnthropicServer
from .anthropic_server import no_tools
from .matrix import MATRIX_TOOL_POLICIES

SERVER_KEY = "matrix"
"""The key of the matrix app's in-process SDK MCP server: the model sees `mcp__matrix__<tool>`."""

READS_IN_THE_CLI = (
    "a read runs inside the CLI run (in RunModel), not in a CallTool Step: the row's Step shape "
    "cannot occur (README, Integration mode)"
)
ONE_WRITE_PER_RUN = (
    "reads run inside the CLI run and the CLI defers one write call per run: a response's calls "
    "never run as parallel tool Steps (README, Limits)"
)
WHOLE_RUN_RERUN = (
    "a rerun RunModel Step reruns the whole CLI run (the turn's model calls and reads so far), "
    "not one model call (README, Limits)"
)
CLI_RETRIES = (
    "the pinned CLI sends a request answered with HTTP 400 three times in all, whatever "
    "CLAUDE_CODE_MAX_RETRIES says (the package's runner tests), so a RunModel attempt is not one "
    "request and the row's scripted answers are used up by those retries (README, Limits)"
)


def model_name(tool: str) -> str:
    """The name the model sees for one of the matrix app's tools."""
    return f"mcp__{SERVER_KEY}__{tool}"


def cannot(reason: str) -> Any:
    """A row this runner cannot produce, skipped with the reason."""

    @pytest.mark.skip(reason=reason)
    async def row(self: Any) -> None:
        raise AssertionError(reason)

    return row


class AnthropicMatrixModel:
    """The suite's replies, as Anthropic messages with the tools' model names; the CLI's own
    small requests (no tools offered) answered aside."""

    @pytest.fixture(scope="class")
    @classmethod
    def shared_model(cls, shared_database: str) -> Iterator[FeatureAnthropicServer]:
        with FeatureAnthropicServer(model_name, side=no_tools) as server:
            yield server


class ClaudeHarnessMatrix(AnthropicMatrixModel):
    """The matrix's rows as a Claude Code CLI harness runs them (see the module)."""

    reads_run_in_tool_steps: ClassVar[bool] = False
    model_names: ClassVar[Mapping[str, str]] = {
        tool: model_name(tool) for tool in MATRIX_TOOL_POLICIES
    }

    test_read_tool_turn_has_the_step_shape_and_replays_next_turn = cannot(READS_IN_THE_CLI)
    test_parallel_tool_calls_run_as_parallel_steps = cannot(ONE_WRITE_PER_RUN)
    test_approval_waits_beside_a_read_survives_a_restart_and_runs_once = cannot(READS_IN_THE_CLI)
    test_kill_during_run_model_reruns_only_that_model_call = cannot(WHOLE_RUN_RERUN)
    test_failed_turn_leaves_the_failure_note_and_the_write_is_not_repeated = cannot(CLI_RETRIES)
    test_run_model_attempts_are_the_only_retries_of_a_failing_model_call = cannot(CLI_RETRIES)
