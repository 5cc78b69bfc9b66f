"""The session settings as the graph's run `context` (LangGraph's runtime context).

Every RunModel Step runs the graph with `context=` the session's settings (or what the
runner's `context_factory` makes of them), so the application's middleware reads them where a
LangGraph application reads its context: `request.runtime.context` in `wrap_model_call` and
`@dynamic_prompt`, `runtime.context` in node hooks, `ToolRuntime.context` in tools. A Step
reads the settings of its own start, so `AgentClient.update_session_settings` applies at the
next model call of a running session.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from dex_agents.errors import DexAgentsError
from pydantic import BaseModel, ValidationError

ContextFactory = Callable[[Mapping[str, Any]], Any]


class SessionSettingsContextError(DexAgentsError, ValueError):
    """The session settings cannot become the agent's `context_schema`."""


def run_context(
    settings: Mapping[str, Any], schema: type[Any] | None, factory: ContextFactory | None
) -> Any:
    """The run's context: `factory(settings)`, else a copy of the settings (None when there
    are none and the agent has no `context_schema`, as without the runner); a dict becomes the
    graph's `context_schema` when that is a dataclass or a Pydantic model (as LangGraph would
    coerce it), here, so a mismatch is a clear error."""
    if factory is None and not settings and schema is None:
        return None
    value = factory(settings) if factory is not None else dict(settings)
    if not isinstance(value, dict) or schema is None or not inspect.isclass(schema):
        return value
    if not (dataclasses.is_dataclass(schema) or issubclass(schema, BaseModel)):
        return value
    try:
        return schema(**value)
    except (TypeError, ValidationError) as error:
        raise SessionSettingsContextError(
            f"the session settings {sorted(value)} do not make the agent's context_schema "
            f"{schema.__name__} ({error}); make the session's settings fit it, or pass "
            "LangGraphRunner(..., context_factory=...) to build the context from them"
        ) from error
