// Typed calls to the session API. URLs are relative to the page, so the viewer works wherever
// the application is mounted.
import { authHeaders, getToken } from "./auth";
import type {
  AgentMessage,
  ApiErrorBody,
  SessionSnapshot,
  SessionSummary,
  StepExecution,
  WorkerInfo,
} from "./types";

/** An error answer of the API, with the message to show to the person. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field: string | null = null,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export function apiUrl(path: string, query: Record<string, string | undefined> = {}): string {
  const url = new URL(`api/${path}`, document.baseURI);
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined) url.searchParams.set(key, value);
  }
  return url.toString();
}

/** The URL of an event stream. EventSource cannot set headers, so a token goes in the query:
 *  a session token (`api.sessionToken`), never the server's token, which the server refuses
 *  there (URLs land in logs and history). */
export function streamUrl(
  path: string,
  query: Record<string, string | undefined>,
  sessionToken: string | null,
): string {
  return apiUrl(path, { ...query, access_token: sessionToken ?? undefined });
}

async function errorOf(response: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await response.json();
  } catch {
    // Not JSON: fall back to the status line.
  }
  const error = (body as Partial<ApiErrorBody> | null)?.error;
  if (error && typeof error.message === "string") {
    return new ApiError(response.status, error.code, error.message, error.field ?? null);
  }
  const reason = response.statusText || "request failed";
  return new ApiError(response.status, "http_error", `${response.status} ${reason}`);
}

export async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json", ...authHeaders() };
  const init: RequestInit = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(apiUrl(path), init);
  if (!response.ok) throw await errorOf(response);
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

const session = (id: string, rest = ""): string => `sessions/${encodeURIComponent(id)}${rest}`;

interface Result {
  result: boolean;
}

export const api = {
  listSessions: (limit = 100) => request<SessionSummary[]>("GET", `sessions?limit=${limit}`),
  startSession: (flowType: string, message: string | null) =>
    request<{ session_id: string; warning?: string | null }>("POST", "sessions", {
      flow_type: flowType,
      message,
      session_id: null,
      session_settings: null,
    }),
  snapshot: (id: string) => request<SessionSnapshot>("GET", session(id, "/snapshot")),
  messages: (id: string, beforeSequence?: number) =>
    request<{ messages: AgentMessage[]; next_before_sequence: number | null }>(
      "GET",
      session(id, `/messages?limit=50${beforeSequence ? `&before_sequence=${beforeSequence}` : ""}`),
    ),
  steps: (id: string) => request<StepExecution[]>("GET", session(id, "/steps")),
  workers: () => request<WorkerInfo[]>("GET", "workers"),
  sendMessage: (id: string, text: string) =>
    request<Result>("POST", session(id, "/messages"), { text, plan_mode: false }),
  steer: (id: string, text: string) =>
    request<Result>("POST", session(id, "/steer"), { text, message_id: null }),
  cancel: (id: string, turnId: string | null) =>
    request<Result>("POST", session(id, "/cancel"), { turn_id: turnId }),
  resolve: (id: string, interruptId: string, approved: boolean, reason: string | null) =>
    request<Result>("POST", session(id, `/interrupts/${encodeURIComponent(interruptId)}/resolve`), {
      approved,
      rejection_message: reason,
    }),
  answer: (id: string, interruptId: string, answer: string) =>
    request<Result>("POST", session(id, `/interrupts/${encodeURIComponent(interruptId)}/answer`), {
      answer,
    }),
  /** A short-lived token for this session's event stream; null when the viewer holds no
   *  token (a server that asks for none). */
  sessionToken: async (id: string): Promise<string | null> => {
    if (getToken() === null) return null;
    const body = { expires_in: 3600 };
    return (await request<{ token: string }>("POST", session(id, "/tokens"), body)).token;
  },
  deleteQueued: (id: string, messageId: string) =>
    request<Result>("DELETE", session(id, `/queued-messages/${encodeURIComponent(messageId)}`)),
};

/** What the viewer says when the server refuses it for want of a valid token. */
export const UNAUTHORIZED_TEXT =
  "The server refused the request (401): this tab holds no token, or a wrong one. " +
  "Open the link `dex-agents serve` printed, or paste its token above.";

export function messageOf(error: unknown): string {
  if (error instanceof ApiError && error.status === 401) return UNAUTHORIZED_TEXT;
  if (error instanceof ApiError) return error.message;
  if (error instanceof Error) return error.message;
  return String(error);
}
