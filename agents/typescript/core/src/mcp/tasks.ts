/**
 * The SDK's 2025-11-25 tasks for a `taskSupport: "required"` tool: the handle saved as the
 * attempt's heartbeat checkpoint, one `tasks/get` per poll, and the tool Step's own bounded
 * wait for a task that only its own connection can poll (a stdio server's, or a stateful HTTP
 * server's, which the SDK's task store binds to the protocol session the request ends).
 * Across Steps a poll's continuation tells the next poll the status it saw and since when the
 * server could not be reached, so a poll waits out a server outage instead of failing at once.
 */

import { setTimeout as sleep } from "node:timers/promises";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { CallToolResultSchema, type GetTaskResult } from "@modelcontextprotocol/sdk/types.js";
import type { ToolExecutionResult, ToolTaskPending, ToolTaskPoll } from "../runner.js";
import { ToolExecutionError } from "../runner.js";
import { mcpInputNotSupported, mcpTaskCancelled, mcpTaskFailed } from "../texts.js";
import { ToolCallInterruptedError } from "../tool-source.js";
import { intervalSeconds } from "./names.js";
import { resultOf } from "./results.js";

const CHECKPOINT_WRITER = "@superdurable/dex-agents/mcp/task";
/** How a 2025-11-25 task input request is named in the failure text: its answer must come on
 *  the task's live connection, which a Step does not keep. */
export const TASK_INPUT_REQUEST =
  "a task input request, which must be answered on the task's live connection";

/** A request was sent and no result came back; it fails the Step's attempt, so the call's
 *  effect decides what follows (a new request for read and idempotent_write, outcome_unknown
 *  for a single-attempt write). */
export class McpToolCallInterruptedError extends ToolCallInterruptedError {
  override name = "McpToolCallInterruptedError";
}

/** The server no longer knows the task: the attempt fails, and after its attempts the call is
 *  recorded by its effect. */
export class McpTaskLostError extends Error {
  override name = "McpTaskLostError";
}

/** A task poll or cancellation that could not reach its server. A poll is tried again at its
 *  interval for the server's `taskOutageMs` (`waitOutOutage`), then, as a cancellation at once,
 *  the Step's attempts retry it, and the failure route by effect follows the last. */
export class McpTaskUnreachableError extends Error {
  override name = "McpTaskUnreachableError";
}

/** What one poll tells the next (as `{"status", "unreachable_since"}` JSON): the status it saw,
 *  and since when (epoch seconds) the server could not be reached, while it cannot. */
export interface Continuation {
  status: string | null;
  unreachableSince: number | null;
}

export function dumpContinuation(continuation: Continuation): string {
  return JSON.stringify({
    status: continuation.status ?? undefined,
    unreachable_since: continuation.unreachableSince ?? undefined,
  });
}

/** The continuation of the last poll; an earlier version's, the status alone, reads as it. */
export function loadContinuation(text: string | null | undefined): Continuation {
  if (!text) return { status: null, unreachableSince: null };
  let value: unknown = text;
  try {
    value = JSON.parse(text);
  } catch {
    // the status alone
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { status: typeof value === "string" ? value : text, unreachableSince: null };
  }
  const { status, unreachable_since: since } = value as Record<string, unknown>;
  return {
    status: typeof status === "string" ? status : null,
    unreachableSince: typeof since === "number" && Number.isFinite(since) ? since : null,
  };
}

/** The next poll of a task whose server could not be reached, at the growing interval, while
 *  the outage is shorter than `outageMs`; then `failure`. A poll that was to deliver an answer
 *  fails its attempt instead, so the answer stays pending. */
export function waitOutOutage(
  poll: ToolTaskPoll,
  failure: McpTaskUnreachableError,
  outageMs: number,
  warn: (message: string) => void,
): ToolTaskPending {
  const previous = loadContinuation(poll.toolCall.inputContinuation);
  const now = Date.now() / 1000;
  const since = previous.unreachableSince ?? now;
  if (poll.pendingAnswer !== null || (now - since) * 1000 >= outageMs) throw failure;
  const interval = intervalSeconds(null, poll.toolCall.taskPollIntervalSeconds);
  warn(`${failure.message}; polling again in ${interval} s`);
  return {
    kind: "tool_task_pending",
    pollIntervalSeconds: interval,
    continuation: dumpContinuation({ ...previous, unreachableSince: since }),
  };
}

/** A started task's handle, as the attempt's heartbeat checkpoint. */
export interface TaskCheckpoint {
  server: string;
  taskId: string;
  pollIntervalSeconds: number;
}

export function dumpCheckpoint(checkpoint: TaskCheckpoint): string {
  return JSON.stringify({
    writer: CHECKPOINT_WRITER,
    server: checkpoint.server,
    task_id: checkpoint.taskId,
    poll_interval_seconds: checkpoint.pollIntervalSeconds,
  });
}

/** The checkpoint this source wrote; another writer's reads as null. */
export function loadCheckpoint(text: string | null): TaskCheckpoint | null {
  try {
    const value = JSON.parse(text ?? "") as Record<string, unknown>;
    if (value?.writer !== CHECKPOINT_WRITER) return null;
    const seconds = Number(value.poll_interval_seconds);
    if (typeof value.server !== "string" || typeof value.task_id !== "string") return null;
    if (!(seconds > 0)) return null;
    return { server: value.server, taskId: value.task_id, pollIntervalSeconds: seconds };
  } catch {
    return null;
  }
}

/** Reads task `taskId` of tool `tool` on server `server` over `client`. */
export class TaskPoller {
  constructor(
    readonly client: Client,
    readonly server: string,
    readonly tool: string,
    readonly taskId: string,
    readonly timeoutMs: number,
  ) {}

  async read(): Promise<GetTaskResult> {
    return await this.client.experimental.tasks.getTask(this.taskId, { timeout: this.timeoutMs });
  }

  async cancelQuietly(): Promise<void> {
    // Best-effort: the call is already failing.
    await this.client.experimental.tasks
      .cancelTask(this.taskId, { timeout: this.timeoutMs })
      .catch(() => undefined);
  }

  /** The outcome of a task in a terminal state or in input_required (which is cancelled). */
  async finished(state: GetTaskResult): Promise<ToolExecutionResult> {
    if (state.status === "completed") {
      const result = await this.client.experimental.tasks.getTaskResult(
        this.taskId,
        CallToolResultSchema,
        { timeout: this.timeoutMs },
      );
      return resultOf(this.server, this.tool, result);
    }
    if (state.status === "cancelled") {
      throw new ToolExecutionError(mcpTaskCancelled(this.tool, this.server));
    }
    if (state.status === "input_required") {
      await this.cancelQuietly();
      throw new ToolExecutionError(
        mcpInputNotSupported(this.tool, this.server, TASK_INPUT_REQUEST),
      );
    }
    const error = state.statusMessage || "no detail";
    throw new ToolExecutionError(mcpTaskFailed(this.tool, this.server, error));
  }

  static ends(state: GetTaskResult): boolean {
    return ["completed", "failed", "cancelled", "input_required"].includes(state.status);
  }

  /** Polls until the task ends or `waitMs` pass, a heartbeat per poll; a task still running
   *  then is cancelled and the attempt fails as interrupted. */
  async wait(
    intervalS: number,
    waitMs: number,
    heartbeat: () => void,
    signal?: AbortSignal,
  ): Promise<ToolExecutionResult> {
    const until = Date.now() + waitMs;
    let interval = intervalS;
    while (Date.now() + interval * 1000 <= until) {
      await sleep(interval * 1000, undefined, signal ? { signal } : {});
      const state = await this.read();
      heartbeat();
      if (TaskPoller.ends(state)) return await this.finished(state);
      interval = intervalSeconds(state.pollInterval, interval);
    }
    await this.cancelQuietly();
    throw new McpToolCallInterruptedError(
      `MCP tool ${this.tool} of server ${this.server} started task ${this.taskId}, which did ` +
        `not end within ${waitMs / 1000} s; it was cancelled`,
    );
  }
}
