/**
 * The Claude Code transcript as the session's records carry it.
 *
 * The turn's final assistant message carries, in its framework item, the transcript entries the
 * CLI wrote during the turn (by subpath), the session ID the CLI resumes by, and the turn's cost.
 * The whole transcript is the entries of all earlier turns, in order. A turn stopped before a
 * write call keeps what its runs wrote so far in its run state.
 */
import type { SessionStoreEntry } from "@anthropic-ai/claude-agent-sdk";
import type { AgentMessage, FrameworkMessage } from "./dex.js";
import type { Entries } from "./store.js";

export const TURN_KIND = "claude_agent_sdk.turn";
export const USER_KIND = "claude_agent_sdk.user";

/** What a turn's final message keeps of its CLI runs. */
export interface TurnTranscript {
  kind: typeof TURN_KIND;
  session_id: string;
  entries: Entries;
  cost_usd: number | null;
  result: { num_turns: number; stop_reason: string | null };
}

/** The transcript part a stored message carries, or null for any other message. */
export function parseTurn(frameworkItem: string): TurnTranscript | null {
  let data: unknown;
  try {
    data = JSON.parse(frameworkItem);
  } catch {
    return null;
  }
  if (typeof data !== "object" || data === null || (data as { kind?: unknown }).kind !== TURN_KIND) return null;
  return data as TurnTranscript;
}

/** What the stored messages say about the CLI session before this turn. */
export interface History {
  sessionId: string | null;
  entries: Entries;
  /** The user texts since the last completed turn, in order: the turn's prompt. */
  prompts: string[];
}

export function historyOf(messages: readonly AgentMessage[]): History {
  let sessionId: string | null = null;
  let entries: Entries = {};
  let prompts: string[] = [];
  for (const message of messages) {
    const turn = message.role === "assistant" ? parseTurn(message.frameworkItem) : null;
    if (turn !== null) {
      sessionId = turn.session_id;
      entries = mergeInto(entries, turn.entries);
      prompts = [];
    } else if (message.role === "user" && message.text) {
      prompts.push(message.text);
    }
  }
  return { sessionId, entries, prompts };
}

function mergeInto(entries: Entries, part: Entries): Entries {
  for (const [subpath, items] of Object.entries(part)) {
    entries[subpath] = [...(entries[subpath] ?? []), ...items];
  }
  return entries;
}

/** A turn stopped for a deferred write call: what its CLI runs wrote so far. */
export interface RunState {
  session_id: string;
  entries: Entries;
  messages: FrameworkMessage[];
}

export function loadRunState(text: string | null): RunState | null {
  return text ? (JSON.parse(text) as RunState) : null;
}

/**
 * The entries without the CLI's `prompt_snapshot` attachments, each entry that pointed at one
 * linked to that one's parent instead. The CLI records the system prompt and tools of a
 * session's first request in such an attachment and, once resumed, sends the recorded ones
 * instead of the run's own options: without them each turn's first run records its own.
 */
export function withoutPromptSnapshots(entries: readonly SessionStoreEntry[]): SessionStoreEntry[] {
  const parents = new Map<unknown, unknown>();
  for (const entry of entries) {
    if (isPromptSnapshot(entry)) parents.set(entry.uuid, entry.parentUuid);
  }
  if (parents.size === 0) return [...entries];
  return entries.filter((entry) => !isPromptSnapshot(entry)).map((entry) => relinked(entry, parents));
}

function isPromptSnapshot(entry: SessionStoreEntry): boolean {
  const attachment = entry.attachment as { type?: unknown } | undefined;
  return typeof attachment === "object" && attachment !== null && attachment.type === "prompt_snapshot";
}

function relinked(entry: SessionStoreEntry, parents: Map<unknown, unknown>): SessionStoreEntry {
  const changed: Record<string, unknown> = {};
  for (const link of ["parentUuid", "leafUuid"]) {
    let target = entry[link];
    if (!parents.has(target)) continue;
    while (parents.has(target)) target = parents.get(target);
    changed[link] = target;
  }
  return Object.keys(changed).length > 0 ? { ...entry, ...changed } : entry;
}
