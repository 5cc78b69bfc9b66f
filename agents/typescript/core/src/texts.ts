/**
 * Every text this package writes that a person or the engine reads, in one place, and the
 * engine's fixed texts that the UI conversion recognizes in stored tool results (the same
 * values as the Python core's `texts.py`; a test compares them with the Python ones).
 */

// serveRunners' refusals (JSON error bodies, before any runner is called).
export const UNAUTHORIZED = "missing or wrong runner token: send 'Authorization: Bearer <token>'";
export const unknownFlowType = (flowType: string, served: readonly string[]): string =>
  `no runner is served for flow type ${JSON.stringify(flowType)} (served: ${served.join(", ")})`;
export const unknownMethod = (method: string): string =>
  `no runner method ${JSON.stringify(method)}`;
export const unsupportedMethod = (method: string, flowType: string): string =>
  `the runner of ${JSON.stringify(flowType)} does not implement ${method}`;
export const wrongHttpMethod = (method: string, expected: string): string =>
  `${method} is not allowed here; use ${expected}`;
export const badBody = (problem: string): string => `the request body is not valid: ${problem}`;

// The engine's fixed texts (dex_agents.texts and dex_agents.builtins).
export const TOOL_CALL_FAILED_PREFIX = "The tool call failed: ";
export const OUTCOME_UNKNOWN_TEXT =
  "The tool call's outcome is unknown: it stopped without returning a result, so it may " +
  "or may not have taken effect. It will not be retried automatically.";
export const DEFAULT_REJECTION_TEXT = "The user rejected this tool call.";
export const APPROVAL_DEADLINE_PASSED = "approval deadline passed";
export const QUESTION_DEADLINE_PASSED = "question deadline passed";
export const QUESTION_DECLINED = "The user declined to answer.";
export const TURN_FAILURE_NOTE_HEADER =
  "[Dex] The previous turn failed after these tool calls ran:";
export const STEERED_NOTE_HEADER =
  "[Dex] The user steered the conversation after these tool calls ran:";
export const CANCELLED_NOTE_HEADER =
  "[Dex] The user stopped the previous turn after these tool calls ran:";
export const STEERED_REJECTION =
  '{"status":"cancelled","reason":"superseded_by_steered_user_message"}';
export const TURN_CANCELLED_REJECTION = '{"status":"cancelled","reason":"turn_cancelled_by_user"}';
export const PLANNING_TURN_REJECTION =
  "The tool call was not run: a planning turn can only call write_todos.";
