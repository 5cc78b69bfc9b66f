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
/** Starts a failed record's error when the tool never ran, so calling it again is safe. */
export const TOOL_CALL_NOT_RUN_ERROR_PREFIX = "the tool did not run, so it is safe to call again";
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

/** A tool source's tool called outside a tool Step, where no idempotency key exists. */
export function sourceToolOutsideStepText(toolName: string): string {
  return (
    `tool ${JSON.stringify(toolName)} of a tool source runs only in its tool Step, which ` +
    "gives the call its idempotency key"
  );
}

// The built-in tools as the model sees them, and the plan note (dex_agents.builtins).
export const PLAN_NOTE_PLANNING_LINE =
  "This turn only plans: write or revise the plan with write_todos, and do not do or claim " +
  "any of its tasks. The user reviews the plan before it runs.";
export const NO_PLAN_YET = "[Dex] There is no plan yet.";

/** A Chat Completions function tool definition. */
export interface FunctionToolDefinition {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

function functionTool(
  name: string,
  description: string,
  parameters: Record<string, unknown>,
): FunctionToolDefinition {
  return { type: "function", function: { name, description, parameters } };
}

export const BUILT_IN_TOOL_NAMES = ["ask_user", "durable_wait", "write_todos"] as const;
export type BuiltInToolName = (typeof BUILT_IN_TOOL_NAMES)[number];
export const TODO_STATUSES = ["pending", "in_progress", "completed"] as const;

export const BUILT_IN_TOOL_DEFINITIONS: Readonly<Record<BuiltInToolName, FunctionToolDefinition>> =
  {
    ask_user: functionTool(
      "ask_user",
      "Ask the user a question and wait for the answer. Use it when only the user can give " +
        "the information or decision you need. The answer may take a long time to arrive.",
      {
        type: "object",
        properties: {
          question: { type: "string", description: "The question to ask." },
          choices: {
            type: "array",
            items: { type: "string" },
            description: "Answers the user can pick from.",
          },
          allows_free_text: {
            type: "boolean",
            description: "Whether the user may answer with any text (default true).",
          },
        },
        required: ["question"],
        additionalProperties: false,
      },
    ),
    durable_wait: functionTool(
      "durable_wait",
      "Wait for a number of seconds before going on, for example before checking again on " +
        "work that takes time. The wait survives restarts.",
      {
        type: "object",
        properties: {
          seconds: { type: "number", description: "How long to wait, in seconds." },
          reason: { type: "string", description: "Why you wait, shown to the user." },
        },
        required: ["seconds", "reason"],
        additionalProperties: false,
      },
    ),
    write_todos: functionTool(
      "write_todos",
      "Write the plan: the complete list of tasks, which replaces the previous one. Keep each " +
        "task's status current. An empty list clears the plan.",
      {
        type: "object",
        properties: {
          todos: {
            type: "array",
            items: {
              type: "object",
              properties: {
                content: { type: "string", description: "What the task does." },
                status: { type: "string", enum: [...TODO_STATUSES] },
              },
              required: ["content", "status"],
              additionalProperties: false,
            },
          },
        },
        required: ["todos"],
        additionalProperties: false,
      },
    ),
  };

// Compaction (dex_agents.texts): the summary as the model sees it, and the summary request.
export const CONTEXT_SUMMARY_PREFIX = "[Dex] Summary of the earlier conversation:";
export const CONTEXT_SUMMARY_INSTRUCTION =
  "Summarize the conversation above for the assistant that continues it without seeing it. " +
  "Keep the user's goals, requests and preferences, the decisions made, the facts learned, " +
  "the tool calls made and their results, and the work still open. Fold in the earlier " +
  "summary when there is one. Write only the summary.";

/** The first line of a summary request that had to leave out the oldest messages. */
export function contextLeftOutNote(count: number): string {
  if (count === 1) {
    return "[Dex] 1 earlier message did not fit in this request and is left out.";
  }
  return `[Dex] ${count} earlier messages did not fit in this request and are left out.`;
}

// Stepwise (dex_agents.stepwise): the turn errors and refusals of the core's own loop.
export const MAX_CONSECUTIVE_CONTINUATIONS = 8;
export const CONTINUATION_LIMIT_ERROR =
  `decide_turn_continuation continued the turn more than ${MAX_CONSECUTIVE_CONTINUATIONS} ` +
  "times in a row";

/** planningToolChoice "required" with a model that cannot be forced to call a tool. */
export function forcedChoiceProblem(model: string): string {
  return (
    "planningToolChoice 'required' needs a model that accepts a forced tool choice, " +
    `and ${model} does not (supportsForcedToolChoice returned false)`
  );
}

// The MCP tool source (dex_agents.texts): a call's failures as the model reads them.
/** The task (or the call) asked for input the session cannot ask the user. */
export function mcpInputNotSupported(tool: string, server: string, requested: string): string {
  return (
    `MCP tool ${tool} of server ${server} asked for input the session cannot ask the user ` +
    `(${requested}), so the call was stopped`
  );
}
export function mcpTaskFailed(tool: string, server: string, error: string): string {
  return `MCP tool ${tool} of server ${server} failed in its task: ${error}`;
}
export function mcpTaskCancelled(tool: string, server: string): string {
  return `MCP tool ${tool} of server ${server}: its task was cancelled`;
}
export function mcpTaskNoResult(tool: string, server: string): string {
  return `MCP tool ${tool} of server ${server} completed its task without a result`;
}
/** An isError result without any text. */
export function mcpToolFailed(tool: string, server: string): string {
  return `MCP tool ${tool} of server ${server} failed`;
}
