/**
 * The per-session history cache of `serveRunners`: each session's stored messages with their
 * parsed framework items, so a call carries only the messages appended since the last one,
 * and each stored message is parsed once per process.
 *
 * Stored messages never change and are numbered without gaps, so a session's cache is one
 * contiguous run of sequences. A call's `history` says which sequences its turn sees; when
 * the cache does not reach back to what the body leaves out, the call is answered with
 * `need_history` and sent again with more messages.
 */

import type { AgentFrameworkRunner, AgentMessage } from "./runner.js";
import { messageFromWire, type WireAgentMessage, type WireHistory } from "./wire.js";

/** One cached stored message and what the runner made of its framework item. */
export interface CachedMessage {
  message: AgentMessage;
  item: unknown;
}

/** A contiguous run of a session's messages: `entries[i]` has sequence `start + i`. */
export interface SessionHistory {
  start: number;
  entries: CachedMessage[];
}

/** A bounded map from session to its cached history, least recently used evicted first. */
export class HistoryCache {
  private readonly sessions = new Map<string, SessionHistory>();

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 0) {
      throw new RangeError(`historyCacheSessions must be a non-negative integer, not ${limit}`);
    }
  }

  get(key: string): SessionHistory | undefined {
    const value = this.sessions.get(key);
    if (value !== undefined) {
      this.sessions.delete(key);
      this.sessions.set(key, value);
    }
    return value;
  }

  set(key: string, value: SessionHistory): void {
    this.sessions.delete(key);
    if (this.limit === 0) return;
    this.sessions.set(key, value);
    while (this.sessions.size > this.limit) {
      const oldest = this.sessions.keys().next();
      if (oldest.done) break;
      this.sessions.delete(oldest.value);
    }
  }

  get size(): number {
    return this.sessions.size;
  }
}

/** How a call's history is made: from the cache through `reuseThrough`, then the body's. */
export type HistoryPlan =
  | { kind: "need_history"; afterSequence: number }
  | {
      kind: "ready";
      first: number;
      last: number;
      cached: CachedMessage[];
      sent: AgentMessage[];
    };

/** Whether the cache and the body together hold every message of `history`; pure, so the
 *  answer (`need_history` or `accepted`) comes before any parsing. */
export function planHistory(
  cached: SessionHistory | undefined,
  history: WireHistory,
  wireMessages: readonly WireAgentMessage[],
): HistoryPlan {
  const first = history.first_sequence;
  const last = history.last_sequence;
  if (last === 0 || last < first) return { kind: "ready", first, last: 0, cached: [], sent: [] };
  const after = Math.min(Math.max(history.messages_after, first - 1), last);
  const held = heldThrough(cached, first, last);
  if (after > held) return { kind: "need_history", afterSequence: held };
  const reused = cached ? slice(cached, first, after) : [];
  const bySequence = new Map(wireMessages.map((m) => [m.sequence, m]));
  const sent: AgentMessage[] = [];
  for (let sequence = after + 1; sequence <= last; sequence++) {
    const message = bySequence.get(sequence);
    if (message === undefined) throw new HistoryError(sequence, history);
    sent.push(messageFromWire(message));
  }
  return { kind: "ready", first, last, cached: reused, sent };
}

/** The body leaves out a message its own range says it carries. */
export class HistoryError extends Error {
  constructor(sequence: number, history: WireHistory) {
    super(
      `the body's messages lack sequence ${sequence} of history ` +
        `${history.first_sequence}..${history.last_sequence} after ${history.messages_after}`,
    );
  }
}

/** The highest sequence through which the cache holds every message from `first` on
 *  (`first - 1` when it holds none of them), at most `last`. */
function heldThrough(cached: SessionHistory | undefined, first: number, last: number): number {
  if (cached === undefined || cached.start > first) return first - 1;
  const end = cached.start + cached.entries.length - 1;
  return Math.max(first - 1, Math.min(end, last));
}

function slice(cached: SessionHistory, from: number, through: number): CachedMessage[] {
  return cached.entries.slice(from - cached.start, through - cached.start + 1);
}

/** The neutral user item's text, or null for any other item. */
export function userText(frameworkItem: string): string | null {
  if (!frameworkItem.includes('"user_text"')) return null;
  let value: unknown;
  try {
    value = JSON.parse(frameworkItem);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null) return null;
  const { kind, text } = value as { kind?: unknown; text?: unknown };
  return kind === "user_text" && typeof text === "string" ? text : null;
}

/** Parses the messages the body sent (each once: an item the cache already holds under the
 *  same sequence and text is reused) and stores the session's new run of messages. */
export function completeHistory(
  cache: HistoryCache,
  key: string,
  plan: Extract<HistoryPlan, { kind: "ready" }>,
  runner: AgentFrameworkRunner<unknown>,
): CachedMessage[] {
  const previous = cache.get(key);
  const fresh = plan.sent.map((message) => reuseOrParse(previous, message, runner));
  const entries = [...plan.cached, ...fresh];
  if (plan.last === 0) return entries;
  cache.set(key, { start: plan.first, entries: extend(entries, previous, plan.last) });
  return entries;
}

function reuseOrParse(
  previous: SessionHistory | undefined,
  message: AgentMessage,
  runner: AgentFrameworkRunner<unknown>,
): CachedMessage {
  const known = previous?.entries[message.sequence - previous.start];
  if (known !== undefined && known.message.frameworkItem === message.frameworkItem) return known;
  const text = userText(message.frameworkItem);
  const item =
    text === null ? runner.parseItem(message.frameworkItem) : runner.buildUserMessage(text);
  return { message, item };
}

/** The cached messages after `last` stay when they continue the run without a gap. */
function extend(
  entries: CachedMessage[],
  previous: SessionHistory | undefined,
  last: number,
): CachedMessage[] {
  if (previous === undefined || previous.start > last + 1) return entries;
  return [...entries, ...previous.entries.slice(last + 1 - previous.start)];
}
