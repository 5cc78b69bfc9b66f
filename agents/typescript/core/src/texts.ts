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

// A tool Step's refusals, the same in every TypeScript adapter.
/** A tool Step for a tool the runner does not have (renamed or removed since the call). */
export function unknownToolText(toolName: string, known: readonly string[]): string {
  const list = known.length > 0 ? known.join(", ") : "none";
  return `there is no tool named ${JSON.stringify(toolName)}; the tools are: ${list}`;
}

/** The model's arguments are not JSON. */
export function argumentsNotJsonText(toolName: string): string {
  return `the arguments for tool ${JSON.stringify(toolName)} are not valid JSON`;
}

/** The model's arguments do not fit the tool's input schema. */
export function invalidArgumentsText(toolName: string, detail: string): string {
  return `invalid arguments for tool ${JSON.stringify(toolName)}: ${detail}`;
}

/** The tool has no `execute`: it is answered outside the runner, which a tool Step cannot do. */
export function notExecutableText(toolName: string): string {
  return `tool ${JSON.stringify(toolName)} has no execute function, so a tool Step cannot run it`;
}
