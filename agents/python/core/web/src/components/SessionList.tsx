// The sessions, newest activity first, refreshed every few seconds, and a form to start one.
import { useCallback, useEffect, useState } from "react";
import { api, messageOf } from "../api";
import { formatAgo } from "../format";
import { sessionHref } from "../router";
import type { SessionSummary, WorkerInfo } from "../types";
import { StatusBadge } from "./Badge";
import { ErrorNote } from "./ErrorNote";
import { NewSessionForm } from "./NewSessionForm";

const REFRESH_MS = 3000;

function SessionRow({ session }: { session: SessionSummary }) {
  return (
    <tr data-session-id={session.session_id}>
      <td>
        <a href={sessionHref(session.session_id)} className="mono">
          {session.session_id}
        </a>
      </td>
      <td>{session.flow_type}</td>
      <td>
        <StatusBadge status={session.status} />
        {session.active_turn_id ? <span className="hint"> {session.active_turn_id}</span> : null}
      </td>
      <td className="num">{session.turn_count}</td>
      <td title={session.updated_at}>{formatAgo(session.updated_at)}</td>
    </tr>
  );
}

function Workers({ workers }: { workers: WorkerInfo[] }) {
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

export function SessionList() {
  const [sessions, setSessions] = useState<SessionSummary[] | null>(null);
  const [workers, setWorkers] = useState<WorkerInfo[]>([]);
  const [error, setError] = useState<string | null>(null);

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

  const flowTypes = [...new Set(workers.flatMap((worker) => worker.flow_types))].sort();
  return (
    <main className="page">
      <section className="card">
        <h2>New session</h2>
        <NewSessionForm flowTypes={flowTypes} />
      </section>
      <section className="card">
        <div className="row spread">
          <h2>Sessions</h2>
          <button type="button" className="secondary" onClick={() => void load()}>
            Refresh
          </button>
        </div>
        <Workers workers={workers} />
        <ErrorNote message={error} />
        {sessions === null ? (
          <p className="hint">Loading…</p>
        ) : sessions.length === 0 ? (
          <p className="hint">No sessions yet.</p>
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
              {sessions.map((session) => (
                <SessionRow key={session.session_id} session={session} />
              ))}
            </tbody>
          </table>
        )}
      </section>
    </main>
  );
}
