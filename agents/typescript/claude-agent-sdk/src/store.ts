/**
 * A `SessionStore` whose transcript lives in the session's own records.
 *
 * The runner fills it, before a CLI run, with the entries recorded by the earlier turns (and the
 * turn's earlier runs), and reads back after the run the entries the CLI appended during it.
 * Nothing is kept elsewhere, so a Worker on another host resumes the same transcript from the
 * database. One store serves one CLI run: the project key is not part of its key.
 */
import type { SessionKey, SessionStore, SessionStoreEntry } from "@anthropic-ai/claude-agent-sdk";

/** Entries by subpath: "" is the main transcript, others are subagents'. */
export type Entries = Record<string, SessionStoreEntry[]>;

const keyOf = (key: SessionKey): string => `${key.sessionId}\u0000${key.subpath ?? ""}`;

/** Transcript entries in memory, per (session, subpath), in append order. Entries with a `uuid`
 *  are idempotent (a repeated batch adds nothing); `appended()` is what the CLI added. */
export class RecordSessionStore implements SessionStore {
  readonly #entries = new Map<string, SessionStoreEntry[]>();
  readonly #uuids = new Map<string, Set<string>>();
  readonly #appended = new Map<string, { subpath: string; entries: SessionStoreEntry[] }>();

  /** Entries recorded earlier: loadable, not part of `appended()`. */
  preload(sessionId: string, entries: Entries): void {
    for (const [subpath, part] of Object.entries(entries)) {
      this.#add({ projectKey: "", sessionId, ...(subpath ? { subpath } : {}) }, part, false);
    }
  }

  async append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    this.#add(key, entries, true);
  }

  async load(key: SessionKey): Promise<SessionStoreEntry[] | null> {
    const entries = this.#entries.get(keyOf(key));
    return entries === undefined ? null : structuredClone(entries);
  }

  async listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]> {
    const prefix = `${key.sessionId}\u0000`;
    return [...this.#entries.keys()]
      .filter((k) => k.startsWith(prefix) && k !== prefix)
      .map((k) => k.slice(prefix.length));
  }

  /** The entries appended since the store was made, by subpath. */
  appended(): Entries {
    const found: Entries = {};
    for (const { subpath, entries } of this.#appended.values()) {
      found[subpath] = [...(found[subpath] ?? []), ...entries];
    }
    return found;
  }

  #add(key: SessionKey, entries: readonly SessionStoreEntry[], record: boolean): void {
    const k = keyOf(key);
    const stored = this.#entries.get(k) ?? [];
    this.#entries.set(k, stored);
    const uuids = this.#uuids.get(k) ?? new Set<string>();
    this.#uuids.set(k, uuids);
    for (const entry of entries) {
      if (typeof entry.uuid === "string") {
        if (uuids.has(entry.uuid)) continue;
        uuids.add(entry.uuid);
      }
      const kept = JSON.parse(JSON.stringify(entry)) as SessionStoreEntry;
      stored.push(kept);
      if (record) {
        const appended = this.#appended.get(k) ?? { subpath: key.subpath ?? "", entries: [] };
        this.#appended.set(k, appended);
        appended.entries.push(kept);
      }
    }
  }
}

/** Transcript entries of several runs, in order, by subpath. */
export function merged(...parts: Entries[]): Entries {
  const entries: Entries = {};
  for (const part of parts) {
    for (const [subpath, items] of Object.entries(part)) {
      entries[subpath] = [...(entries[subpath] ?? []), ...items];
    }
  }
  return entries;
}
