"""The canary of _compat.py: every private member of ADK (and LiteLLM through it) the adapter
uses, as it uses it, on ADK's real classes. An upgrade that renames or moves one fails here, by
name, before a Worker misbehaves."""

from __future__ import annotations

import inspect

from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.llm_agent import LlmAgent
from google.adk.flows.llm_flows.auto_flow import AutoFlow
from google.adk.flows.llm_flows.base_llm_flow import BaseLlmFlow
from google.adk.flows.llm_flows.single_flow import SingleFlow
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


def no_target(invocation: InvocationContext) -> str | None:
    return None


def test_an_agents_flow_and_resumption_run_the_transfers_of_resumed_calls() -> None:
    """The members `run_transfers_of_resumed_calls` overrides and calls, as it uses them; the
    agent keeps its class (a subclass of it) and its flow ADK's (AutoFlow with sub-agents,
    SingleFlow without any transfer)."""
    assert isinstance(inspect.getattr_static(LlmAgent, "_llm_flow"), property)
    assert parameters(BaseLlmFlow._preprocess_async) == [
        "self",
        "invocation_context",
        "llm_request",
    ]
    assert parameters(BaseLlmFlow._call_llm_async) == [
        "self",
        "invocation_context",
        "llm_request",
        "model_response_event",
    ]
    assert parameters(BaseLlmFlow._get_agent_to_run) == ["self", "invocation_context", "agent_name"]
    assert parameters(LlmAgent._get_subagent_to_resume) == ["self", "ctx"]
    assert parameters(InvocationContext._find_matching_function_call) == [
        "self",
        "function_response_event",
    ]
    assert "self._get_subagent_to_resume(ctx)" in inspect.getsource(LlmAgent._run_async_impl)
    assert "self._llm_flow.run_async(ctx)" in inspect.getsource(LlmAgent._run_async_impl)

    class Custom(LlmAgent):
        pass

    router = Custom(name="router", sub_agents=[LlmAgent(name="helper")])
    _compat.run_transfers_of_resumed_calls(router, no_target, no_target)
    assert isinstance(router, Custom) and type(router) is not Custom
    assert isinstance(router._llm_flow, AutoFlow)
    assert router.sub_agents[0].parent_agent is router
    alone = LlmAgent(
        name="alone", disallow_transfer_to_parent=True, disallow_transfer_to_peers=True
    )
    _compat.run_transfers_of_resumed_calls(alone, no_target, no_target)
    assert isinstance(alone._llm_flow, SingleFlow) and not isinstance(alone._llm_flow, AutoFlow)
