/** The transcript store and the transcript records, in-process. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { RecordSessionStore } from "../src/store.js";
import { historyOf, TURN_KIND, withoutPromptSnapshots } from "../src/transcript.js";
import { stored } from "./support.js";

test("the store loads what was preloaded and appended, once per uuid, and reports only the appended", async () => {
  const store = new RecordSessionStore();
  store.preload("s1", { "": [{ type: "user", uuid: "u1" }], "subagents/a": [{ type: "user", uuid: "x1" }] });
  const key = { projectKey: "anything", sessionId: "s1" };
  await store.append(key, [
    { type: "user", uuid: "u1" },
    { type: "assistant", uuid: "u2" },
  ]);
  await store.append(key, [{ type: "assistant", uuid: "u2" }, { type: "tag" }]);

  assert.deepEqual(await store.load(key), [
    { type: "user", uuid: "u1" },
    { type: "assistant", uuid: "u2" },
    { type: "tag" },
  ]);
  assert.deepEqual(store.appended(), { "": [{ type: "assistant", uuid: "u2" }, { type: "tag" }] });
  assert.deepEqual(await store.listSubkeys(key), ["subagents/a"]);
  assert.equal(await store.load({ projectKey: "p", sessionId: "other" }), null);
  const loaded = await store.load(key);
  loaded?.push({ type: "mutated" });
  assert.equal((await store.load(key))?.length, 3); // load hands out a copy
});

test("prompt snapshots are left out and the entries after them relinked to their parent", () => {
  const entries = [
    { type: "user", uuid: "a", parentUuid: null },
    { type: "attachment", uuid: "snap", parentUuid: "a", attachment: { type: "prompt_snapshot" } },
    { type: "assistant", uuid: "b", parentUuid: "snap" },
  ];
  assert.deepEqual(withoutPromptSnapshots(entries), [
    { type: "user", uuid: "a", parentUuid: null },
    { type: "assistant", uuid: "b", parentUuid: "a" },
  ]);
});

test("the history is the earlier turns' entries, and the prompt the user texts since the last turn", () => {
  const turn = (sessionId: string, uuid: string) =>
    JSON.stringify({
      kind: TURN_KIND,
      session_id: sessionId,
      entries: { "": [{ type: "user", uuid }] },
      cost_usd: null,
      result: { num_turns: 1, stop_reason: "end_turn" },
    });
  const history = historyOf(
    stored([
      { role: "user", frameworkItem: "{}", text: "one" },
      { role: "assistant", frameworkItem: turn("s1", "e1"), text: "first" },
      { role: "user", frameworkItem: "{}", text: "two" },
      { role: "assistant", frameworkItem: turn("s1", "e2"), text: "second" },
      { role: "user", frameworkItem: "{}", text: "three" },
      { role: "user", frameworkItem: "{}", text: "four" },
    ]),
  );
  assert.deepEqual(history, {
    sessionId: "s1",
    entries: {
      "": [
        { type: "user", uuid: "e1" },
        { type: "user", uuid: "e2" },
      ],
    },
    prompts: ["three", "four"],
  });
});
