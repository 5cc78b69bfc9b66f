// One session: the live conversation, its tool calls, pending approvals and questions, the
// Step history, and the controls of a running turn.
import { chatHref } from "../router";
import type { LiveToolCall } from "../live";
import { useSession, type Connection } from "../useSession";
import { StatusBadge } from "./Badge";
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
};

const turnCount = (count: number): string =>
  count === 1 ? "1 turn done" : `${count} turns done`;

function lastTurnCalls(calls: Map<string, LiveToolCall>): LiveToolCall[] {
  const all = [...calls.values()];
  const last = all.at(-1)?.turnId;
  return all.filter((call) => call.turnId === last);
}

export function SessionView({ sessionId }: { sessionId: string }) {
  const { snapshot, steps, live, connection, error, refresh } = useSession(sessionId);
  const state = snapshot?.state ?? null;
  return (
    <main className="page session">
      <header className="session-head card">
        <div className="row spread">
          <div>
            <h2 className="mono">{sessionId}</h2>
            <div className="row">
              <span>{snapshot?.flow_type}</span>
              <StatusBadge status={state?.status} />
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
          <p className="error-text">Last turn failed: {state.last_turn_error}</p>
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
              <h3>Waiting for you</h3>
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
