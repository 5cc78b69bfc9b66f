/** What the tests share: a served handler on a real loopback server, NDJSON reading, and
 *  wire bodies as the engine sends them. */

import http from "node:http";
import type { AddressInfo } from "node:net";
import type { RunnersHandler } from "../src/serve.js";
import type { WireAgentMessage, WireAgentToolCall, WireTurn } from "../src/wire.js";

export interface Served {
  url: string;
  close(): Promise<void>;
}

/** `handler` on a real HTTP server on 127.0.0.1, mounted under `/dex`. */
export async function listen(handler: RunnersHandler): Promise<Served> {
  const server = http.createServer((req, res) => {
    if (!req.url?.startsWith("/dex/")) {
      res.writeHead(404).end();
      return;
    }
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/dex`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Every line of an NDJSON response, parsed. */
export async function lines(response: Response): Promise<Record<string, unknown>[]> {
  const text = await response.text();
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

export function post(
  url: string,
  method: string,
  body: unknown,
  init: RequestInit = {},
): Promise<Response> {
  return fetch(`${url}/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(init.headers ?? {}) },
    body: JSON.stringify(body),
    signal: init.signal ?? null,
  });
}

export function userMessage(sequence: number, text: string, turnId = "t1"): WireAgentMessage {
  return {
    sequence,
    turn_id: turnId,
    role: "user",
    text,
    tool_call_id: null,
    tool_name: null,
    tool_arguments: null,
    tool_output: null,
    framework_item: JSON.stringify({ kind: "user_text", text }),
    created_at: "2026-01-01T00:00:00Z",
  };
}

export function assistantMessage(sequence: number, text: string, turnId = "t1"): WireAgentMessage {
  return {
    sequence,
    turn_id: turnId,
    role: "assistant",
    text,
    tool_call_id: null,
    tool_name: null,
    tool_arguments: null,
    tool_output: null,
    framework_item: JSON.stringify({ said: text }),
    created_at: "2026-01-01T00:00:01Z",
  };
}

export function turnBody(
  messages: WireAgentMessage[],
  history: { first: number; last: number; after: number },
  extra: Partial<WireTurn> = {},
): WireTurn {
  return {
    flow_type: "Echo",
    flow_id: "session-1",
    turn_id: "t1",
    attempt: 1,
    step_execution_id: "step-1",
    history: {
      first_sequence: history.first,
      last_sequence: history.last,
      messages_after: history.after,
    },
    messages,
    framework_run_state: null,
    tool_calls: [],
    tool_policies: { refund: { effect: "non_idempotent_write", requires_approval: true } },
    default_tool_effect: "unclassified",
    enabled_built_in_tools: [],
    session_settings: { user_name: "Ada", nested_key: { keep_me: 1 } },
    interaction_mode: "chat",
    plan: null,
    context_summary: null,
    ...extra,
  };
}

export function toolCallRecord(toolName: string, args: unknown): WireAgentToolCall {
  return {
    tool_call_id: "call-1",
    turn_id: "t1",
    tool_name: toolName,
    arguments: JSON.stringify(args),
    effect: "non_idempotent_write",
    requires_approval: false,
    status: "approved",
    output: null,
    error: null,
    rejection_message: null,
    deferral_order: 0,
    tool_source_reference: null,
    trace_context: null,
    wait_until: null,
    input_continuation: null,
    input_answers: [],
    input_question: null,
    input_choices: [],
    input_allows_free_text: true,
    cancellation_reason: null,
    task_id: null,
    task_poll_interval_seconds: null,
    task_answer_pending: false,
  };
}
