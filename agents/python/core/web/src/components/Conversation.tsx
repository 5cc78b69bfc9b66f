// The conversation: the stored messages, then the text the running turn streams live.
import { useEffect, useRef } from "react";
import { prettyJson } from "../format";
import { textsToShow, toolKey, type LiveState, type LiveText } from "../live";
import type { AgentMessage, AgentToolCall } from "../types";
import { OUTCOME_UNKNOWN_TEXT, StatusBadge } from "./Badge";

interface Props {
  messages: AgentMessage[];
  live: LiveState;
  records: AgentToolCall[];
  activeTurnId: string | null;
}

/** The texts the model sees for a call that failed or whose outcome is unknown (the core's
 *  texts.py): how a tool message of an earlier turn, whose record is gone, shows its outcome. */
const OUTPUT_STATUSES: [string, string][] = [
  ["The tool call failed: ", "failed"],
  ["The tool call's outcome is unknown", "outcome_unknown"],
];

function toolStatus(message: AgentMessage, live: LiveState, records: AgentToolCall[]) {
  const record = records.find(
    (call) => call.turn_id === message.turn_id && call.tool_call_id === message.tool_call_id,
  );
  if (record) return record.status;
  const known = live.toolCalls.get(toolKey(message.turn_id, message.tool_call_id ?? ""))?.status;
  if (known) return known;
  const output = message.tool_output ?? "";
  return OUTPUT_STATUSES.find(([prefix]) => output.startsWith(prefix))?.[1] ?? null;
}

const ERROR_STATUSES = new Set(["failed", "outcome_unknown"]);

function ToolMessage({ message, status }: { message: AgentMessage; status: string | null }) {
  const failed = status !== null && ERROR_STATUSES.has(status);
  return (
    <div
      className={`message tool${failed ? " tool-error" : ""}`}
      data-role="tool"
      data-tool-call-id={message.tool_call_id}
      data-status={status ?? ""}
    >
      <div className="meta">
        {failed ? "tool error" : "tool result"} ·{" "}
        <strong>{message.tool_name ?? message.tool_call_id}</strong>{" "}
        {status ? <StatusBadge status={status} /> : null}
      </div>
      {status === "outcome_unknown" ? <p className="warning">{OUTCOME_UNKNOWN_TEXT}</p> : null}
      <pre className={failed ? "output error-output" : "output"}>
        {prettyJson(message.tool_output)}
      </pre>
    </div>
  );
}

interface StoredProps {
  message: AgentMessage;
  live: LiveState;
  records: AgentToolCall[];
}

function StoredMessage({ message, live, records }: StoredProps) {
  if (message.role === "tool") {
    return <ToolMessage message={message} status={toolStatus(message, live, records)} />;
  }
  return (
    <div className={`message ${message.role}`} data-role={message.role}>
      <div className="meta">{message.role}</div>
      {message.text ? <div className="text">{message.text}</div> : null}
      {message.tool_name ? (
        <div className="call">
          calls <strong>{message.tool_name}</strong>{" "}
          <code>{message.tool_arguments}</code>
        </div>
      ) : null}
    </div>
  );
}

function LiveMessage({ entry }: { entry: LiveText }) {
  return (
    <div className="message assistant live" data-role="live" data-turn-id={entry.turnId}>
      <div className="meta">
        assistant · live{entry.attempt > 1 ? ` (attempt ${entry.attempt})` : ""}
      </div>
      {entry.reasoning ? <div className="reasoning">{entry.reasoning}</div> : null}
      {entry.text ? <div className="text">{entry.text}</div> : null}
    </div>
  );
}

export function Conversation({ messages, live, records, activeTurnId }: Props) {
  const end = useRef<HTMLDivElement>(null);
  const texts = textsToShow(live.texts, activeTurnId, messages);
  useEffect(() => {
    end.current?.scrollIntoView({ block: "end" });
  }, [messages.length, texts.length]);
  return (
    <div className="conversation" aria-label="Conversation">
      {messages.length === 0 && texts.length === 0 ? (
        <p className="hint">No messages yet.</p>
      ) : null}
      {messages.map((message) => (
        <StoredMessage
          key={message.sequence}
          message={message}
          live={live}
          records={records}
        />
      ))}
      {texts.map((entry) => (
        <LiveMessage key={entry.key} entry={entry} />
      ))}
      <div ref={end} />
    </div>
  );
}
