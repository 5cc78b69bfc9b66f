/**
 * Pi `AgentTool`s as Stepwise tools: each call runs the tool's own `execute` in its own tool
 * Step, with the effect that decides that Step (attempts, approval).
 *
 * Pi's agent loop is not used (it runs tools itself, inside the model's turn); Stepwise defers
 * every call to the engine instead. A call checks its arguments as Pi's loop does
 * (`prepareArguments`, then pi-ai's `validateToolArguments`, with its coercion), runs
 * `execute(toolCallId, params, signal, onUpdate)`, and gives the model the result's text, the
 * `toolResult` message Pi would have built. A tool that throws failed, as Pi's tools are told
 * to report failure: the model reads the error's message, and the call is not tried again.
 * `currentToolExecution()` gives the running call's idempotency key to a tool that writes.
 */

import { AsyncLocalStorage } from "node:async_hooks";
import type { AgentTool, AgentToolResult, AgentToolUpdateCallback } from "@mariozechner/pi-agent-core";
import { type Tool as PiToolSchema, type ToolCall, validateToolArguments } from "@mariozechner/pi-ai";
import {
  type DeferredToolExecution,
  type Tool,
  type ToolEffect,
  ToolExecutionError,
  type ToolExecutionResult,
  texts,
} from "@superdurable/dex-agents";

/** How a tool's calls run: its effect, and whether a call waits for approval (null: the
 *  effect's default). */
export interface PiToolDeclaration {
  effect?: ToolEffect | null;
  requiresApproval?: boolean | null;
}

/** A Pi tool of any parameters (an `AgentTool<T>`), possibly declaring its own effect. Its
 *  `execute` and `prepareArguments` are methods here, so a tool of any `T` fits. */
export interface DurablePiTool extends Omit<AgentTool, "execute" | "prepareArguments">, PiToolDeclaration {
  execute(
    toolCallId: string,
    params: never,
    signal?: AbortSignal,
    onUpdate?: AgentToolUpdateCallback<unknown>,
  ): Promise<AgentToolResult<unknown>>;
  prepareArguments?(args: unknown): unknown;
}

/**
 * The effects of Pi's built-in tools (pi-coding-agent's `createReadTool`, `createBashTool`,
 * ...), by name: the readers are reads, run again freely; the writers change files or run
 * commands, so each call needs approval and runs at most once. Any other tool has no effect
 * here: the session's `default_tool_effect` decides (default `unclassified`).
 */
export const PI_TOOL_EFFECTS: Readonly<Record<string, ToolEffect>> = {
  read: "read",
  grep: "read",
  find: "read",
  ls: "read",
  bash: "non_idempotent_write",
  edit: "non_idempotent_write",
  write: "non_idempotent_write",
};

const executions = new AsyncLocalStorage<DeferredToolExecution>();

/**
 * The tool Step running the current call, inside a Pi tool's `execute` (null outside one):
 * its `idempotencyKey` (stable across the call's attempts: pass it to the service a write goes
 * to), `attempt`, `heartbeat()`. Pi's `execute` gets the call's ID only, so this is how a Pi
 * tool reads the rest, as Python tools read `current_tool_execution()`.
 */
export function currentToolExecution(): DeferredToolExecution | null {
  return executions.getStore() ?? null;
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const EFFECTS: ReadonlySet<string> = new Set(["read", "idempotent_write", "non_idempotent_write", "unclassified"]);

/**
 * A Pi tool as a Stepwise tool. Its effect and approval: `declaration`, else the tool's own
 * `effect` and `requiresApproval`, else `PI_TOOL_EFFECTS` for its name (a session's
 * `tool_policies` still win over all of them, as for any tool).
 */
export function piTool(tool: DurablePiTool, declaration: PiToolDeclaration = {}): Tool {
  if (!TOOL_NAME.test(tool.name)) {
    throw new RangeError(`Pi tool name ${JSON.stringify(tool.name)} must be 1 to 64 letters, digits, '_' or '-'`);
  }
  const effect = declaration.effect ?? tool.effect ?? PI_TOOL_EFFECTS[tool.name] ?? null;
  if (effect !== null && !EFFECTS.has(effect)) {
    throw new RangeError(`Pi tool ${tool.name}: effect must be one of ${[...EFFECTS].join(", ")}`);
  }
  const parameters = tool.parameters as unknown as Record<string, unknown>;
  if (parameters?.type !== "object") {
    throw new RangeError(`Pi tool ${tool.name}: parameters must be an object schema (Type.Object(...))`);
  }
  return {
    name: tool.name,
    effect,
    requiresApproval: declaration.requiresApproval ?? tool.requiresApproval ?? null,
    definition: () => ({
      type: "function",
      function: { name: tool.name, description: tool.description || tool.label || tool.name, parameters },
    }),
    run: (argumentsText, execution) => runTool(tool, argumentsText, execution),
  };
}

/** Every tool of a list (pi-coding-agent's `createCodingTools(cwd)`, say), by `piTool`. */
export function piTools(
  tools: readonly DurablePiTool[],
  declarations: Readonly<Record<string, PiToolDeclaration>> = {},
): Tool[] {
  return tools.map((tool) => piTool(tool, declarations[tool.name]));
}

async function runTool(
  tool: DurablePiTool,
  argumentsText: string,
  execution: DeferredToolExecution,
): Promise<ToolExecutionResult> {
  const params = checkedArguments(tool, argumentsText, execution.toolCall.toolCallId);
  let result: AgentToolResult<unknown>;
  try {
    result = await executions.run(execution, () =>
      tool.execute(execution.toolCall.toolCallId, params as never, execution.cancellationSignal, () =>
        execution.heartbeat(),
      ),
    );
  } catch (error) {
    // Cancelled or cut off: the Step's own outcome, not the tool's.
    if (execution.cancellationSignal.aborted) throw error;
    throw new ToolExecutionError(error instanceof Error ? error.message : String(error));
  }
  return { kind: "tool_execution_result", output: resultText(result), frameworkData: detailsText(result) };
}

function checkedArguments(tool: DurablePiTool, argumentsText: string, id: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(argumentsText || "{}");
  } catch {
    throw new ToolExecutionError(texts.argumentsNotJsonText(tool.name));
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ToolExecutionError(texts.invalidArgumentsText(tool.name, "arguments must be a JSON object"));
  }
  try {
    const prepared = tool.prepareArguments ? tool.prepareArguments(value) : value;
    const call: ToolCall = { type: "toolCall", id, name: tool.name, arguments: prepared as ToolCall["arguments"] };
    return validateToolArguments(tool as PiToolSchema, call);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new ToolExecutionError(texts.invalidArgumentsText(tool.name, validationDetail(message)));
  }
}

/** pi-ai's validation message without its heading and the arguments the model has already:
 *  "text: must have required properties text; ...". */
function validationDetail(message: string): string {
  const [problems = message] = message.split("\n\nReceived arguments");
  const lines = problems.split("\n").filter((line) => !line.startsWith("Validation failed for tool"));
  const detail = lines.map((line) => line.trim().replace(/^- /, "")).filter(Boolean);
  return detail.length > 0 ? detail.join("; ") : message;
}

/** What the model reads: the result's text blocks, an image as a note of what it was. */
export function resultText(result: AgentToolResult<unknown>): string {
  const content = Array.isArray(result?.content) ? result.content : [];
  return content
    .map((block) => (block.type === "text" ? block.text : `[image: ${block.mimeType}, not shown to the model]`))
    .join("\n");
}

/** The result's `details` (Pi's data for logs and UIs) as the call's framework data. */
function detailsText(result: AgentToolResult<unknown>): string | null {
  if (result?.details === undefined || result.details === null) return null;
  try {
    return JSON.stringify({ details: result.details }) ?? null;
  } catch {
    return null;
  }
}
