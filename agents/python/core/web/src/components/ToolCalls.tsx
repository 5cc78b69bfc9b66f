// The active turn's tool calls, with their effect and status; after the turn, what the events
// said about its calls.
import { prettyJson } from "../format";
import type { LiveToolCall } from "../live";
import type { AgentToolCall } from "../types";
import { EffectBadge, OUTCOME_UNKNOWN_TEXT, StatusBadge } from "./Badge";

function RecordCard({ call }: { call: AgentToolCall }) {
  return (
    <li className={`tool-call status-${call.status}`} data-tool-call-id={call.tool_call_id}>
      <div className="row">
        <strong>{call.tool_name}</strong>
        <EffectBadge effect={call.effect} />
        <StatusBadge status={call.status} />
        {call.requires_approval ? <span className="hint">needs approval</span> : null}
      </div>
      <code className="args">{call.arguments}</code>
      {call.status === "outcome_unknown" ? <p className="warning">{OUTCOME_UNKNOWN_TEXT}</p> : null}
      {call.output ? <pre className="output">{prettyJson(call.output)}</pre> : null}
      {call.error ? <p className="error-text">{call.error}</p> : null}
      {call.rejection_message ? <p className="hint">Rejected: {call.rejection_message}</p> : null}
      {call.input_question ? <p className="hint">Asks: {call.input_question}</p> : null}
      {call.wait_until ? <p className="hint">Waits until {call.wait_until}</p> : null}
      {call.task_id ? <p className="hint">Task {call.task_id}</p> : null}
    </li>
  );
}

function LiveCard({ call }: { call: LiveToolCall }) {
  return (
    <li className={`tool-call status-${call.status}`} data-tool-call-id={call.toolCallId}>
      <div className="row">
        <strong>{call.toolName}</strong>
        <EffectBadge effect={call.effect} />
        <StatusBadge status={call.status} />
      </div>
      {call.status === "outcome_unknown" ? <p className="warning">{OUTCOME_UNKNOWN_TEXT}</p> : null}
    </li>
  );
}

interface Props {
  records: AgentToolCall[];
  lastTurnCalls: LiveToolCall[];
}

export function ToolCalls({ records, lastTurnCalls }: Props) {
  if (records.length === 0 && lastTurnCalls.length === 0) {
    return <p className="hint">No tool calls in this turn.</p>;
  }
  return (
    <ul className="tool-calls">
      {records.length > 0
        ? records.map((call) => <RecordCard key={call.tool_call_id} call={call} />)
        : lastTurnCalls.map((call) => <LiveCard key={call.key} call={call} />)}
    </ul>
  );
}
