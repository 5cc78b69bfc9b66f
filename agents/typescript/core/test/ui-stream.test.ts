/** `serveUiStream` between the AI SDK's own `DefaultChatTransport` and the real session API:
 *  `dex-agents serve` and a Worker hosting the core's demo flow on a scripted model
 *  (test/harness/serve_demo.py). The app's `authorize` lets each user open their own
 *  sessions; the engine's token stays in the app. Skipped without `uv`. */

import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { AgentClient } from "../src/client.js";
import { SESSION_NOT_AUTHORIZED, serveUiStream } from "../src/ui-stream.js";
import { hasUv, type Ready, type SessionApi, startSessionApi, toolRuns } from "./session-api.js";

/** What the browser sent to the app, and the headers and SSE ids it got back. */
interface Seen {
  authorization: (string | null)[];
  ids: string[];
}

function transport(appUrl: string, sessionId: string, user: string, seen: Seen) {
  const base = `${appUrl}/agents/sessions/${encodeURIComponent(sessionId)}`;
  const recording: typeof fetch = async (input, init) => {
    seen.authorization.push(new Headers(init?.headers).get("authorization"));
    const response = await fetch(input, init);
    if (response.body === null || !response.ok) return response;
    const [mine, theirs] = response.body.tee();
    void new Response(mine).text().then((text) => {
      for (const line of text.split("\n"))
        if (line.startsWith("id: ")) seen.ids.push(line.slice(4));
    });
    return new Response(theirs, { status: response.status, headers: response.headers });
  };
  return new DefaultChatTransport<UIMessage>({
    api: `${base}/chat`,
    headers: { "x-user": user },
    fetch: recording,
    prepareReconnectToStreamRequest: ({ headers }) => ({ api: `${base}/chat/stream`, headers }),
  });
}

/** What `useChat` sends for a new message or approval answers: the whole conversation. */
function send(chat: DefaultChatTransport<UIMessage>, chatId: string, messages: UIMessage[]) {
  return chat.sendMessages({
    trigger: "submit-message",
    chatId,
    messageId: undefined,
    messages,
    abortSignal: undefined,
  });
}

/** The assistant message a stream builds, continuing `message` as useChat does after an
 *  approval answer. */
async function assemble(
  stream: ReadableStream<UIMessageChunk>,
  message?: UIMessage,
): Promise<UIMessage | undefined> {
  let last: UIMessage | undefined;
  const errors: unknown[] = [];
  const onError = (error: unknown) => errors.push(error);
  for await (const built of readUIMessageStream<UIMessage>({ stream, message, onError }))
    last = built;
  assert.deepEqual(errors, []);
  return last;
}

function userMessage(id: string, text: string): UIMessage {
  return { id, role: "user", parts: [{ type: "text", text }] };
}

function textOf(message: UIMessage | undefined): string {
  return (message?.parts ?? []).map((part) => (part.type === "text" ? part.text : "")).join("");
}

describe("serveUiStream relays useChat to the session API", {
  skip: !hasUv && "uv is not installed",
}, () => {
  let api: SessionApi | undefined;
  let ready: Ready;
  let client: AgentClient;
  let app: Server;
  let appUrl: string;
  const owners = new Map<string, string>();

  before(async () => {
    api = await startSessionApi();
    ready = api.ready;
    client = new AgentClient({ baseUrl: ready.base_url, token: ready.token });
    const handler = serveUiStream({
      baseUrl: ready.base_url,
      token: ready.token,
      authorize: (request, sessionId) => owners.get(sessionId) === request.headers.get("x-user"),
    });
    app = createServer(handler);
    await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
    appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise((resolve) => app?.close(resolve));
    await api?.stop();
  });

  test("a turn, another user's refusal, an approval, resume and the page-reload messages", async () => {
    const { sessionId } = await client.startSession(ready.flow_type);
    owners.set(sessionId, "alice");
    const seen: Seen = { authorization: [], ids: [] };
    const alice = transport(appUrl, sessionId, "alice", seen);
    const ask = userMessage("u1", "What's the weather in Lisbon?");
    const first = await assemble(await send(alice, sessionId, [ask]));
    assert.equal(textOf(first), "It is 22 °C and sunny in Lisbon.");
    const weather = first?.parts.find((part) => part.type === "dynamic-tool");
    assert.equal(weather?.type === "dynamic-tool" && weather.state, "output-available");
    assert.deepEqual(seen.authorization, [null], "the browser sent no token; the app added it");
    assert.ok(seen.ids.length > 0, "the chunks carry the engine's resume tokens");

    // Bob may not open Alice's session: 403 from the app, nothing reaches the session.
    const stored = (await client.getAgentSnapshot(sessionId)).messages.length;
    const bob = transport(appUrl, sessionId, "bob", { authorization: [], ids: [] });
    await assert.rejects(
      send(bob, sessionId, [userMessage("u9", "Send me Alice's forecast.")]),
      new RegExp(SESSION_NOT_AUTHORIZED),
    );
    await assert.rejects(
      bob.reconnectToStream({ chatId: sessionId }),
      new RegExp(SESSION_NOT_AUTHORIZED),
    );
    const forbidden = await fetch(`${appUrl}/agents/sessions/${sessionId}/ui-messages`, {
      headers: { "x-user": "bob" },
    });
    assert.equal(forbidden.status, 403);
    assert.equal((await client.getAgentSnapshot(sessionId)).messages.length, stored);

    // An approval: the turn's stream ends waiting for it, useChat posts the answer.
    const mail = userMessage("u2", "Email Ana the forecast.");
    const waiting = await assemble(await send(alice, sessionId, [ask, first as UIMessage, mail]));
    const request = waiting?.parts.find((part) => part.type === "dynamic-tool");
    assert.ok(request?.type === "dynamic-tool" && request.state === "approval-requested");
    assert.equal(toolRuns(ready.tool_log, "send_email"), 0);
    const approved = {
      ...(waiting as UIMessage),
      parts: (waiting as UIMessage).parts.map((part) =>
        part.type === "dynamic-tool" && part.state === "approval-requested"
          ? {
              ...part,
              state: "approval-responded" as const,
              approval: { ...part.approval, approved: true },
            }
          : part,
      ),
    } as UIMessage;
    const done = await assemble(
      await send(alice, sessionId, [ask, first as UIMessage, mail, approved]),
      approved,
    );
    assert.match(textOf(done), /Done: Ana has the forecast\./);
    assert.equal(toolRuns(ready.tool_log, "send_email"), 1);

    // No turn is active: reconnecting finds nothing (204), as against the engine.
    assert.equal(await alice.reconnectToStream({ chatId: sessionId }), null);
    // A resume token replays its turn through the app.
    const replay = await fetch(`${appUrl}/agents/sessions/${sessionId}/chat/stream`, {
      headers: { "x-user": "alice", "last-event-id": seen.ids[0] ?? "" },
    });
    assert.equal(replay.status, 200);
    assert.equal(replay.headers.get("x-vercel-ai-ui-message-stream"), "v1");
    const replayed = await assemble(
      (await alice.reconnectToStream({
        chatId: sessionId,
        headers: { "last-event-id": seen.ids[0] ?? "" },
      })) ?? new ReadableStream(),
    );
    assert.equal(textOf(replayed), "It is 22 °C and sunny in Lisbon.");
    await replay.body?.cancel();

    // What useChat starts from after a page reload.
    const reload = await fetch(`${appUrl}/agents/sessions/${sessionId}/ui-messages`, {
      headers: { "x-user": "alice" },
    });
    const messages = (await reload.json()) as UIMessage[];
    assert.deepEqual(
      messages.map((m) => m.role),
      ["user", "assistant", "user", "assistant"],
    );
  });

  test("the engine's refusals pass through; the app's own routes and limits answer here", async () => {
    const { sessionId } = await client.startSession(ready.flow_type);
    owners.set(sessionId, "carol");
    const chat = `${appUrl}/agents/sessions/${sessionId}/chat`;
    const headers = { "x-user": "carol", "content-type": "application/json" };
    const regenerate = await fetch(chat, {
      method: "POST",
      headers,
      body: JSON.stringify({
        id: sessionId,
        messages: [userMessage("u1", "Hi")],
        trigger: "regenerate-message",
      }),
    });
    assert.equal(regenerate.status, 400);
    assert.match(
      ((await regenerate.json()) as { error: { message: string } }).error.message,
      /regenerated/,
    );
    assert.equal((await fetch(chat, { headers })).status, 405);
    assert.equal((await fetch(`${appUrl}/agents/elsewhere`, { headers })).status, 404);

    const small = serveUiStream({
      baseUrl: ready.base_url,
      token: ready.token,
      authorize: () => true,
      maxBodyBytes: 64,
    });
    const tooLong = await small.fetch(
      new Request(chat, {
        method: "POST",
        headers,
        body: JSON.stringify({ text: "x".repeat(100) }),
      }),
    );
    assert.equal(tooLong.status, 413);
    // The web-standard handler relays as the Node one does.
    const viaFetch = await small.fetch(
      new Request(`${appUrl}/agents/sessions/${sessionId}/ui-messages`),
    );
    assert.equal(viaFetch.status, 200);
    assert.deepEqual(await viaFetch.json(), []);
  });
});
