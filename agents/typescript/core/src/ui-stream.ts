/**
 * `@superdurable/dex-agents/ui-stream`: serves the AI SDK's `useChat` from a Node application.
 *
 * The session API (`dex-agents serve`) already speaks the AI SDK UI message stream; what a
 * Node app lacks is a way to put it behind its own users: a browser must not hold the
 * engine's token, and only the app knows which user may open which session. This handler
 * answers the three chat routes of the session API under any mount path, asks the
 * application's `authorize` about every request, and relays the request to the engine with
 * the engine's token, which never leaves the server. The engine's answer (its status, its
 * errors as JSON, its stream with resume tokens and heartbeats) passes through unchanged, so
 * sending, approvals, resume and reconnect behave as they do against the engine itself.
 *
 * | Route (under the mount path)       | Relayed to                               |
 * | ---------------------------------- | ---------------------------------------- |
 * | `POST …/sessions/{id}/chat`        | `POST {baseUrl}/sessions/{id}/chat`      |
 * | `GET  …/sessions/{id}/chat/stream` | `GET  {baseUrl}/sessions/{id}/chat/stream` (query and `Last-Event-ID` kept) |
 * | `GET  …/sessions/{id}/ui-messages` | `GET  {baseUrl}/sessions/{id}/ui-messages` |
 *
 * Like `serveRunners`, the handler is a Node request handler (`http.createServer`, Express,
 * Fastify's raw request) with a web-standard `fetch(request)` beside it (Hono, Next.js route
 * handlers). A client that goes away aborts the relayed request; the turn goes on in the
 * engine, as it does when a browser closes a stream it holds directly.
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { parsedBodyText } from "./node-body.js";

export interface ServeUiStreamOptions {
  /** The session API's root, as `AgentClient` takes it: `http://127.0.0.1:8000/api`. */
  baseUrl: string;
  /** The engine's token. It is sent to the engine only; the browser never sees it. */
  token?: string;
  /** The application's check of each request: may the user who sent `request` open
   *  `sessionId`? `false` answers 403 and nothing reaches the engine. Read the user from the
   *  request (a cookie, a header) as the application does elsewhere. */
  authorize(request: Request, sessionId: string): boolean | Promise<boolean>;
  /** The longest request body relayed; a longer one gets 413 while it streams in, before
   *  `authorize` (default 16 MiB, the engine's own default limit). */
  maxBodyBytes?: number;
  fetch?: typeof fetch;
}

/** A Node request handler, with a web-standard `fetch` handler beside it. */
export interface UiStreamHandler {
  (req: IncomingMessage, res: ServerResponse): void;
  fetch(request: Request): Promise<Response>;
}

/** The text of the 403 when `authorize` refuses a request. */
export const SESSION_NOT_AUTHORIZED = "this user may not open this session";
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

const ROUTES: readonly { method: string; suffix: RegExp; tail: string }[] = [
  { method: "POST", suffix: /\/sessions\/([^/]+)\/chat$/, tail: "chat" },
  { method: "GET", suffix: /\/sessions\/([^/]+)\/chat\/stream$/, tail: "chat/stream" },
  { method: "GET", suffix: /\/sessions\/([^/]+)\/ui-messages$/, tail: "ui-messages" },
];
// Request headers the engine reads; the rest (cookies, the app's own auth) stay here.
const FORWARDED_REQUEST = ["accept", "content-type", "last-event-id"];
// Response headers that describe the body the engine sent and the client receives as is.
const FORWARDED_RESPONSE = [
  "cache-control",
  "content-type",
  "retry-after",
  "x-vercel-ai-ui-message-stream",
];

/** Serves `useChat`'s routes for the sessions `authorize` lets each request open. Mount it
 *  at any path: a route is matched by the end of the request's path. */
export function serveUiStream(options: ServeUiStreamOptions): UiStreamHandler {
  const relay = new UiStreamRelay(options);
  const handler = ((req: IncomingMessage, res: ServerResponse) => {
    handleNode(relay, req, res).catch((error: unknown) => {
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(errorBody("ui_stream_error", String(error)));
      } else {
        res.destroy();
      }
    });
  }) as UiStreamHandler;
  handler.fetch = (request: Request) => relay.answer(request);
  return handler;
}

class UiStreamRelay {
  private readonly baseUrl: string;
  private readonly fetcher: typeof fetch;

  constructor(private readonly options: ServeUiStreamOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.fetcher = options.fetch ?? ((input, init) => fetch(input, init));
  }

  /** The engine's answer to `request`, or this handler's 403, 404 or 405. */
  async answer(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const matched = ROUTES.map((route) => ({ route, found: route.suffix.exec(url.pathname) }));
    const hit = matched.find((m) => m.found !== null);
    if (hit?.found == null) {
      return jsonError(404, "not_found", `no chat route at ${url.pathname}`);
    }
    const exact = matched.find((m) => m.found !== null && m.route.method === request.method);
    if (exact === undefined) {
      return jsonError(405, "method_not_allowed", `${request.method} is not served here`);
    }
    const sessionId = decodeURIComponent(exact.found?.[1] ?? "");
    const body = request.method === "POST" ? await cappedText(request, this.maxBodyBytes) : null;
    if (body instanceof Response) return body;
    if (!(await this.options.authorize(request, sessionId))) {
      return jsonError(403, "forbidden", SESSION_NOT_AUTHORIZED, "session_id");
    }
    const path = `/sessions/${encodeURIComponent(sessionId)}/${exact.route.tail}`;
    return this.relay(request, body, path, url);
  }

  private get maxBodyBytes(): number {
    return this.options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  }

  private async relay(request: Request, body: string | null, path: string, url: URL) {
    const headers = new Headers();
    for (const name of FORWARDED_REQUEST) {
      const value = request.headers.get(name);
      if (value !== null) headers.set(name, value);
    }
    if (this.options.token) headers.set("authorization", `Bearer ${this.options.token}`);
    const upstream = await this.fetcher(`${this.baseUrl}${path}${url.search}`, {
      method: request.method,
      headers,
      body,
      signal: request.signal,
    });
    const answered = new Headers();
    for (const name of FORWARDED_RESPONSE) {
      const value = upstream.headers.get(name);
      if (value !== null) answered.set(name, value);
    }
    return new Response(upstream.body, { status: upstream.status, headers: answered });
  }
}

/** The request's body as text, or a 413 once it is longer than `limit` bytes. */
async function cappedText(request: Request, limit: number): Promise<string | Response> {
  if (request.body === null) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > limit) {
      const message = `the request body is longer than this server takes (${limit} bytes)`;
      return jsonError(413, "body_too_large", message);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function errorBody(code: string, message: string, field: string | null = null): string {
  return JSON.stringify({ error: { code, message, field } });
}

function jsonError(status: number, code: string, message: string, field: string | null = null) {
  return new Response(errorBody(code, message, field), {
    status,
    headers: { "content-type": "application/json" },
  });
}

// Node's http ----------------------------------------------------------------------------------

async function handleNode(relay: UiStreamRelay, req: IncomingMessage, res: ServerResponse) {
  const controller = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) controller.abort(new Error("the client closed the connection"));
  });
  const response = await relay.answer(webRequest(req, controller.signal));
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (response.body === null) {
    res.end();
    return;
  }
  res.flushHeaders();
  const body = Readable.fromWeb(response.body as import("node:stream/web").ReadableStream);
  controller.signal.addEventListener("abort", () => body.destroy());
  body.on("error", () => res.destroy());
  body.pipe(res);
}

/** `req` as a web `Request`: its URL (on the host it was sent to), headers and body. */
function webRequest(req: IncomingMessage, signal: AbortSignal): Request {
  const host = req.headers.host ?? "localhost";
  const url = new URL(req.url ?? "/", `http://${host}`);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  const method = req.method ?? "GET";
  const body = method === "GET" || method === "HEAD" ? null : bodyStream(req);
  return new Request(url, { method, headers, body, signal, duplex: "half" } as RequestInit);
}

/** The body as a web stream: the request's own, or what a body parser (`express.json()`) left
 *  on `req.body` once it read the stream. */
function bodyStream(req: IncomingMessage & { body?: unknown }): ReadableStream<Uint8Array> {
  if (!req.readableEnded) {
    return Readable.toWeb(req) as unknown as ReadableStream<Uint8Array>;
  }
  const text = req.body === undefined || req.body === null ? "" : parsedBodyText(req.body);
  return new Blob([text]).stream() as unknown as ReadableStream<Uint8Array>;
}
