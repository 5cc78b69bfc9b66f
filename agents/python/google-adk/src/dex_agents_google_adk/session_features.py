"""What the session offers beyond the agent's own tools, given to ADK its own way.

- Built-in tools (ask_user, durable_wait, write_todos) are gated tools on the runner's copy of
  the agent, declared as the core defines them; ADK never runs them: the gate defers each call
  and the core runs it in its built-in Step.
- The runner's plugin (`SessionFeaturesPlugin`, first among the app's plugins) shapes every
  model request of a Step: it offers only the built-ins the session enables (only
  write_todos in a planning turn; an enabled built-in wins over an agent tool of its name),
  and sets `llm_request.model` from `resolve_model(session_settings)` when the runner has one.
- Session settings are copied into the Step's session state (never stored): the whole mapping
  under `SESSION_SETTINGS_STATE_KEY`, and each setting whose name is an identifier under
  `temp:dex_setting_<name>`, so an `InstructionProvider`, an instruction template
  (`{temp:dex_setting_instructions?}`), callbacks and tools read them.
- The context summary and the plan note are user events put into the Step's session: the
  summary before the stored history, the plan note after it, just before the turn's message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

from dex_agents.builtins import BUILT_IN_TOOL_DEFINITIONS, BUILT_IN_TOOL_NAMES, build_plan_note
from dex_agents.runner import AgentTurnContext
from dex_agents.texts import CONTEXT_SUMMARY_PREFIX as SUMMARY_PREFIX
from google.adk.agents import InvocationContext
from google.adk.agents.callback_context import CallbackContext
from google.adk.events import Event
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.sessions import Session
from google.adk.tools.base_tool import BaseTool
from google.genai import types

from ._compat import current_branch_events, declaration_of, invocation_of
from .events import user_content
from .gate import GatedTool
from .step_boundary import ModelCallCounter

SESSION_SETTINGS_STATE_KEY: Final = "temp:dex_session_settings"
"""The session state key of the session settings (a dict) in every Step of the session."""

SETTING_STATE_PREFIX: Final = "temp:dex_setting_"
"""Each setting whose name is an identifier is also in state as `temp:dex_setting_<name>`."""

NOTE_INVOCATION_ID: Final = "dex-agents-context"
"""The invocation ID of the summary and plan note events (no invocation of the agent)."""

ModelResolver = Callable[[Mapping[str, Any]], str | None]
"""`resolve_model(session_settings)`: the model name of the next model call, None to keep the
agent's."""


class _Declared(BaseTool):
    """A tool that is only a declaration: the built-in as the core defines it."""

    def __init__(self, definition: Mapping[str, Any]) -> None:
        function = definition["function"]
        super().__init__(name=function["name"], description=function["description"])
        self.declaration = types.FunctionDeclaration(
            name=function["name"],
            description=function["description"],
            parameters_json_schema=function["parameters"],
        )

    def _get_declaration(self) -> types.FunctionDeclaration:
        return self.declaration


def built_in_gates() -> list[GatedTool]:
    """One gate per built-in, in the core's order; the runner's copy of the agent has them
    after its own tools (so ADK's tool lookup of a shared name finds a gate either way)."""
    return [GatedTool(_Declared(BUILT_IN_TOOL_DEFINITIONS[n])) for n in BUILT_IN_TOOL_NAMES]


@dataclass(frozen=True)
class StepFeatures:
    """What the session offers in this Step: read by the plugin while ADK runs the Step."""

    enabled_built_ins: tuple[str, ...]
    planning: bool
    session_settings: Mapping[str, Any]
    model_calls: ModelCallCounter = field(default_factory=ModelCallCounter)


_STEP: ContextVar[StepFeatures | None] = ContextVar("dex_agents_adk_step", default=None)


@contextmanager
def step_features(turn: AgentTurnContext) -> Iterator[StepFeatures]:
    """Makes the turn's features the plugin's for the duration of the Step's run."""
    features = StepFeatures(
        tuple(turn.enabled_built_in_tools),
        turn.interaction_mode == "planning",
        turn.session_settings,
    )
    token = _STEP.set(features)
    try:
        yield features
    finally:
        _STEP.reset(token)


class SessionFeaturesPlugin(BasePlugin):
    """Ends the Step at a branch's second model call (`step_boundary.py`), makes no model call
    after a tool result that skips summarization, offers the session's tools and picks the
    session's model on each model request."""

    def __init__(self, built_ins: Sequence[BaseTool], resolve_model: ModelResolver | None) -> None:
        super().__init__(name="dex_agents_session_features")
        self._built_ins = {tool.name: tool for tool in built_ins}
        self._resolve_model = resolve_model

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        features = _STEP.get()
        if features is None:
            return None
        invocation = invocation_of(callback_context)
        if summarization_skipped(invocation):
            return LlmResponse()  # no content: ADK records nothing and the agent's run ends
        await features.model_calls.start(invocation.branch)
        if self._resolve_model is not None:
            model = self._resolve_model(features.session_settings)
            if model:
                llm_request.model = model
        self._offer(features, llm_request)
        return None

    def _offer(self, features: StepFeatures, llm_request: LlmRequest) -> None:
        """Keeps the declarations the Step offers (see `offered`), in order."""
        declarations = [
            declaration
            for tool in llm_request.config.tools or []
            if isinstance(tool, types.Tool)
            for declaration in tool.function_declarations or []
        ]
        kept = [d for d in declarations if self._offered(features, d)]
        others: list[Any] = []
        if not features.planning:
            others = [
                t
                for t in llm_request.config.tools or []
                if not (isinstance(t, types.Tool) and t.function_declarations)
            ]
        tools = ([types.Tool(function_declarations=kept)] if kept else []) + others
        llm_request.config.tools = tools or None

    def _offered(self, features: StepFeatures, declaration: types.FunctionDeclaration) -> bool:
        """A planning turn offers only write_todos; otherwise an enabled built-in's own
        declaration replaces any other of its name, and a disabled one is not offered."""
        name = declaration.name or ""
        built_in = self._built_ins.get(name)
        is_built_in = built_in is not None and declaration is declaration_of(built_in)
        enabled = name in features.enabled_built_ins
        if features.planning:
            return is_built_in and name == "write_todos" and enabled
        return is_built_in == enabled if built_in is not None else True


def summarization_skipped(invocation: InvocationContext) -> bool:
    """Whether the agent's last event in its branch is its tool results, one of which skips
    summarization (`exit_loop`, a tool that sets `skip_summarization`).

    ADK ends an agent's run after such a result, but not when the result comes from resuming a
    confirmed call (ADK's `request_confirmation` processor, which the gates use): its flow
    goes on to the model call. Every tool of a gated agent resumes that way, so the plugin
    ends the run there instead, as ADK does for a tool that runs in the model call's step."""
    events = current_branch_events(invocation)
    if not events:
        return False
    last = events[-1]
    return (
        last.author == invocation.agent.name
        and bool(last.get_function_responses())
        and bool(last.actions.skip_summarization)
    )


def apply_session_settings(session: Session, settings: Mapping[str, Any]) -> None:
    """Copies the settings into the session's state (not into its events: nothing stores
    them), so instructions, callbacks and tools read the turn's settings."""
    session.state[SESSION_SETTINGS_STATE_KEY] = dict(settings)
    for name, value in settings.items():
        if name.isidentifier():
            session.state[f"{SETTING_STATE_PREFIX}{name}"] = value


def context_event(text: str) -> Event:
    """A user event the runner adds to the Step's session (never stored)."""
    return Event(author="user", invocation_id=NOTE_INVOCATION_ID, content=user_content(text))


def summary_text(turn: AgentTurnContext) -> str | None:
    summary = turn.context_summary
    return None if summary is None else f"{SUMMARY_PREFIX}\n{summary.text}"


def with_context(turn: AgentTurnContext, history: list[Event]) -> list[Event]:
    """The stored history behind the summary, then the plan note (before the turn's
    messages)."""
    events: list[Event] = []
    summary = summary_text(turn)
    if summary is not None:
        events.append(context_event(summary))
    events += history
    note = build_plan_note(turn.plan, turn.interaction_mode)
    if note is not None:
        events.append(context_event(note))
    return events
