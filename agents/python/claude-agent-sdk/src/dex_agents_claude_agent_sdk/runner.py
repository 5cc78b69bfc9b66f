"""The dex-agents runner for the Claude Agent SDK: a whole-run harness.

The Claude Code CLI runs a turn's model calls and tools itself, so a `RunModel` Step is one
whole CLI run: `run_model_step` runs one `query` to the turn's final answer, or to the write
call the runner's hook defers. The CLI's transcript goes to a `RecordSessionStore` filled with
the entries of the earlier turns (and of the turn's earlier runs, kept in the run state); the
entries the CLI appended during the turn are stored with the turn's final message, and the next
turn resumes the CLI session by its ID from them. Each run gets its own empty
`CLAUDE_CONFIG_DIR`, so the CLI resumes from the session's records only, on any host.

A write call of the runner's in-process SDK MCP tools (effect not `read`) is deferred by the
runner's PreToolUse hook: the run ends before the tool runs, the turn asks for the call as a
tool Step (`ToolCallsRequested`, approval by effect), `execute_deferred_tool_call` runs the
tool's handler once, and the next `RunModel` resumes the CLI session, whose call of the tool
gets the recorded result. Every other tool runs inside the CLI and is at-least-once: a retried
or rerun `RunModel` Step runs it again.

The runner's tool sources (`McpToolSource`s, `sources.py`) are served to the CLI as in-process
servers of their own and gated the same way: a write call runs in its tool Step through the
source, a read inside the CLI run with the key its tool Step would have had.

The session's built-in tools are offered as the tools of one more in-process SDK MCP server
(`built_ins.py`), whose calls are deferred the same way and reported under the built-in's own
name, so the core runs them as its built-in Steps. A planning turn offers only `write_todos`:
the run gets no other tool (no CLI tool, no MCP server but the built-ins'), and the plan note
comes first in the turn's prompt. `options_for` derives each run's options from the session
settings, so a settings update takes effect at the session's next turn (its model already at
the next run; the CLI keeps a turn's first prompt and tools for the turn's later runs).
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any, cast

from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKError,
    HookMatcher,
    ResultMessage,
    SessionKey,
    project_key_for_directory,
    query,
)
from claude_agent_sdk.types import McpServerConfig, SessionStore
from dex_agents.builtins import build_plan_note
from dex_agents.mcp import McpToolSource
from dex_agents.runner import (
    AgentTurnContext,
    AgentTurnOutcome,
    DeferredToolExecution,
    FrameworkMessage,
    ToolCallsRequested,
    ToolExecutionError,
    ToolExecutionResult,
    TurnCompleted,
)
from dex_agents.tool_context import running_tool
from dex_agents.tool_source import run_source_call

from . import built_ins
from .gate import WriteGate
from .sources import SourceListing, SourceTools
from .store import RecordSessionStore
from .stream import TurnRecorder, with_tool_names
from .texts import RESUME_PROMPT
from .tools import RecordedResults, SdkTools, result_text
from .transcript import (
    USER_KIND,
    History,
    RunState,
    TurnTranscript,
    history_of,
    merged,
    without_prompt_snapshots,
)

QUIET_CLI_ENV: Mapping[str, str] = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}
"""Environment that turns off the CLI's non-essential traffic, telemetry and auto-update."""

NO_CLI_RETRIES_ENV: Mapping[str, str] = {"CLAUDE_CODE_MAX_RETRIES": "0"}
"""Environment that turns off the CLI's own retries of a failed model request, so that
RunModel's attempts, recorded in the Step history, are the model call's retries."""

SERVERS_AS_PATH = (
    "built-in tools and tool sources need ClaudeAgentOptions.mcp_servers as a dict (it is a "
    "config file path): give the servers as a dict"
)
"""Refuses tool sources (when the runner is made) and built-ins (when a run that offers them
starts) beside servers given as a config file, which the runner cannot add servers to."""


OptionsFor = Callable[[ClaudeAgentOptions, Mapping[str, Any]], ClaudeAgentOptions]
"""The options of one model call: given the runner's options and the session's settings."""


class HarnessTurnError(RuntimeError):
    """The CLI ended the turn with an error result (the RunModel attempt fails)."""


class ClaudeAgentRunner:
    """Runs the Claude Agent SDK (the Claude Code CLI) as a durable agent session: each
    `RunModel` Step is one whole CLI run, which ends with the turn's answer or before a write
    call of the options' SDK MCP tools (that call then runs in its own tool Step).

    `options` are used as given, except: `session_store` and `resume` (the runner's own),
    `include_partial_messages` (on, for `text_delta` events), `CLAUDE_CONFIG_DIR` (a fresh
    temporary directory per run), the runner's PreToolUse hook (first, before the given ones)
    and copies of the SDK MCP servers that can answer with a recorded result; `env` gets
    `QUIET_CLI_ENV`, and `NO_CLI_RETRIES_ENV` unless `framework_retries`, under the caller's
    own values. The `mcp_servers` key `dex` is reserved for the session's built-in tools.

    `options_for(options, session_settings)`, when given, returns the options of each CLI run
    from the session's current settings (`AgentClient.update_session_settings` takes effect at
    the next turn; see the README): typically `dataclasses.replace(options, model=...,
    system_prompt=...)`. It must keep `options.mcp_servers` (the tool Steps run those tools)."""

    supports_plan_mode = True

    def __init__(
        self,
        *,
        options: ClaudeAgentOptions | None = None,
        options_for: OptionsFor | None = None,
        framework_retries: bool = False,
        tool_sources: Mapping[str, McpToolSource] | None = None,
    ) -> None:
        """`framework_retries`: keep the CLI's own retries of a failed model request (with
        backoff, inside one RunModel attempt) instead of leaving them to RunModel's attempts.
        `tool_sources`: `McpToolSource`s by server key, served to the CLI as in-process MCP
        servers (`sources.py`; the model sees `mcp__<key>__<tool>`)."""
        options = options or ClaudeAgentOptions()
        _check_options(options)
        servers = options.mcp_servers
        if tool_sources and not isinstance(servers, Mapping):
            raise ValueError(SERVERS_AS_PATH)
        keys = [*(servers if isinstance(servers, Mapping) else {}), *(tool_sources or {})]
        if built_ins.SERVER_KEY in keys:
            raise ValueError(
                f"the key {built_ins.SERVER_KEY!r} is reserved for the session's built-in tools: "
                "give that server or source another key"
            )
        if len(set(keys)) < len(keys):
            raise ValueError("a key is both in mcp_servers and in tool_sources: give each its own")
        self.options = options
        self.options_for = options_for
        self._own_env = (
            QUIET_CLI_ENV if framework_retries else {**QUIET_CLI_ENV, **NO_CLI_RETRIES_ENV}
        )
        self._tools = SdkTools(options.mcp_servers)
        self._sources = SourceTools(tool_sources or {})

    def build_user_message(self, text: str) -> FrameworkMessage:
        item = json.dumps({"kind": USER_KIND, "text": text})
        return FrameworkMessage(role="user", framework_item=item, text=text)

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        history = history_of(turn.messages)
        state = RunState.from_json(turn.framework_run_state)
        session_id = state.session_id if state else history.session_id
        store = self._store(history, state)
        offered = built_ins.offered(
            turn.enabled_built_in_tools, turn.interaction_mode == "planning"
        )
        recorder = TurnRecorder(turn, offered)
        handed = RecordedResults()
        sources = await self._sources.listing()
        gate = WriteGate(turn, await self._tools.effects(), handed, offered, sources.declared())
        run = _RunSetup(session_id, store, gate, handed, offered, sources)
        with tempfile.TemporaryDirectory(prefix="dex-claude-config-") as config_dir:
            options = self._run_options(turn, run, config_dir)
            # A run that resumes a deferred call has no new prompt: a blank one costs no model
            # call.
            prompt = RESUME_PROMPT if state else _prompt(turn, history.prompts)
            await _run(prompt, options, recorder)
        result = _answer(recorder)
        entries = merged(state.entries if state else {}, store.appended())
        earlier = [FrameworkMessage(**item) for item in (state.messages if state else [])]
        messages = with_tool_names([*earlier, *recorder.messages])
        if result.stop_reason == "tool_deferred":
            return _deferred(result, gate, entries, messages, recorder)
        transcript = TurnTranscript(
            session_id=result.session_id,
            entries=entries,
            cost_usd=result.total_cost_usd,
            result={"num_turns": result.num_turns, "stop_reason": result.stop_reason},
        )
        final = FrameworkMessage(
            role="assistant", framework_item=transcript.to_json(), text=recorder.final_text()
        )
        return TurnCompleted(new_messages=[*messages, final], usage=recorder.usage())

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        """Runs a deferred write call's SDK MCP tool handler, once per tool Step attempt; an
        error result fails the call (the model sees its text)."""
        source = self._sources.owner(call)
        if source is not None:
            return await run_source_call(source, call)
        arguments: dict[str, Any] = json.loads(call.tool_call.arguments or "{}")
        with running_tool(call):
            result = await self._tools.call(call.tool_call.tool_name, arguments)
        text = result_text(result)
        if result.is_error:
            raise ToolExecutionError(text)
        return ToolExecutionResult(output=text)

    def _project_key(self) -> str:
        return project_key_for_directory(self.options.cwd)

    def _store(self, history: History, state: RunState | None) -> RecordSessionStore:
        """The earlier turns' entries (without their prompt snapshots: a turn's first run
        records the prompt and tools of its own options), then those the turn's earlier runs
        wrote (kept whole: the CLI finishes a deferred call with the run's own snapshot)."""
        store = RecordSessionStore()
        session_id = state.session_id if state else history.session_id
        if session_id is None:
            return store
        earlier = {sub: without_prompt_snapshots(part) for sub, part in history.entries.items()}
        for subpath, entries in merged(earlier, state.entries if state else {}).items():
            key = SessionKey(project_key=self._project_key(), session_id=session_id)
            if subpath:
                key["subpath"] = subpath
            store.preload(key, entries)
        return store

    def session_options(self, session_settings: Mapping[str, Any]) -> ClaudeAgentOptions:
        """The options `options_for` gives for these settings (the runner's own without it)."""
        if self.options_for is None:
            return self.options
        options = self.options_for(self.options, session_settings)
        _check_options(options)
        if options.mcp_servers is not self.options.mcp_servers:
            raise ValueError(
                "options_for must keep the runner's mcp_servers (its tool Steps run those "
                "tools): change other options, e.g. with dataclasses.replace"
            )
        return options

    def _run_options(
        self, turn: AgentTurnContext, run: _RunSetup, config_dir: str
    ) -> ClaudeAgentOptions:
        given = self.session_options(turn.session_settings)
        env = {**self._own_env, **given.env, "CLAUDE_CONFIG_DIR": config_dir}
        hooks = dict(given.hooks or {})
        hooks["PreToolUse"] = [HookMatcher(hooks=[run.gate.hook]), *hooks.get("PreToolUse", [])]
        options = dataclasses.replace(
            given,
            env=env,
            hooks=hooks,
            # The SDK probes a store's optional methods at runtime; this one has the required
            # ones and list_subkeys.
            session_store=cast(SessionStore, run.store),
            session_store_flush="eager",
            resume=run.session_id,
            include_partial_messages=True,
        )
        if turn.interaction_mode == "planning":
            return self._planning_options(options, run)
        return self._with_tools(options, run, turn)

    def _with_tools(
        self, options: ClaudeAgentOptions, run: _RunSetup, turn: AgentTurnContext
    ) -> ClaudeAgentOptions:
        """The SDK MCP servers' copies that hand over recorded results, the tool sources'
        servers, and the built-ins' server when the session enables built-ins (allowed without
        asking)."""
        servers = options.mcp_servers
        if not isinstance(servers, Mapping):
            if run.offered:  # tool sources beside such servers were refused at __init__
                raise ValueError(SERVERS_AS_PATH)
            return options
        added: dict[str, McpServerConfig] = {
            **servers,
            **self._tools.serving(run.handed),
            **run.sources.serving(run.handed, turn),
        }
        if not run.offered:
            return dataclasses.replace(options, mcp_servers=added)
        added[built_ins.SERVER_KEY] = built_ins.server(run.offered, run.handed)
        allowed = [*options.allowed_tools, *map(built_ins.model_name, run.offered)]
        return dataclasses.replace(options, mcp_servers=added, allowed_tools=allowed)

    @staticmethod
    def _planning_options(options: ClaudeAgentOptions, run: _RunSetup) -> ClaudeAgentOptions:
        """A planning turn's run offers only `write_todos`: no CLI tool, no other server."""
        servers: dict[str, McpServerConfig] = {}
        if run.offered:
            servers[built_ins.SERVER_KEY] = built_ins.server(run.offered, run.handed)
        return dataclasses.replace(
            options,
            tools=[],
            mcp_servers=servers,
            allowed_tools=[built_ins.model_name(name) for name in run.offered],
        )


@dataclasses.dataclass(frozen=True)
class _RunSetup:
    """What one CLI run of a turn is set up with."""

    session_id: str | None
    store: RecordSessionStore
    gate: WriteGate
    handed: RecordedResults
    offered: tuple[str, ...]
    sources: SourceListing


def _check_options(options: ClaudeAgentOptions) -> None:
    if options.session_store is not None or options.resume is not None:
        raise ValueError(
            "ClaudeAgentRunner keeps the transcript itself: leave session_store and resume "
            "unset in the options"
        )
    if options.continue_conversation:
        raise ValueError(
            "ClaudeAgentRunner resumes by session ID: continue_conversation must be off"
        )


def _prompt(turn: AgentTurnContext, texts: Sequence[str]) -> AsyncIterator[dict[str, Any]]:
    """The turn's prompt: one user message of text blocks, the plan note (when the turn has
    one) first, then each user text since the last completed turn."""
    note = build_plan_note(turn.plan, turn.interaction_mode)
    blocks = [{"type": "text", "text": text} for text in ([note] if note else []) + [*texts]]
    return _one_message({"role": "user", "content": blocks})


async def _one_message(message: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    yield {"type": "user", "session_id": "", "message": message, "parent_tool_use_id": None}


async def _run(
    prompt: str | AsyncIterator[dict[str, Any]], options: ClaudeAgentOptions, recorder: TurnRecorder
) -> None:
    """One CLI run, each message observed as it comes."""
    try:
        async for message in query(prompt=prompt, options=options):
            recorder.observe(message)
            recorder.turn.heartbeat()
    except ClaudeSDKError as error:
        raise HarnessTurnError(f"Claude Code turn failed: {error}") from error


def _answer(recorder: TurnRecorder) -> ResultMessage:
    """The run's result; an error result, or none, fails the attempt."""
    result = recorder.result
    if result is None or result.is_error:
        detail = (result.errors or [result.result or result.subtype]) if result else ["no result"]
        raise HarnessTurnError(f"Claude Code turn failed: {'; '.join(map(str, detail))}")
    return result


def _deferred(
    result: ResultMessage,
    gate: WriteGate,
    entries: dict[str, list[Any]],
    messages: list[FrameworkMessage],
    recorder: TurnRecorder,
) -> ToolCallsRequested:
    """The run stopped before a write call: the call becomes a tool Step, and what the run
    wrote waits in the run state for the run that resumes it."""
    if not gate.deferred:
        raise HarnessTurnError(
            "Claude Code deferred a tool call the runner does not run as a tool Step "
            f"({result.deferred_tool_use.name if result.deferred_tool_use else 'unknown'}); "
            'only the runner\'s own hook may answer "defer"'
        )
    state = RunState(result.session_id, entries, [asdict(message) for message in messages])
    return ToolCallsRequested(
        framework_run_state=state.to_json(), tool_calls=gate.deferred, usage=recorder.usage()
    )
