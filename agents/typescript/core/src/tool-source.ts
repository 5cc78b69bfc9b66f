/**
 * ToolSource: tools a runner takes from outside the application's code (MCP servers), the
 * TypeScript twin of the Python core's `dex_agents.tool_source`.
 *
 * A runner lists a source's tools before its model call, offers their definitions, asks the
 * source for each call's DeferredToolCall (policy and toolSourceReference), and hands the tool
 * Step's execution to the source that owns the record. Nothing here imports an MCP SDK: the
 * MCP source is the `@superdurable/dex-agents/mcp` subpath.
 */

import {
  type AgentToolCall,
  type AgentToolCallRecord,
  currentToolExecution,
  type DeferredToolCall,
  type DeferredToolExecution,
  type DeferredToolOutcome,
  type ResolvedToolPolicy,
  type ToolEffect,
  ToolExecutionError,
  type ToolPolicy,
  type ToolTaskCancellation,
  type ToolTaskPoll,
  type ToolTaskPollOutcome,
} from "./runner.js";
import { type FunctionToolDefinition, sourceToolOutsideStepText } from "./texts.js";

/** The session's policy resolution (`AgentTurnContext.resolveToolPolicy`). */
export type PolicyResolver = (
  toolName: string,
  frameworkEffect?: ToolEffect | null,
  frameworkRequiresApproval?: boolean | null,
) => ResolvedToolPolicy;

/** A tool of a source, described without any framework: what a framework adapter turns into
 *  its own tool. */
export interface SourceTool {
  /** The name the model sees (for MCP, `<server>__<tool>`). */
  readonly name: string;
  readonly description: string;
  /** The arguments' JSON Schema. */
  readonly parameters: Record<string, unknown>;
  /** The effect the tool declares (for MCP, from its annotations), or null. */
  readonly effect: ToolEffect | null;
}

export interface ToolSource {
  /** Lists the tools once and caches them; `refresh` lists again. */
  listTools(options?: { refresh?: boolean }): Promise<readonly SourceTool[]>;
  /** Chat Completions definitions of the listed tools. */
  toolDefinitions(): FunctionToolDefinition[];
  hasTool(name: string): boolean;
  deferredToolCall(
    toolCallId: string,
    name: string,
    argumentsText: string,
    resolve?: PolicyResolver,
  ): DeferredToolCall;
  /** Whether this source runs the record's call (from its reference, with no listing). */
  owns(record: AgentToolCall | AgentToolCallRecord): boolean;
  /** Runs the call. A source may return ToolTaskStarted only when
   *  `call.supportsToolTasks` is set, and then also implements pollToolTask. */
  executeDeferredToolCall(call: DeferredToolExecution): Promise<DeferredToolOutcome>;
  pollToolTask?(poll: ToolTaskPoll): Promise<ToolTaskPollOutcome>;
  cancelToolTask?(cancellation: ToolTaskCancellation): Promise<void>;
}

/**
 * A tool request was sent and no result came back (a lost connection, a server that died): it
 * fails the tool Step's attempt, so the call's effect decides what follows (CallTool tries
 * again, CallSingleAttemptTool records outcome_unknown). An adapter that turns a tool's errors
 * into failures the model reads lets this one through.
 */
export class ToolCallInterruptedError extends Error {
  override name = "ToolCallInterruptedError";
}

/** Whether `value` is a ToolSource rather than a tool. */
export function isToolSource(value: unknown): value is ToolSource {
  const source = value as Partial<ToolSource> | null;
  return (
    typeof source === "object" &&
    source !== null &&
    typeof source.listTools === "function" &&
    typeof source.executeDeferredToolCall === "function" &&
    typeof source.deferredToolCall === "function"
  );
}

/**
 * A source whose tools a framework adapter offers as its own framework's tools: each becomes a
 * tool that calls `callListedTool` with the idempotency key of the adapter's tool Step
 * (`callSourceTool`), declaring `sourceToolPolicy` as its effect and approval.
 */
export interface CallableToolSource {
  listTools(options?: { refresh?: boolean }): Promise<readonly SourceTool[]>;
  /** The source's explicit policies by tool name; they win over what a tool declares. */
  readonly policies: Readonly<Record<string, ToolPolicy>>;
  /** Calls listed tool `name`, the key passed to the server; the result's text. */
  callListedTool(
    name: string,
    args: Record<string, unknown>,
    idempotencyKey: string,
    signal?: AbortSignal,
  ): Promise<string>;
}

/** What a source's tool declares: the source's explicit policy for it, else its own effect
 *  (for MCP, its annotations), and no approval of its own (the effect's default). The
 *  session's tool_policies still win over both. */
export function sourceToolPolicy(source: CallableToolSource, tool: SourceTool): ToolPolicy {
  const explicit = Object.hasOwn(source.policies, tool.name)
    ? source.policies[tool.name]
    : undefined;
  return {
    effect: explicit?.effect || tool.effect,
    requiresApproval: explicit?.requiresApproval ?? null,
  };
}

/** Calls listed tool `name` of `source` from inside the tool Step an adapter's tool runs in,
 *  with that Step's idempotency key. Outside a tool Step there is no key, so the call is
 *  refused with the text the model reads (`sourceToolOutsideStepText`). */
export async function callSourceTool(
  source: CallableToolSource,
  name: string,
  args: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<string> {
  const execution = currentToolExecution();
  if (execution === undefined) {
    throw new ToolExecutionError(sourceToolOutsideStepText(name));
  }
  return await source.callListedTool(name, args, execution.idempotencyKey, signal);
}
