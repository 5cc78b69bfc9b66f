/**
 * The effect and approval each function tool declares.
 *
 * A tool declares its effect with `durableTool(tool, { effect })`, kept beside the tool (the SDK
 * sends a function tool's every field to the model, so none of them can hold it). Its own
 * `needsApproval` counts as well: a tool that asks for approval of a call (`needsApproval:
 * true`, or a policy function that returns true for the call's arguments) requires approval.
 * The session's `ToolPolicy` for the tool's name still wins, and a tool that declares nothing
 * gets the session's default effect.
 */
import { RunContext } from "@openai/agents";
import type { ToolEffect } from "./dex.js";
import type { AnyFunctionTool } from "./gating.js";

/** What a tool may declare about its effect. */
export interface DurableToolOptions {
  /** What a call does: a `read` is retried, a `non_idempotent_write` runs at most once. */
  effect: ToolEffect;
  /** Ask the user before each call; unset uses the effect's default (or the tool's needsApproval). */
  requiresApproval?: boolean;
}

const declarations = new WeakMap<object, DurableToolOptions>();

/** The tool itself, now declaring `options` to the runner. */
export function durableTool<T extends object>(tool: T, options: DurableToolOptions): T {
  declarations.set(tool, { ...options });
  return tool;
}

export interface DeclaredPolicy {
  effect: ToolEffect | null;
  requiresApproval: boolean | null;
}

/** What `tool` declares for a call with `argumentsText`; null where it declares nothing. */
export async function declaredPolicy(
  tool: AnyFunctionTool | undefined,
  argumentsText: string,
  callId: string,
  context: unknown,
): Promise<DeclaredPolicy> {
  if (tool === undefined) {
    return { effect: null, requiresApproval: null };
  }
  const declared = declarations.get(tool);
  const requiresApproval =
    declared?.requiresApproval ?? ((await asksForApproval(tool, argumentsText, callId, context)) || null);
  return { effect: declared?.effect ?? null, requiresApproval };
}

async function asksForApproval(
  tool: AnyFunctionTool,
  argumentsText: string,
  callId: string,
  context: unknown,
): Promise<boolean> {
  let input: unknown;
  try {
    input = JSON.parse(argumentsText === "" ? "{}" : argumentsText);
  } catch {
    return false;
  }
  try {
    return (await tool.needsApproval(new RunContext(context), input, callId)) === true;
  } catch {
    return true; // a policy that fails asks the user
  }
}
