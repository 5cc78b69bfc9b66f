"""The canary of _compat.py: every private member of ADK (and LiteLLM through it) the adapter
uses, as it uses it, on ADK's real classes. An upgrade that renames or moves one fails here, by
name, before a Worker misbehaves."""

from __future__ import annotations

import inspect

from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.models import lite_llm
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.mcp_tool.mcp_tool import McpTool

from dex_agents_google_adk import _compat


def parameters(function: object) -> list[str]:
    return list(inspect.signature(function).parameters)  # type: ignore[arg-type]


def plus(a: int, b: int) -> int:
    """Adds."""
    return a + b


def test_a_lite_llm_copy_passes_more_request_arguments() -> None:
    model = lite_llm.LiteLlm(model="openai/gpt-4.1", temperature=0.5)
    copied = _compat.with_request_args(model, {"max_retries": 0})
    assert copied._additional_args == {"temperature": 0.5, "max_retries": 0}
    assert model._additional_args == {"temperature": 0.5}  # the original is unchanged
    assert callable(lite_llm._ensure_litellm_imported)


def test_a_tool_says_it_was_made_to_require_confirmation() -> None:
    assert _compat.made_to_require_confirmation(FunctionTool(plus, require_confirmation=True))
    assert not _compat.made_to_require_confirmation(FunctionTool(plus))
    assert "self._require_confirmation = require_confirmation" in inspect.getsource(
        McpTool.__init__
    )


def test_an_mcp_tool_keeps_its_session_manager_where_it_is_replaced() -> None:
    assert "self._mcp_session_manager = mcp_session_manager" in inspect.getsource(McpTool.__init__)


def test_a_plugin_reaches_the_invocation_and_its_branch_events() -> None:
    assert "self._invocation_context" in inspect.getsource(CallbackContext)
    assert parameters(InvocationContext._get_events) == [
        "self",
        "current_invocation",
        "current_branch",
    ]


def test_a_tools_declaration_is_the_method_a_custom_tool_overrides() -> None:
    assert parameters(BaseTool._get_declaration) == ["self"]
    declaration = _compat.declaration_of(FunctionTool(plus))
    assert declaration is not None and declaration.name == "plus"
