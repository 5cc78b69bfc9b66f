"""AgentSessionFlow: a runner registered under a Flow type, with the session's options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from .policy import TOOL_EFFECTS
from .runner import (
    AgentFrameworkRunner,
    BuiltInToolName,
    ContextCompactionRunner,
    ToolPolicy,
    UnfinishedTurnMessageBuilder,
)
from .store import DEFAULT_EVENT_CAPACITY_BYTES
from .types import ToolEffect

# Less would trim the events of one model answer while it streams.
MIN_EVENT_CAPACITY_BYTES = 64 * 1024


@dataclass(frozen=True)
class CompactionPolicy:
    context_window_tokens: int
    trigger_ratio: float = 0.85
    retained_ratio: float = 0.3


@dataclass(frozen=True)
class AgentSessionOptions:
    """Per-Flow options. Every field has the contract's default."""

    tool_policies: Mapping[str, ToolPolicy] = field(default_factory=dict)
    default_tool_effect: ToolEffect = "unclassified"
    # How long an approval or question waits before it is answered for the user; None waits
    # without a deadline.
    interrupt_deadline: timedelta | None = None
    built_in_tools: tuple[BuiltInToolName, ...] = ()
    plan_mode_enabled: bool = False
    compaction: CompactionPolicy | None = None
    max_durable_wait: timedelta | None = None
    retained_message_limit: int | None = 1_000
    model_call_timeout: timedelta = timedelta(minutes=15)
    tool_call_timeout: timedelta = timedelta(minutes=15)
    # The bytes of events a session keeps: each commit past it trims the oldest events (see
    # store.trim_events); a resume token older than the oldest kept event is refused.
    event_capacity_bytes: int = DEFAULT_EVENT_CAPACITY_BYTES

    def __post_init__(self) -> None:
        if self.event_capacity_bytes < MIN_EVENT_CAPACITY_BYTES:
            raise ValueError(
                f"event_capacity_bytes must be at least {MIN_EVENT_CAPACITY_BYTES} (64 KiB), "
                f"not {self.event_capacity_bytes}"
            )
        if self.default_tool_effect not in TOOL_EFFECTS:
            raise ValueError(
                f"default_tool_effect must be one of {', '.join(TOOL_EFFECTS)}, "
                f"not {self.default_tool_effect!r}"
            )
        for name, policy in self.tool_policies.items():
            if policy.effect is not None and policy.effect not in TOOL_EFFECTS:
                raise ValueError(f"tool_policies[{name!r}].effect {policy.effect!r} is unknown")


class AgentSessionFlow:
    """Registers a framework runner as a Flow type a Worker can host.

    flow = AgentSessionFlow(PydanticAiRunner(agent), flow_type="TriageAgent")
    """

    def __init__(
        self,
        runner: AgentFrameworkRunner[Any],
        *,
        flow_type: str,
        options: AgentSessionOptions | None = None,
    ) -> None:
        if not flow_type.strip():
            raise ValueError("flow_type must not be blank")
        self.runner = runner
        self.flow_type = flow_type
        self.options = options or AgentSessionOptions()
        self._check_capabilities()

    def _check_capabilities(self) -> None:
        options = self.options
        if options.plan_mode_enabled:
            if "write_todos" not in options.built_in_tools:
                raise ValueError("plan_mode_enabled needs the write_todos built-in tool")
            if not getattr(self.runner, "supports_plan_mode", False):
                raise ValueError(
                    "plan_mode_enabled needs a runner whose supports_plan_mode is True"
                )
        if options.compaction is not None and not isinstance(self.runner, ContextCompactionRunner):
            raise ValueError(
                "AgentSessionOptions.compaction needs a runner that implements "
                "estimate_input_tokens, select_compaction_cutoff and summarize_context"
            )

    @property
    def builds_unfinished_turn_messages(self) -> bool:
        return isinstance(self.runner, UnfinishedTurnMessageBuilder)

    def __repr__(self) -> str:
        return (
            f"AgentSessionFlow(flow_type={self.flow_type!r}, runner={type(self.runner).__name__})"
        )
