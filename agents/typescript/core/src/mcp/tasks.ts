/**
 * The SDK's 2025-11-25 tasks for a `taskSupport: "required"` tool: the handle saved as the
 * attempt's heartbeat checkpoint, one `tasks/get` per poll, and the tool Step's own bounded
 * wait for a task that only its own connection can poll (a stdio server's, or a stateful HTTP
 * server's, which the SDK's task store binds to the protocol session the request ends).
 */

import { setTimeout as sleep } from "node:timers/promises";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { CallToolResultSchema, type GetTaskResult } from "@modelcontextprotocol/sdk/types.js";
import type { ToolExecutionResult } from "../runner.js";
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
