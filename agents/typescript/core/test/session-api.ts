/** The real session API for the client's and the UI-stream handler's tests: `dex-agents serve`
 *  and a Worker hosting the core's demo flow on a scripted model (test/harness/serve_demo.py),
 *  on a temporary SQLite file, started through `uv`. */

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const PACKAGE = fileURLToPath(new URL("../../", import.meta.url));
const CORE = fileURLToPath(new URL("../../../../python/core", import.meta.url));

export const hasUv = spawnSync("uv", ["--version"]).status === 0;

/** What the harness prints once everything answers. */
export interface Ready {
  base_url: string;
  token: string;
  flow_type: string;
  tool_log: string;
}

export interface SessionApi {
  ready: Ready;
  /** Ends the harness (it stops the server and the Worker) and waits for it. */
  stop(): Promise<void>;
}

export function startSessionApi(): Promise<SessionApi> {
  const child = spawn("uv", ["run", "--project", CORE, "python", "test/harness/serve_demo.py"], {
    cwd: PACKAGE,
    stdio: ["pipe", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the session API did not start")), 120_000);
    child.once("exit", (code) => reject(new Error(`the harness exited with ${code}`)));
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once("line", (line) => {
      clearTimeout(timer);
      resolve({ ready: JSON.parse(line) as Ready, stop: () => stop(child) });
    });
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.stdin?.end();
  await exited;
}

/** How many times the demo flow's tool `name` really ran (its tool log, kept outside the
 *  database). */
export function toolRuns(path: string, name: string): number {
  let text = "";
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return 0;
  }
  return text.split("\n").filter((line) => line.includes(`"${name}"`)).length;
}
