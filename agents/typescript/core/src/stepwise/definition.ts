/**
 * AgentDefinition: an agent in plain TypeScript, for StepwiseRunner: instructions, tools and
 * a model, with the hooks the Python core's AgentDefinition has.
 */

import type { AgentToolCall, InteractionMode } from "../runner.js";
import type { ToolSource } from "../tool-source.js";
import type { ModelClient } from "./model.js";
import type { Tool } from "./tools.js";

export { CONTINUATION_LIMIT_ERROR, MAX_CONSECUTIVE_CONTINUATIONS } from "../texts.js";

/** What an instructions function sees: the turn's settings and mode. */
export interface InstructionContext {
  sessionSettings: Readonly<Record<string, unknown>>;
  interactionMode: InteractionMode;
  turnId: string;
}

/** Continue the turn with another model call; `message` goes to the model as user text. */
export interface TurnContinuation {
  kind: "continue";
  message: string;
}

export function continueTurn(message: string): TurnContinuation {
  if (!message.trim()) throw new RangeError("a TurnContinuation's message must not be blank");
  return { kind: "continue", message };
}

/**
 * What decideTurnContinuation sees. `after` is "answer" when the model answered without tool
 * calls (`answer` holds its text), and "tool_calls" when the results of its tool calls are in
 * (`toolCalls` holds their final records), before the next model call.
 */
export interface TurnContinuationContext {
  after: "answer" | "tool_calls";
  turnId: string;
  interactionMode: InteractionMode;
  sessionSettings: Readonly<Record<string, unknown>>;
  consecutiveContinuations: number;
  answer: string | null;
  toolCalls: readonly AgentToolCall[];
}

/** null goes on as usual; "end" after tool calls ends the turn with their results. */
export type TurnContinuationDecision = TurnContinuation | "end" | null | undefined;

export type Instructions = string | ((context: InstructionContext) => string);

export interface AgentDefinition {
  name: string;
  /** Text, or a function of the turn's session settings and mode. */
  instructions: Instructions;
  /** Tools, and tool sources such as the `/mcp` subpath's McpToolSource, whose tools are
   *  listed before the first model call (a name the agent's own tools or an enabled built-in
   *  use wins over a source's). */
  tools?: readonly (Tool | ToolSource)[];
  /** The model of every call, unless `resolveModel` chooses per call. */
  model?: ModelClient;
  /** Chooses the model of each call from the turn's session settings. */
  resolveModel?: (sessionSettings: Readonly<Record<string, unknown>>) => ModelClient;
  decideTurnContinuation?: (
    context: TurnContinuationContext,
  ) => TurnContinuationDecision | Promise<TurnContinuationDecision>;
  /** "required" forces write_todos on a planning turn's first model call. */
  planningToolChoice?: "auto" | "required";
  /** Bounds each response, and sizes the compaction summary request. */
  maxOutputTokens?: number;
}

/** The definition's problems, as an error that says what to fix. */
export function checkDefinition(definition: AgentDefinition): void {
  if (!definition.name?.trim()) throw new RangeError("AgentDefinition.name must not be blank");
  if (definition.model === undefined && definition.resolveModel === undefined) {
    throw new RangeError("AgentDefinition needs a model or resolveModel");
  }
  const choice = definition.planningToolChoice ?? "auto";
  if (choice !== "auto" && choice !== "required") {
    throw new RangeError("planningToolChoice must be 'auto' or 'required'");
  }
  if (definition.maxOutputTokens !== undefined && !(definition.maxOutputTokens > 0)) {
    throw new RangeError("maxOutputTokens must be positive");
  }
}
