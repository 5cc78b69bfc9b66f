/**
 * The effect of each Mastra tool, as the tool itself declares it.
 *
 * A Mastra tool declares what it does the MCP way, in `mcp.annotations` (`readOnlyHint`: read,
 * `idempotentHint`: idempotent write, `readOnlyHint: false` or `destructiveHint`: a write that
 * must not run twice), and asks for approval with its own `requireApproval: true`.
 * `durableTool(tool, { effect, requiresApproval })` states the effect exactly (any of the four,
 * `unclassified` too) in `mcp._meta["dex-agents"]`. The session's `ToolPolicy` for the tool's
 * name still wins, and a tool that declares nothing gets the session's default effect.
 */
import type { ToolEffect, ToolPolicy } from "./dex.js";

const EFFECTS: ReadonlySet<string> = new Set(["read", "idempotent_write", "non_idempotent_write", "unclassified"]);

/** Where `durableTool` writes its declaration, in the tool's MCP `_meta`. */
export const META_KEY = "dex-agents";

/** What a tool may declare about its effect. */
export interface DurableToolOptions {
  /** What a call does: a `read` is retried, a `non_idempotent_write` runs at most once. */
  effect: ToolEffect;
  /** Ask the user before each call; unset uses the effect's default. */
  requiresApproval?: boolean;
}

/** The parts of a Mastra tool (a `createTool` result, or any tool an Agent takes) read here. */
export interface DeclaringTool {
  mcp?: { annotations?: Record<string, unknown>; _meta?: Record<string, unknown> } | undefined;
  requireApproval?: unknown;
}

/** A copy of the tool (same class, same `execute`) whose MCP metadata declares `options`. */
export function durableTool<T extends object>(tool: T, options: DurableToolOptions): T {
  const declared: Record<string, string | boolean> = { effect: options.effect };
  if (options.requiresApproval !== undefined) {
    declared.requires_approval = options.requiresApproval;
  }
  const mcp = (tool as DeclaringTool).mcp ?? {};
  const copy = Object.assign(Object.create(Object.getPrototypeOf(tool) as object | null) as T, tool);
  (copy as DeclaringTool).mcp = { ...mcp, _meta: { ...mcp._meta, [META_KEY]: declared } };
  return copy;
}

/** The effect and approval the tool declares; null where it declares nothing. */
export function declaredPolicy(tool: DeclaringTool | undefined): Required<ToolPolicy> {
  const meta = tool?.mcp?._meta?.[META_KEY];
  const declared = typeof meta === "object" && meta !== null ? (meta as Record<string, unknown>) : {};
  const effect = declared.effect;
  const approval = declared.requires_approval;
  return {
    effect: typeof effect === "string" && EFFECTS.has(effect) ? (effect as ToolEffect) : hintedEffect(tool),
    requiresApproval: typeof approval === "boolean" ? approval : tool?.requireApproval === true ? true : null,
  };
}

function hintedEffect(tool: DeclaringTool | undefined): ToolEffect | null {
  const hints = tool?.mcp?.annotations ?? {};
  if (hints.readOnlyHint === true) {
    return "read";
  }
  if (hints.idempotentHint === true) {
    return "idempotent_write";
  }
  return hints.readOnlyHint === false || hints.destructiveHint === true ? "non_idempotent_write" : null;
}
