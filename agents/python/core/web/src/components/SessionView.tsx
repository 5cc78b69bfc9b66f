// One session: the live conversation, its tool calls, pending approvals and questions, the
// Step history, and the controls of a running turn.
import type { LiveToolCall } from "../live";
import { startNote } from "../pending";
import { chatHref } from "../router";
import type { SessionSnapshot, WorkerInfo } from "../types";
import { useSession, type Connection } from "../useSession";
import { SessionBadge } from "./Badge";
import { Composer } from "./Composer";
import { Conversation } from "./Conversation";
import { ErrorNote } from "./ErrorNote";
import { Interrupts } from "./Interrupts";
import { QueuedMessages } from "./QueuedMessages";
import { StepTimeline } from "./StepTimeline";
import { ToolCalls } from "./ToolCalls";

const CONNECTION_TEXT: Record<Connection, string> = {
  connecting: "connecting…",
  live: "live",
  reconnecting: "reconnecting…",
  missing: "no such session",
};

const turnCount = (count: number): string =>
  count === 1 ? "1 turn done" : `${count} turns done`;

function lastTurnCalls(calls: Map<string, LiveToolCall>): LiveToolCall[] {
  const all = [...calls.values()];
  const last = all.at(-1)?.turnId;
  return all.filter((call) => call.turnId === last);
}

/** No session of this ID: say so, and offer nothing to do with it. */
function MissingSession({ sessionId, error }: { sessionId: string; error: string | null }) {
  return (
    <main className="page session">
      <section className="card" data-missing-session={sessionId}>
        <h2 className="mono">{sessionId}</h2>
        <ErrorNote message={error} />
        <p className="hint">
          No session has this ID in the server's database. <a href="#/">Back to the sessions</a>
        </p>
      </section>
    </main>
  );
}

/** A session no Worker has taken yet: whether a running Worker hosts its flow type, and the
 *  first message the viewer sent, which no message stores until a Worker takes it. */
function NotStarted({
  sessionId,
  snapshot,
  workers,
}: {
  sessionId: string;
  snapshot: SessionSnapshot;
  workers: WorkerInfo[] | null;
}) {
  const note = startNote(sessionId);
  const hosted = workers?.some(
    (worker) => worker.state === "running" && worker.flow_types.includes(snapshot.flow_type),
  );
  const warning =
    workers !== null && !hosted
      ? `No running Worker hosts flow type ${snapshot.flow_type}: the session waits, not started, until one that hosts it starts.`
      : null;
  return (
    <>
      {warning ? (
        <p className="warning" role="status" data-not-hosted={snapshot.flow_type}>
          {warning}
        </p>
      ) : null}
      {note?.message ? (
        <div className="message user pending" data-role="pending-start">
          <div className="meta">user · sent, not yet taken by a Worker</div>
          <div className="text">{note.message}</div>
        </div>
      ) : null}
    </>
  );
}

export function SessionView({ sessionId }: { sessionId: string }) {
  const { snapshot, steps, live, connection, error, workers, refresh } = useSession(sessionId);
  const state = snapshot?.state ?? null;
  if (connection === "missing") return <MissingSession sessionId={sessionId} error={error} />;
  return (
    <main className="page session">
      <header className="session-head card">
        <div className="row spread">
          <div>
            <h2 className="mono">{sessionId}</h2>
            <div className="row">
              <span>{snapshot?.flow_type}</span>
              <SessionBadge status={state?.status} waitingFor={snapshot?.waiting_for} />
              {state?.active_turn_id ? <span className="hint">{state.active_turn_id}</span> : null}
              <span className="hint">{state ? turnCount(state.turn_count) : ""}</span>
              <span className={`connection connection-${connection}`}>
                {CONNECTION_TEXT[connection]}
              </span>
            </div>
          </div>
          <a className="button secondary" href={chatHref(sessionId)}>
            Open chat
          </a>
        </div>
        {state?.last_turn_error ? (
          <p className="error-text" data-last-turn-error>
            Last turn failed: {state.last_turn_error}
          </p>
        ) : null}
        {snapshot && state === null ? (
          <NotStarted sessionId={sessionId} snapshot={snapshot} workers={workers} />
        ) : null}
        <ErrorNote message={error} />
      </header>
      <div className="columns">
        <section className="card main-column">
          <h3>Conversation</h3>
          <Conversation
            messages={snapshot?.messages ?? []}
            live={live}
            records={snapshot?.tool_calls ?? []}
            activeTurnId={state?.active_turn_id ?? null}
          />
          <QueuedMessages
            sessionId={sessionId}
            queued={snapshot?.queued_messages ?? []}
            steered={snapshot?.steered_messages ?? []}
            onDone={refresh}
          />
          <Composer sessionId={sessionId} state={state} onDone={refresh} />
        </section>
        <aside className="side-column">
          {snapshot && snapshot.pending_interrupts.length > 0 ? (
            <section className="card attention">
              <h3>
                Waiting for you:{" "}
                {snapshot.waiting_for === "answer" ? "an answer" : "an approval"}
              </h3>
              <Interrupts
                sessionId={sessionId}
                interrupts={snapshot.pending_interrupts}
                onDone={refresh}
              />
            </section>
          ) : null}
          <section className="card">
            <h3>Tool calls</h3>
            <ToolCalls
              records={snapshot?.tool_calls ?? []}
              lastTurnCalls={lastTurnCalls(live.toolCalls)}
            />
          </section>
          <section className="card">
            <h3>Step history</h3>
            <StepTimeline steps={steps} />
          </section>
        </aside>
      </div>
    </main>
  );
}
