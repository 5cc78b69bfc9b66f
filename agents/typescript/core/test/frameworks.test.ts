/**
 * serveRunners mounted in Express and Fastify, whose JSON body parsers read the request before
 * the handler does: the handler takes the body they parsed, and says what to do when a parser
 * read it and kept nothing.
 */
import assert from "node:assert/strict";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import express from "express";
import Fastify, { type FastifyInstance } from "fastify";
import { serveRunners } from "../src/serve.js";
import { EchoRunner } from "./echo-runner.js";
import { lines, post, turnBody, userMessage } from "./helpers.js";

const TOKEN = "runner-secret";
const auth = { authorization: `Bearer ${TOKEN}` };

async function aTurn(url: string, text: string): Promise<Record<string, unknown>[]> {
  const body = turnBody(
    [userMessage(1, text)],
    { first: 1, last: 1, after: 0 },
    { flow_id: `s-${text}` },
  );
  return await lines(await post(url, "run_model_step", body, { headers: auth }));
}

function listening(server: Server): string {
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("serveRunners in Express, after express.json()", { timeout: 20_000 }, () => {
  const echo = new EchoRunner();
  const runners = serveRunners({ Echo: echo }, { token: TOKEN });
  let server: Server;
  let base: string;
  before(async () => {
    const app = express();
    app.use(express.json({ limit: "10mb" }));
    app.use("/dex", runners);
    // A parser that reads the body and keeps nothing (express.raw's verify-only use).
    app.use("/lost", express.raw({ type: () => true }), (req, _res, next) => {
      req.body = undefined;
      next();
    });
    app.use("/lost", runners);
    server = await new Promise<Server>((resolve) => {
      const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
    });
    base = listening(server);
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test("a model step streams its lines from the body express.json() parsed", async () => {
    const got = await aTurn(`${base}/dex`, "from express");
    assert.deepEqual(got[0], { accepted: true });
    assert.ok("result" in (got.at(-1) ?? {}));
    assert.equal(echo.turns.at(-1)?.messages.at(-1)?.text, "from express");
  });

  test("a body read and dropped by another handler is a clear error, not a hang", async () => {
    const response = await post(
      `${base}/lost`,
      "run_model_step",
      turnBody([userMessage(1, "x")], { first: 1, last: 1, after: 0 }),
      { headers: auth },
    );
    assert.equal(response.status, 500);
    const { error } = (await response.json()) as { error: { message: string } };
    assert.match(error.message, /mount serveRunners before body parsers/);
  });
});

describe("serveRunners in Fastify, given the body Fastify parsed", { timeout: 20_000 }, () => {
  const echo = new EchoRunner();
  const runners = serveRunners({ Echo: echo }, { token: TOKEN });
  let app: FastifyInstance;
  let base: string;
  before(async () => {
    app = Fastify();
    app.all("/dex/*", (request, reply) => {
      reply.hijack();
      runners(Object.assign(request.raw, { body: request.body }), reply.raw);
    });
    await app.listen({ port: 0, host: "127.0.0.1" });
    base = listening(app.server);
  });
  after(() => app.close());

  test("describe and a model step", async () => {
    const described = await fetch(`${base}/dex/describe`, { headers: auth });
    assert.equal(described.status, 200);
    assert.deepEqual(Object.keys(((await described.json()) as { flows: object }).flows), ["Echo"]);
    const got = await aTurn(`${base}/dex`, "from fastify");
    assert.deepEqual(got[0], { accepted: true });
    assert.ok("result" in (got.at(-1) ?? {}));
    assert.equal(echo.turns.at(-1)?.messages.at(-1)?.text, "from fastify");
  });
});
