"""Model-visible texts and limits, exactly as the contract fixes them (docs/contract.md)."""

from __future__ import annotations

# What the model sees for a failed call, followed by its error.
TOOL_CALL_FAILED_PREFIX = "The tool call failed: "
TOOL_CALL_NOT_RUN_ERROR_PREFIX = "the tool did not run, so it is safe to call again"
OUTCOME_UNKNOWN_TEXT = (
    "The tool call's outcome is unknown: it stopped without returning a result, so it may "
    "or may not have taken effect. It will not be retried automatically."
)
DEFAULT_REJECTION_TEXT = "The user rejected this tool call."
# A call the runner held back behind a sequential one, when the turn ended first.
TOOL_CALL_HELD_NOT_RUN = "The tool call was not run: the turn ended before its turn came."
APPROVAL_DEADLINE_PASSED = "approval deadline passed"
QUESTION_DEADLINE_PASSED = "question deadline passed"
QUESTION_DECLINED = "The user declined to answer."
TURN_FAILURE_NOTE_HEADER = "[Dex] The previous turn failed after these tool calls ran:"
STEERED_NOTE_HEADER = "[Dex] The user steered the conversation after these tool calls ran:"
CANCELLED_NOTE_HEADER = "[Dex] The user stopped the previous turn after these tool calls ran:"
# The context summary (compaction) as the model sees it: first after the system instructions.
CONTEXT_SUMMARY_PREFIX = "[Dex] Summary of the earlier conversation:"
# The last line of a summary request (after the transcript it summarizes).
CONTEXT_SUMMARY_INSTRUCTION = (
    "Summarize the conversation above for the assistant that continues it without seeing it. "
    "Keep the user's goals, requests and preferences, the decisions made, the facts learned, "
    "the tool calls made and their results, and the work still open. Fold in the earlier "
    "summary when there is one. Write only the summary."
)


NOTE_FOOTER = "Do not repeat these tool calls unless the user asks again."
STEERED_REJECTION = '{"status":"cancelled","reason":"superseded_by_steered_user_message"}'
TURN_CANCELLED_REJECTION = '{"status":"cancelled","reason":"turn_cancelled_by_user"}'
CANCELLED_TASK_ERROR = (
    "the turn was cancelled while the tool's task was running; the task may have taken effect"
)
# MCP tasks (dex_agents.mcp): errors the model sees for a task that did not end with a result.
MCP_INPUT_NOT_SUPPORTED = (
    "MCP tool {tool} of server {server} asked for input the session cannot ask the user "
    "({requested}), so the call was stopped"
)
MCP_TASK_FAILED = "MCP tool {tool} of server {server} failed in its task: {error}"
MCP_TASK_CANCELLED = "MCP tool {tool} of server {server}: its task was cancelled"
MCP_TASK_NO_RESULT = "MCP tool {tool} of server {server} completed its task without a result"
PLAN_APPROVED = (
    "[Dex] The user approved plan revision {revision}. Execute it and keep the task statuses "
    "current with write_todos."
)
UNFINISHED_MESSAGES_REQUIRED = (
    "a runner that sets ToolCallsRequested.new_messages must implement "
    "build_unfinished_turn_messages"
)
SESSION_SETTINGS_INVALID = (
    "dex-agents: the start input's session_settings are not valid session settings"
)

MAX_SESSION_SETTINGS_BYTES = 16_384
SESSION_SETTINGS_SIZE_TOLERANCE_BYTES = 1_024
MAX_INT32 = 2_147_483_647
SNAPSHOT_MESSAGE_LIMIT = 200
LIST_MESSAGES_DEFAULT_LIMIT = 50
LIST_MESSAGES_MAX_LIMIT = 200
# The largest user message the session stores; larger ones are refused before they are queued.
MAX_USER_MESSAGE_BYTES = 1_048_576


def context_left_out_note(count: int) -> str:
    """The first line of a summary request that had to leave out the oldest messages."""
    if count == 1:
        return "[Dex] 1 earlier message did not fit in this request and is left out."
    return f"[Dex] {count} earlier messages did not fit in this request and are left out."
