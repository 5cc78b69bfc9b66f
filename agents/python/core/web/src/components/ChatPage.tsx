// The session as an AI SDK chat: `useChat` over the UI message stream of
// `POST /api/sessions/{id}/chat`, resumed on reload from `/api/sessions/{id}/chat/stream`.
import { useChat } from "@ai-sdk/react";
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from "ai";
import { useEffect, useMemo, useState, type FormEvent } from "react";
import { apiUrl, messageOf, request } from "../api";
import { authHeaders } from "../auth";
import { sessionHref } from "../router";
import { ErrorNote } from "./ErrorNote";
import { ChatMessage } from "./ChatMessage";

const sessionPath = (id: string, rest: string): string =>
  `sessions/${encodeURIComponent(id)}${rest}`;

/** The API's error message out of what the transport throws (the response body's text). */
function chatErrorText(error: Error | undefined): string | null {
  if (!error) return null;
  try {
    const body = JSON.parse(error.message) as { error?: { message?: string } };
    return body.error?.message ?? error.message;
  } catch {
    return error.message;
  }
}

function Chat({ sessionId, initial }: { sessionId: string; initial: UIMessage[] }) {
  const transport = useMemo(
    () =>
      new DefaultChatTransport<UIMessage>({
        api: apiUrl(sessionPath(sessionId, "/chat")),
        headers: () => authHeaders(),
        prepareReconnectToStreamRequest: ({ id }) => ({
          api: apiUrl(sessionPath(id, "/chat/stream")),
          headers: authHeaders(),
        }),
      }),
    [sessionId],
  );
  const { messages, sendMessage, status, error, addToolApprovalResponse, stop } = useChat({
    id: sessionId,
    messages: initial,
    transport,
    resume: true,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [text, setText] = useState("");
  const busy = status === "submitted" || status === "streaming";

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!text.trim()) return;
    void sendMessage({ text });
    setText("");
  };

  return (
    <>
      <div className="conversation chat" aria-label="Chat">
        {messages.length === 0 ? <p className="hint">Say something to start.</p> : null}
        {messages.map((message) => (
          <ChatMessage
            key={message.id}
            message={message}
            onApproval={(id, approved, reason) =>
              void addToolApprovalResponse({ id, approved, reason })
            }
          />
        ))}
      </div>
      <form className="composer" onSubmit={submit}>
        <textarea
          aria-label="Chat message"
          rows={2}
          placeholder="Message"
          value={text}
          onChange={(event) => setText(event.target.value)}
        />
        <div className="row">
          <button type="submit" disabled={busy || !text.trim()}>
            Send
          </button>
          {busy ? (
            <button type="button" className="secondary" onClick={() => void stop()}>
              Stop watching
            </button>
          ) : null}
          <span className={`chat-status chat-status-${status}`} data-chat-status={status}>
            {status}
          </span>
        </div>
        <ErrorNote message={chatErrorText(error)} />
      </form>
    </>
  );
}

export function ChatPage({ sessionId }: { sessionId: string }) {
  const [initial, setInitial] = useState<UIMessage[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setInitial(null);
    request<UIMessage[]>("GET", sessionPath(sessionId, "/ui-messages"))
      .then(setInitial)
      .catch((caught: unknown) => setError(messageOf(caught)));
  }, [sessionId]);
  return (
    <main className="page chat-page">
      <section className="card">
        <div className="row spread">
          <h2>
            Chat · <span className="mono">{sessionId}</span>
          </h2>
          <a className="button secondary" href={sessionHref(sessionId)}>
            Session details
          </a>
        </div>
        <ErrorNote message={error} />
        {initial === null ? (
          error ? null : <p className="hint">Loading…</p>
        ) : (
          <Chat key={sessionId} sessionId={sessionId} initial={initial} />
        )}
      </section>
    </main>
  );
}
