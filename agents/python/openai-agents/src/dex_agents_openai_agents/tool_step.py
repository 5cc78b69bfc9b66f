"""Runs the application's real function tool inside its own dex-agents tool Step."""

from __future__ import annotations

import copy
import json
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    ItemHelpers,
    ModelBehaviorError,
    RunConfig,
    ToolInputGuardrailData,
    ToolOutputGuardrailData,
)
from agents.tool import invoke_function_tool, set_function_tool_failure_error_function
from agents.tool_context import ToolContext
from dex_agents.runner import DeferredToolExecution, ToolExecutionError, ToolExecutionResult
from openai.types.responses import ResponseFunctionToolCall

from . import _compat


def _raising_copy(tool: FunctionTool) -> FunctionTool:
    """The tool without the SDK's default error formatter, so an exception fails the Step and
    the effect table decides about a retry. A formatter the application chose stays."""
    if not _compat.uses_default_failure_error_function(tool):
        return tool
    return set_function_tool_failure_error_function(copy.copy(tool), None)


def _tool_call(execution: DeferredToolExecution) -> ResponseFunctionToolCall:
    record = execution.tool_call
    return ResponseFunctionToolCall(
        type="function_call",
        call_id=record.tool_call_id,
        name=record.tool_name,
        arguments=record.arguments,
    )


async def _input_guardrail_message(
    tool: FunctionTool, context: ToolContext[Any], agent: Agent[Any]
) -> str | None:
    for guardrail in tool.tool_input_guardrails or ():
        output = await guardrail.run(ToolInputGuardrailData(context=context, agent=agent))
        if output.behavior["type"] == "raise_exception":
            raise ToolExecutionError(f"tool input guardrail {guardrail.get_name()} tripped")
        if output.behavior["type"] == "reject_content":
            return output.behavior["message"]
    return None


async def _output_guardrail_message(
    tool: FunctionTool, context: ToolContext[Any], agent: Agent[Any], output: Any
) -> str | None:
    for guardrail in tool.tool_output_guardrails or ():
        verdict = await guardrail.run(
            ToolOutputGuardrailData(context=context, agent=agent, output=output)
        )
        if verdict.behavior["type"] == "raise_exception":
            raise ToolExecutionError(f"tool output guardrail {guardrail.get_name()} tripped")
        if verdict.behavior["type"] == "reject_content":
            return verdict.behavior["message"]
    return None


def _model_visible_output(tool: FunctionTool, call: ResponseFunctionToolCall, output: Any) -> str:
    """The text the SDK would send the model for this output."""
    item = ItemHelpers.tool_call_output_item(
        call,
        output,
        output_json_schema=tool.output_json_schema,
        output_type_adapter=_compat.output_type_adapter(tool),
    )
    converted = item["output"]
    if isinstance(converted, str):
        return converted
    texts = [
        text
        for part in converted
        if isinstance(part, dict)
        and part.get("type") == "input_text"
        and isinstance(text := part.get("text"), str)
    ]
    if texts and len(texts) == len(converted):
        # Text parts only (an MCP tool's text content): the model reads their text.
        return "\n".join(texts)
    return json.dumps(converted, ensure_ascii=False)


async def run_function_tool(
    agent: Agent[Any],
    tool: FunctionTool,
    execution: DeferredToolExecution,
    context: Any,
    run_config: RunConfig | None,
) -> ToolExecutionResult:
    """Tool input guardrails, the tool with its timeout, then tool output guardrails."""
    call = _tool_call(execution)
    tool_context: ToolContext[Any] = ToolContext(
        context=context,
        tool_name=call.name,
        tool_call_id=call.call_id,
        tool_arguments=call.arguments,
        tool_call=call,
        agent=agent,
        run_config=run_config,
    )
    rejection = await _input_guardrail_message(tool, tool_context, agent)
    if rejection is not None:
        return ToolExecutionResult(output=rejection)
    try:
        output = await invoke_function_tool(
            function_tool=_raising_copy(tool), context=tool_context, arguments=call.arguments
        )
    except ModelBehaviorError as error:
        # The SDK validates the arguments before the function runs, so nothing took effect.
        raise ToolExecutionError(str(error)) from error
    rejection = await _output_guardrail_message(tool, tool_context, agent, output)
    if rejection is not None:
        return ToolExecutionResult(output=rejection)
    return ToolExecutionResult(output=_model_visible_output(tool, call, output))
