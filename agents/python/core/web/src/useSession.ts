// One session's state in the viewer: the snapshot and Step history, kept current by the
// session's Server-Sent Events (`/api/sessions/{id}/events`).
import { useCallback, useEffect, useRef, useState } from "react";
import { ApiError, api, messageOf, streamUrl } from "./api";
import { TURN_END_EVENTS, applyEvent, dropTurnTexts, emptyLive, type LiveState } from "./live";
import type { AgentEvent, SessionSnapshot, StepExecution, WorkerInfo } from "./types";

/** `missing`: the server has no such session (404); the viewer stops asking. */
export type Connection = "connecting" | "live" | "reconnecting" | "missing";

export interface SessionData {
  snapshot: SessionSnapshot | null;
  steps: StepExecution[];
  live: LiveState;
  connection: Connection;
  error: string | null;
  /** The Workers, read while the session has not started (to say when none hosts it). */
  workers: WorkerInfo[] | null;
  refresh: () => void;
}

const REFRESH_DELAY_MS = 80;
const REOPEN_DELAY_MS = 1500;

/** Events that change what the snapshot or the Step history shows. */
const REFRESHING = new Set([
  ...TURN_END_EVENTS,
  "turn_started",
  "tool_call_deferred",
  "tool_call_started",
  "tool_call_finished",
  "interrupt_raised",
  "interrupt_resolved",
  "timer_started",
  "plan_updated",
  "tool_task_started",
  "usage_recorded",
  "compaction_started",
  "compaction_finished",
]);

function parseEvent(message: MessageEvent<string>): AgentEvent | null {
  try {
    return JSON.parse(message.data) as AgentEvent;
  } catch {
    return null;
  }
}

export function useSession(sessionId: string): SessionData {
  const [snapshot, setSnapshot] = useState<SessionSnapshot | null>(null);
  const [steps, setSteps] = useState<StepExecution[]>([]);
  const [live, setLive] = useState<LiveState>(emptyLive);
  const [connection, setConnection] = useState<Connection>("connecting");
  const [error, setError] = useState<string | null>(null);
  const [workers, setWorkers] = useState<WorkerInfo[] | null>(null);
  const missing = useRef(false);
  const endedTurns = useRef(new Set<string>());
  const refreshTimer = useRef<number | undefined>(undefined);

  const latestLoad = useRef(0);

  const load = useCallback(async (): Promise<SessionSnapshot | null> => {
    const ended = new Set(endedTurns.current);
    const number = ++latestLoad.current;
    try {
      const [next, history] = await Promise.all([api.snapshot(sessionId), api.steps(sessionId)]);
      if (number !== latestLoad.current) return next; // a later read is under way
      setSnapshot(next);
      setSteps(history);
      setError(null);
      if (next.state === null) setWorkers(await api.workers());
      if (ended.size > 0) setLive((state) => dropTurnTexts(state, ended));
      return next;
    } catch (caught) {
      if (caught instanceof ApiError && caught.status === 404) {
        missing.current = true;
        setConnection("missing");
      }
      setError(messageOf(caught));
      return null;
    }
  }, [sessionId]);

  const refresh = useCallback(() => {
    window.clearTimeout(refreshTimer.current);
    refreshTimer.current = window.setTimeout(() => void load(), REFRESH_DELAY_MS);
  }, [load]);

  useEffect(() => {
    let source: EventSource | null = null;
    let reopenTimer: number | undefined;
    let closed = false;

    const open = async (): Promise<void> => {
      setConnection("connecting");
      const first = await load();
      if (closed) return;
      if (first === null) {
        if (missing.current) return; // no such session: nothing to follow
        reopenTimer = window.setTimeout(() => void open(), REOPEN_DELAY_MS);
        return;
      }
      setLive(emptyLive());
      const activeTurn = first.state?.active_turn_id ?? null;
      const snapshotOffset = Number(first.resume_token);
      // A turn under way streamed text before this snapshot that no message stores yet:
      // read its events again from the start, and keep only that turn's text.
      const after = activeTurn ? "0" : first.resume_token;
      let sessionToken: string | null;
      try {
        sessionToken = await api.sessionToken(sessionId);
      } catch (caught) {
        setError(messageOf(caught));
        reopenTimer = window.setTimeout(() => void open(), REOPEN_DELAY_MS);
        return;
      }
      if (closed) return;
      const path = `sessions/${encodeURIComponent(sessionId)}/events`;
      source = new EventSource(streamUrl(path, { after }, sessionToken));
      source.onopen = () => setConnection("live");
      source.onmessage = (message: MessageEvent<string>) => {
        const event = parseEvent(message);
        if (event === null) return;
        const offset = Number(message.lastEventId);
        const replayed = offset <= snapshotOffset;
        const turnId = event.turn_id ?? "";
        if (replayed && turnId !== activeTurn) return; // the stored messages hold it
        setLive((state) => applyEvent(state, event));
        if (replayed) return;
        if (TURN_END_EVENTS.has(event.type) && event.turn_id) endedTurns.current.add(event.turn_id);
        if (REFRESHING.has(event.type)) refresh();
      };
      source.onerror = () => {
        if (source?.readyState === EventSource.CLOSED) {
          // The server refused the stream (it answers 4xx): start again from a new snapshot.
          source.close();
          setConnection("reconnecting");
          reopenTimer = window.setTimeout(() => void open(), REOPEN_DELAY_MS);
        } else {
          setConnection("reconnecting"); // the browser reconnects with Last-Event-ID
        }
      };
    };

    void open();
    return () => {
      closed = true;
      source?.close();
      window.clearTimeout(reopenTimer);
      window.clearTimeout(refreshTimer.current);
    };
  }, [sessionId, load, refresh]);

  return { snapshot, steps, live, connection, error, workers, refresh };
}
