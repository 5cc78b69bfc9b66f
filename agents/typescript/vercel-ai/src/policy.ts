/**
 * The effect of each tool, as its own metadata declares it.
 *
 * An AI SDK tool carries `metadata`, a JSON object the SDK keeps off the model's request. A tool
 * declares its effect there (`durableTool` writes it), or through MCP-style annotations
 * (`readOnlyHint`: read, `idempotentHint`: idempotent write). The session's `ToolPolicy` for the
 * tool's name still wins, and a tool that declares nothing gets the session's default effect.
 */
import type { Tool } from "ai";
import type { ToolEffect, ToolPolicy } from "./dex.js";

const EFFECTS: ReadonlySet<string> = new Set(["read", "idempotent_write", "non_idempotent_write", "unclassified"]);

/** What a tool may declare about its effect. */
export interface DurableToolOptions {
  /** What a call does: a `read` is retried, a `non_idempotent_write` runs at most once. */
  effect: ToolEffect;
  /** Ask the user before each call; unset uses the effect's default. */
  requiresApproval?: boolean;
}

/** The tool, unchanged but for its metadata, which now declares `options`. */
export function durableTool<T extends Tool>(tool: T, options: DurableToolOptions): T {
  const declared: Record<string, string | boolean> = { effect: options.effect };
  if (options.requiresApproval !== undefined) {
    declared.requiresApproval = options.requiresApproval;
  }
  return { ...tool, metadata: { ...tool.metadata, ...declared } };
}

/** The effect and approval the tool declares; null where it declares nothing. */
export function declaredPolicy(tool: Tool | undefined): Required<ToolPolicy> {
  const metadata = tool?.metadata ?? {};
  const effect = metadata.effect;
  const approval = metadata.requiresApproval;
  const legacyApproval = tool?.needsApproval === true ? true : null;
  return {
    effect: typeof effect === "string" && EFFECTS.has(effect) ? (effect as ToolEffect) : hintedEffect(metadata),
    requiresApproval: typeof approval === "boolean" ? approval : legacyApproval,
  };
}

function hintedEffect(metadata: Readonly<Record<string, unknown>>): ToolEffect | null {
  const annotations = metadata.annotations;
  if (typeof annotations !== "object" || annotations === null) {
    return null;
  }
  const hints = annotations as { readOnlyHint?: unknown; idempotentHint?: unknown };
  if (hints.readOnlyHint === true) {
    return "read";
  }
  return hints.idempotentHint === true ? "idempotent_write" : null;
}
