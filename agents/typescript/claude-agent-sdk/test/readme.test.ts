/**
 * The README's example is e2e/readme-example.ts, which e2e/test_features.py runs through a
 * Worker: the two must not drift apart.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

test("the README's TypeScript example is e2e/readme-example.ts", () => {
  const readme = readFileSync("README.md", "utf8");
  const example = readFileSync("e2e/readme-example.ts", "utf8").replace(
    'from "../src/index.js";',
    'from "@superdurable/dex-agents-claude-agent-sdk";',
  );
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]);
  assert.ok(blocks.includes(example), "README.md's example differs from e2e/readme-example.ts");
});
