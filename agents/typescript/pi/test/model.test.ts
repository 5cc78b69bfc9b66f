/**
 * piModelClient on pi-ai's own faux provider (in process): deltas, the reply and its usage,
 * the context pi-ai receives, a failure that throws, and an abort.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import {
  type Context,
  fauxAssistantMessage,
  fauxText,
  fauxThinking,
  fauxToolCall,
  registerFauxProvider,
} from "@mariozechner/pi-ai";
import { PiModelError, piModelClient } from "../src/index.js";
import { modelRequest } from "./support.js";

const faux = registerFauxProvider({ provider: "faux-test", models: [{ id: "faux-model", reasoning: true }] });
after(() => faux.unregister());

const WEATHER = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "The weather.",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};

describe("piModelClient on the faux provider", () => {
  test("streams text and thinking deltas and returns the reply with its usage", async () => {
    faux.setResponses([fauxAssistantMessage([fauxThinking("Let me see."), fauxText("Sunny in Lisbon.")])]);
    const request = modelRequest([{ role: "user", content: "Weather?" }]);
    const reply = await piModelClient(faux.getModel()).complete(request);

    assert.equal(request.texts.join(""), "Sunny in Lisbon.");
    assert.equal(request.reasonings.join(""), "Let me see.");
    assert.deepEqual(reply.item, { role: "assistant", content: "Sunny in Lisbon." });
    assert.equal(reply.usage.modelCalls, 1);
    assert.ok(reply.usage.inputTokens > 0 && reply.usage.outputTokens > 0);
    assert.deepEqual(reply.metadata.finishReasons, ["stop"]);
    assert.equal(reply.metadata.requestModel, "faux-model");
  });

  test("a tool call comes back as an assistant item, and the history reaches pi-ai as its messages", async () => {
    let seen: Context | undefined;
    faux.setResponses([
      (context) => {
        seen = context;
        return fauxAssistantMessage(fauxToolCall("get_weather", { city: "Porto" }, { id: "c2" }), {
          stopReason: "toolUse",
        });
      },
    ]);
    const request = modelRequest(
      [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Lisbon?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "c1", type: "function", function: { name: "get_weather", arguments: '{"city":"Lisbon"}' } },
          ],
        },
        { role: "tool", tool_call_id: "c1", content: "Sunny in Lisbon" },
        { role: "assistant", content: "Sunny." },
        { role: "user", content: "And Porto?" },
      ],
      { tools: [WEATHER] },
    );
    const reply = await piModelClient(faux.getModel()).complete(request);

    assert.deepEqual(reply.item, {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c2", type: "function", function: { name: "get_weather", arguments: '{"city":"Porto"}' } }],
    });
    assert.deepEqual(reply.metadata.finishReasons, ["tool_calls"]);
    assert.ok(seen !== undefined);
    assert.equal(seen.systemPrompt, "Be brief.");
    assert.deepEqual(
      seen.messages.map((m) => m.role),
      ["user", "assistant", "toolResult", "assistant", "user"],
    );
    const result = seen.messages[2];
    assert.ok(result?.role === "toolResult");
    assert.equal(result.toolName, "get_weather");
    assert.deepEqual(result.content, [{ type: "text", text: "Sunny in Lisbon" }]);
    const call = seen.messages[1];
    assert.ok(call?.role === "assistant");
    assert.deepEqual(call.content, [
      { type: "toolCall", id: "c1", name: "get_weather", arguments: { city: "Lisbon" } },
    ]);
    assert.deepEqual(
      seen.tools?.map((t) => t.name),
      ["get_weather"],
    );
  });

  test("a call that ends with stopReason error throws, so the model Step's attempt fails", async () => {
    faux.setResponses([fauxAssistantMessage("", { stopReason: "error", errorMessage: "overloaded" })]);
    await assert.rejects(
      piModelClient(faux.getModel()).complete(modelRequest([{ role: "user", content: "Hi" }])),
      (error: unknown) =>
        error instanceof PiModelError && error.message === "overloaded" && error.statusCode === undefined,
    );
  });

  test("aborting the turn's signal aborts the call", async () => {
    const slow = registerFauxProvider({ provider: "faux-slow", models: [{ id: "slow" }], tokensPerSecond: 5 });
    try {
      slow.setResponses([fauxAssistantMessage("word ".repeat(200))]);
      const controller = new AbortController();
      const request = modelRequest([{ role: "user", content: "Talk." }], { cancellationSignal: controller.signal });
      const call = piModelClient(slow.getModel()).complete(request);
      setTimeout(() => controller.abort(new Error("turn cancelled")), 300);
      await assert.rejects(call, /turn cancelled/);
      assert.ok(request.texts.join("").length < 1000);
    } finally {
      slow.unregister();
    }
  });

  test("a forced tool choice is supported where the API's forced choice is known", () => {
    assert.equal(piModelClient(faux.getModel()).supportsForcedToolChoice(), false);
    assert.equal(piModelClient(faux.getModel(), { forcedToolChoice: true }).supportsForcedToolChoice(), true);
    const completions = { ...faux.getModel(), api: "openai-completions" };
    assert.equal(piModelClient(completions).supportsForcedToolChoice(), true);
  });
});
