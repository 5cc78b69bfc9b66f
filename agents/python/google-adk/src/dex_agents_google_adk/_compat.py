"""Every private member of Google ADK (and of LiteLLM through it) the adapter reads or writes,
in one place.

ADK has no public way to: copy a `LiteLlm` with other request arguments (`_additional_args`:
the client retries turned off, the warm-up's mocked response), import LiteLLM as its first
call does (`_ensure_litellm_imported`), read whether a tool was made with
`require_confirmation=True` (`_require_confirmation`), give an `McpTool` a session manager that
adds the idempotency key (`_mcp_session_manager`), reach the invocation from a plugin's
callback context (`_invocation_context`), list the events of the current branch
(`InvocationContext._get_events`), or read a tool's declaration (`BaseTool._get_declaration`,
the method a custom tool overrides). `google-adk` is pinned to a minor version for this reason,
and tests/test_compat.py checks each member as used here, so an upgrade that changes one fails
there, by name.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events.event import Event
from google.adk.models import lite_llm
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.mcp_tool.mcp_tool import McpTool
from google.genai import types


def with_request_args(model: lite_llm.LiteLlm, extra: Mapping[str, Any]) -> lite_llm.LiteLlm:
    """A copy of the model whose every request also passes `extra` to LiteLLM."""
    copied = model.model_copy()
    copied._additional_args = {**model._additional_args, **extra}
    return copied


def import_litellm_as_adk_does() -> None:
    """ADK's own import of LiteLLM (in production mode: no `.env` loaded)."""
    ensure = getattr(lite_llm, "_ensure_litellm_imported", None)
    if callable(ensure):
        ensure()


def made_to_require_confirmation(tool: BaseTool) -> bool:
    """Whether the tool was made with `require_confirmation=True` (a callable is not True)."""
    return getattr(tool, "_require_confirmation", None) is True


def with_session_manager(tool: McpTool, wrap: Any) -> McpTool:
    """A copy of the MCP tool whose sessions come from `wrap(the tool's session manager)`."""
    copied = copy.copy(tool)
    copied._mcp_session_manager = wrap(tool._mcp_session_manager)
    return copied


def invocation_of(callback_context: CallbackContext) -> InvocationContext:
    """The invocation a plugin's callback runs in."""
    return callback_context._invocation_context


def current_branch_events(invocation: InvocationContext) -> list[Event]:
    """The events of the current invocation in the current branch, in order."""
    return invocation._get_events(current_invocation=True, current_branch=True)


def declaration_of(tool: BaseTool) -> types.FunctionDeclaration | None:
    """The function declaration the tool offers the model."""
    return tool._get_declaration()
