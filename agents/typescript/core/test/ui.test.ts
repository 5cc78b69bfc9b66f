/** The UI conversion against fixtures the Python conversion made of the same snapshots
 *  (test/fixtures/make_ui_fixtures.py): the same UI messages, part for part. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { snapshotFromJson } from "../src/client.js";
import * as texts from "../src/texts.js";
import { convertAgentSnapshotToUIMessages } from "../src/ui.js";

interface Fixtures {
  texts: Record<string, string>;
  cases: Record<string, { snapshot: Record<string, unknown>; ui_messages: unknown }>;
}

const fixtures = JSON.parse(
  readFileSync(new URL("../../test/fixtures/ui-fixtures.json", import.meta.url), "utf8"),
) as Fixtures;

test("the engine's fixed texts are the Python core's", () => {
  const ours = texts as unknown as Record<string, string>;
  for (const [name, value] of Object.entries(fixtures.texts)) {
    assert.equal(ours[name], value, name);
  }
});

for (const [name, fixture] of Object.entries(fixtures.cases)) {
  test(`${name}: the same UI messages as the Python conversion`, () => {
    const snapshot = snapshotFromJson(fixture.snapshot);
    assert.equal(snapshot.sessionId, `s-${name}`);
    const ours = convertAgentSnapshotToUIMessages(snapshot);
    assert.deepStrictEqual(JSON.parse(JSON.stringify(ours)), fixture.ui_messages);
    // The same JSON text, key order included, as a page would receive from the API.
    assert.equal(JSON.stringify(ours), JSON.stringify(fixture.ui_messages));
  });
}
