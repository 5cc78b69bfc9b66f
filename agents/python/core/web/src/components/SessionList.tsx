// The sessions, newest first, refreshed every few seconds, and a form to start one. Sessions
// that wait on a person (an approval, an answer) come first and can be shown alone.
import { useCallback, useEffect, useState } from "react";
import { api, messageOf } from "../api";
import { formatAgo } from "../format";
import { sessionHref } from "../router";
import type { SessionSummary, WorkerInfo } from "../types";
import { SessionBadge } from "./Badge";
import { ErrorNote } from "./ErrorNote";
import { NewSessionForm } from "./NewSessionForm";

const REFRESH_MS = 3000;

function SessionRow({ session }: { session: SessionSummary }) {
  return (
    <tr data-session-id={session.session_id} data-waiting-for={session.waiting_for ?? ""}>
      <td>
        <a href={sessionHref(session.session_id)} className="mono">
          {session.session_id}
        </a>
      </td>
      <td>{session.flow_type}</td>
      <td>
        <SessionBadge status={session.status} waitingFor={session.waiting_for} />
        {session.active_turn_id ? <span className="hint"> {session.active_turn_id}</span> : null}
      </td>
      <td className="num">{session.turn_count}</td>
      <td title={session.updated_at}>{formatAgo(session.updated_at)}</td>
    </tr>
  );
}

/** The running Workers; nothing until the list is read (an error says why it is not). */
function Workers({ workers }: { workers: WorkerInfo[] | null }) {
  if (workers === null) return null;
  const running = workers.filter((worker) => worker.state === "running");
  if (running.length === 0) {
    return <p className="hint">No Worker is running: sessions wait until one starts.</p>;
  }
  return (
    <p className="hint">
      Workers:{" "}
      {running.map((worker) => `${worker.worker_id} (${worker.flow_types.join(", ")})`).join("; ")}
    </p>
  );
}

/** Sessions that wait on a person first; otherwise the server's order (newest first). */
function waitingFirst(sessions: SessionSummary[]): SessionSummary[] {
  return [...sessions].sort((a, b) => Number(b.waiting_for !== null) - Number(a.waiting_for !== null));
}

export function SessionList() {
  const [sessions, setSessions] = useState<SessionSummary[] | null>(null);
  const [workers, setWorkers] = useState<WorkerInfo[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [waitingOnly, setWaitingOnly] = useState(false);

  const load = useCallback(async () => {
    try {
      const [list, hosts] = await Promise.all([api.listSessions(), api.workers()]);
      setSessions(list);
      setWorkers(hosts);
      setError(null);
    } catch (caught) {
      setError(messageOf(caught));
    }
  }, []);

  useEffect(() => {
    void load();
    const timer = window.setInterval(() => void load(), REFRESH_MS);
    return () => window.clearInterval(timer);
  }, [load]);

  const flowTypes = [...new Set((workers ?? []).flatMap((worker) => worker.flow_types))].sort();
  const waiting = (sessions ?? []).filter((session) => session.waiting_for !== null).length;
  const shown = waitingFirst(sessions ?? []).filter(
    (session) => !waitingOnly || session.waiting_for !== null,
  );
  return (
    <main className="page">
      <section className="card">
        <h2>New session</h2>
        <NewSessionForm flowTypes={flowTypes} />
      </section>
      <section className="card">
        <div className="row spread">
          <h2>Sessions</h2>
          <div className="row">
            <label className="filter" data-waiting-count={waiting}>
              <input
                type="checkbox"
                checked={waitingOnly}
                onChange={(event) => setWaitingOnly(event.target.checked)}
              />
              Only those waiting for you ({waiting})
            </label>
            <button type="button" className="secondary" onClick={() => void load()}>
              Refresh
            </button>
          </div>
        </div>
        <Workers workers={workers} />
        <ErrorNote message={error} />
        {sessions === null ? (
          error === null ? (
            <p className="hint">Loading…</p>
          ) : null
        ) : shown.length === 0 ? (
          <p className="hint">{waitingOnly ? "No session waits for you." : "No sessions yet."}</p>
        ) : (
          <table className="sessions">
            <thead>
              <tr>
                <th>Session</th>
                <th>Flow type</th>
                <th>Status</th>
                <th className="num">Turns</th>
                <th>Last activity</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((session) => (
                <SessionRow key={session.session_id} session={session} />
              ))}
            </tbody>
          </table>
        )}
      </section>
    </main>
  );
}
