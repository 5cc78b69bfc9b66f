// One UI message of the chat: text, reasoning, and dynamic tool parts with their approvals.
import type { DynamicToolUIPart, UIMessage } from "ai";
import { useState } from "react";
import { OUTCOME_UNKNOWN_TEXT, StatusBadge } from "./Badge";

type OnApproval = (id: string, approved: boolean, reason?: string) => void;

const show = (value: unknown): string =>
  typeof value === "string" ? value : JSON.stringify(value, null, 2);

function ApprovalButtons({ id, onApproval }: { id: string; onApproval: OnApproval }) {
  const [reason, setReason] = useState("");
  return (
    <div className="row">
      <button type="button" onClick={() => onApproval(id, true)}>
        Approve
      </button>
      <input
        aria-label="Reason for rejecting"
        placeholder="Reason (optional)"
        value={reason}
        onChange={(event) => setReason(event.target.value)}
      />
      <button
        type="button"
        className="danger"
        onClick={() => onApproval(id, false, reason || undefined)}
      >
        Reject
      </button>
    </div>
  );
}

const STATE_STATUS: Record<DynamicToolUIPart["state"], string> = {
  "input-streaming": "requested",
  "input-available": "running",
  "approval-requested": "awaiting_approval",
  "approval-responded": "approved",
  "output-available": "succeeded",
  "output-error": "failed",
  "output-denied": "rejected",
};

/** How the UI message stream says a call's outcome is unknown (an output-error part). */
const UNKNOWN_OUTCOME = /outcome(?: is)? unknown|unknown outcome/i;

function ToolPart({ part, onApproval }: { part: DynamicToolUIPart; onApproval: OnApproval }) {
  const unknown = part.state === "output-error" && UNKNOWN_OUTCOME.test(part.errorText);
  const status = unknown ? "outcome_unknown" : STATE_STATUS[part.state];
  const responded = part.state === "approval-responded" && !part.approval.approved;
  return (
    <div className="tool-part" data-tool-call-id={part.toolCallId} data-state={part.state}>
      <div className="row">
        <strong>{part.toolName}</strong>
        <StatusBadge status={responded ? "rejected" : status} />
      </div>
      <code className="args">{show(part.input)}</code>
      {part.state === "approval-requested" ? (
        <ApprovalButtons id={part.approval.id} onApproval={onApproval} />
      ) : null}
      {part.state === "output-available" ? <pre className="output">{show(part.output)}</pre> : null}
      {part.state === "output-error" ? <p className="error-text">{part.errorText}</p> : null}
      {unknown ? <p className="warning">{OUTCOME_UNKNOWN_TEXT}</p> : null}
      {part.state === "output-denied" && part.approval.reason ? (
        <p className="hint">Rejected: {part.approval.reason}</p>
      ) : null}
    </div>
  );
}

export function ChatMessage({ message, onApproval }: { message: UIMessage; onApproval: OnApproval }) {
  return (
    <div className={`message ${message.role}`} data-role={message.role} data-message-id={message.id}>
      <div className="meta">{message.role}</div>
      {message.parts.map((part, index) => {
        const key = `${message.id}-${index}`;
        if (part.type === "text") return <div key={key} className="text">{part.text}</div>;
        if (part.type === "reasoning") {
          return <div key={key} className="reasoning">{part.text}</div>;
        }
        if (part.type === "dynamic-tool") {
          return <ToolPart key={key} part={part} onApproval={onApproval} />;
        }
        // A step's divider stands between parts (a failed model call's step can end empty).
        if (part.type === "step-start" && index > 0 && index < message.parts.length - 1) {
          return <hr key={key} className="step-divider" />;
        }
        return null;
      })}
    </div>
  );
}
