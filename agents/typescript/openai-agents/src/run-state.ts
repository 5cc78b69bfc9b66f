/**
 * The framework run state a turn stores while it waits for its tool calls: the SDK's
 * `RunState` JSON (`state.toJSON()`, restored with `RunState.fromString`) in an envelope.
 *
 * The run's original input is the stored history the turn started from. Stored messages never
 * change, so the envelope leaves that input out (`history_count` says how many items it held)
 * and the next model Step puts the history back from the stored messages: the run state only
 * grows with the turn, not with the session. When the SDK rewrote the input during the turn (a
 * handoff's `inputFilter`), the state keeps the input it rewrote. The application's context
 * object is left out too: each Step builds it again.
 */
import type { AgentInputItem, RunState } from "@openai/agents";
import { BAD_RUN_STATE } from "./texts.js";

const VERSION = 1;

interface Envelope {
  version: number;
  run_state: Record<string, unknown>;
  history_count: number | null;
}

// biome-ignore lint/suspicious/noExplicitAny: a run state of any context and agent.
type AnyRunState = RunState<any, any>;

/** The envelope of `state`, which started from `history`. */
export function dumpRunState(state: AnyRunState, history: readonly AgentInputItem[]): string {
  const json = withoutAppContext(state.toJSON() as Record<string, unknown>);
  const unchanged = JSON.stringify(json.originalInput) === JSON.stringify(history);
  const envelope: Envelope = {
    version: VERSION,
    run_state: unchanged ? { ...json, originalInput: [] } : json,
    history_count: unchanged ? history.length : null,
  };
  return JSON.stringify(envelope);
}

/**
 * The state without the application's context object: every Step builds it again (the runner's
 * `context` option), so none is stored; the context's approvals stay.
 */
function withoutAppContext(json: Record<string, unknown>): Record<string, unknown> {
  const context = json.context;
  if (typeof context !== "object" || context === null) {
    return json;
  }
  return { ...json, context: { ...context, context: {} } };
}

/** The SDK run state text of an envelope, with the history put back in its input. */
export function loadRunState(text: string, history: readonly AgentInputItem[]): string {
  let envelope: Partial<Envelope>;
  try {
    envelope = JSON.parse(text) as Partial<Envelope>;
  } catch {
    throw new Error(BAD_RUN_STATE);
  }
  if (envelope.version !== VERSION || typeof envelope.run_state !== "object" || envelope.run_state === null) {
    throw new Error(BAD_RUN_STATE);
  }
  const state = envelope.run_state;
  return JSON.stringify(envelope.history_count === null ? state : { ...state, originalInput: history });
}

/** How many items the run's input held: the turn's own items follow them in its history. */
export function inputLength(state: AnyRunState): number {
  const input = state._originalInput;
  return typeof input === "string" ? 1 : input.length;
}
