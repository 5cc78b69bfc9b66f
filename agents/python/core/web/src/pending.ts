// What the viewer said when it started a session: its first message and the server's warning
// (no live Worker hosts its flow type). The snapshot shows neither until a Worker takes the
// session, so the session's page shows them meanwhile. Kept in sessionStorage, for this tab.

export interface StartNote {
  message: string | null;
  warning: string | null;
}

const key = (sessionId: string): string => `dex-agents-start:${sessionId}`;

export function rememberStart(sessionId: string, message: string | null, warning: string | null) {
  sessionStorage.setItem(key(sessionId), JSON.stringify({ message, warning }));
}

export function startNote(sessionId: string): StartNote | null {
  const text = sessionStorage.getItem(key(sessionId));
  if (text === null) return null;
  try {
    return JSON.parse(text) as StartNote;
  } catch {
    return null;
  }
}
