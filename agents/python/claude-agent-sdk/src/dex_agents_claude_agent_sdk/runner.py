"""The dex-agents runner for the Claude Agent SDK: a whole-turn harness.

The Claude Code CLI runs a turn's model calls and tools itself, so one turn is one `RunModel`
Step: `run_model_step` runs one `query` to the turn's final answer. The CLI's transcript goes to
a `RecordSessionStore` filled with the entries of the earlier turns; the entries the CLI
appended during the turn are stored with the turn's final message, and the next turn resumes
the CLI session by its ID from them. Each run gets its own empty `CLAUDE_CONFIG_DIR`, so the
CLI resumes from the session's records only, on any host.

Tools run inside the CLI and are at-least-once: a retried or rerun `RunModel` Step runs them
again.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import Mapping
from typing import cast

from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKError,
    SessionKey,
    project_key_for_directory,
    query,
)
from claude_agent_sdk.types import SessionStore
from dex_agents.runner import (
    AgentTurnContext,
    AgentTurnOutcome,
    DeferredToolExecution,
    FrameworkMessage,
    ToolExecutionResult,
    TurnCompleted,
)

from .store import RecordSessionStore
from .stream import TurnRecorder
from .transcript import USER_KIND, History, TurnTranscript, history_of

QUIET_CLI_ENV: Mapping[str, str] = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}
"""Environment that turns off the CLI's non-essential traffic, telemetry and auto-update."""


class HarnessTurnError(RuntimeError):
    """The CLI ended the turn with an error result (the RunModel attempt fails)."""


class ClaudeAgentRunner:
    """Runs the Claude Agent SDK (the Claude Code CLI) as a durable agent session, one whole
    turn per `RunModel` Step.

    `options` are used as given, except: `session_store` and `resume` (the runner's own),
    `include_partial_messages` (on, for `text_delta` events) and `CLAUDE_CONFIG_DIR` (a fresh
    temporary directory per run); `env` gets `QUIET_CLI_ENV` under the caller's own values."""

    def __init__(self, *, options: ClaudeAgentOptions | None = None) -> None:
        options = options or ClaudeAgentOptions()
        if options.session_store is not None or options.resume is not None:
            raise ValueError(
                "ClaudeAgentRunner keeps the transcript itself: leave session_store and resume "
                "unset in the options"
            )
        if options.continue_conversation:
            raise ValueError(
                "ClaudeAgentRunner resumes by session ID: continue_conversation must be off"
            )
        self.options = options

    def build_user_message(self, text: str) -> FrameworkMessage:
        item = json.dumps({"kind": USER_KIND, "text": text})
        return FrameworkMessage(role="user", framework_item=item, text=text)

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        history = history_of(turn.messages)
        store = self._store(history)
        recorder = TurnRecorder(turn)
        with tempfile.TemporaryDirectory(prefix="dex-claude-config-") as config_dir:
            options = self._run_options(history, store, config_dir)
            try:
                async for message in query(prompt=history.prompt, options=options):
                    recorder.observe(message)
                    turn.heartbeat()
            except ClaudeSDKError as error:
                raise HarnessTurnError(f"Claude Code turn failed: {error}") from error
        result = recorder.result
        if result is None or result.is_error:
            detail = (result.errors or [result.subtype]) if result else ["no result"]
            raise HarnessTurnError(f"Claude Code turn failed: {'; '.join(map(str, detail))}")
        transcript = TurnTranscript(
            session_id=result.session_id,
            entries=store.appended(),
            cost_usd=result.total_cost_usd,
            result={"num_turns": result.num_turns, "stop_reason": result.stop_reason},
        )
        final = FrameworkMessage(
            role="assistant", framework_item=transcript.to_json(), text=recorder.final_text()
        )
        return TurnCompleted(new_messages=[*recorder.messages, final], usage=recorder.usage())

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        raise RuntimeError(
            "ClaudeAgentRunner runs tools inside the Claude Code harness; it never defers "
            f"a tool call (got {call.tool_call.tool_name})"
        )

    def _project_key(self) -> str:
        return project_key_for_directory(self.options.cwd)

    def _store(self, history: History) -> RecordSessionStore:
        store = RecordSessionStore()
        if history.session_id is None:
            return store
        for subpath, entries in history.entries.items():
            key = SessionKey(project_key=self._project_key(), session_id=history.session_id)
            if subpath:
                key["subpath"] = subpath
            store.preload(key, entries)
        return store

    def _run_options(
        self, history: History, store: RecordSessionStore, config_dir: str
    ) -> ClaudeAgentOptions:
        env = {**QUIET_CLI_ENV, **self.options.env, "CLAUDE_CONFIG_DIR": config_dir}
        return dataclasses.replace(
            self.options,
            env=env,
            # The SDK probes a store's optional methods at runtime; this one has the required
            # ones and list_subkeys.
            session_store=cast(SessionStore, store),
            session_store_flush="eager",
            resume=history.session_id,
            include_partial_messages=True,
        )
