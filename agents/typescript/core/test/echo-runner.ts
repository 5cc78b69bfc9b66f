/** A small real runner for the serveRunners tests: its "framework" replies with the texts it
 *  was given and calls tools by name; it counts what it parses and what its tools do. */

import {
  type AgentFrameworkRunner,
  type AgentTurnContext,
  type AgentTurnOutcome,
  currentToolExecution,
  type DeferredToolExecution,
  type DeferredToolOutcome,
  ToolExecutionError,
} from "../src/runner.js";

/** The class as another installed copy of the package defines it. */
class ToolExecutionErrorCopy extends Error {}
const ForeignToolExecutionError = {
  ToolExecutionError: class ToolExecutionError extends ToolExecutionErrorCopy {},
}.ToolExecutionError;

export type EchoItem = { from: "user"; text: string } | { from: "model"; said: string };

export class EchoRunner implements AgentFrameworkRunner<EchoItem> {
  parsed: string[] = [];
  built: string[] = [];
  turns: AgentTurnContext<EchoItem>[] = [];
  toolRuns: { key: string | undefined; args: string }[] = [];
  sawAbort: Promise<boolean>;
  private resolveAbort: (value: boolean) => void = () => undefined;
  /** How the next runModelStep behaves. */
  mode: "reply" | "stream" | "silent" | "hang" | "fail" = "reply";

  constructor() {
    this.sawAbort = new Promise((resolve) => {
      this.resolveAbort = resolve;
    });
  }

  parseItem(frameworkItem: string): EchoItem {
    this.parsed.push(frameworkItem);
    const value = JSON.parse(frameworkItem) as { said: string };
    return { from: "model", said: value.said };
  }

  buildUserMessage(text: string): EchoItem {
    this.built.push(text);
    return { from: "user", text };
  }

  async runModelStep(turn: AgentTurnContext<EchoItem>): Promise<AgentTurnOutcome> {
    this.turns.push(turn);
    if (this.mode === "fail") throw new Error("the model is down");
    if (this.mode === "hang") return this.hang(turn.cancellationSignal);
    if (this.mode === "stream") {
      turn.events.write("text_delta", { delta: "Hel", nested_key: { a_b: 1 } });
      turn.heartbeat();
      turn.events.write("text_delta", { delta: "lo" });
    }
    if (this.mode === "silent") await new Promise((resolve) => setTimeout(resolve, 250));
    const said = turn.items.map((i) => (i.from === "user" ? i.text : i.said)).join("|");
    return {
      kind: "turn_completed",
      newMessages: [{ role: "assistant", frameworkItem: JSON.stringify({ said }), text: said }],
      usage: {
        modelCalls: 1,
        inputTokens: 3,
        outputTokens: 2,
        cachedInputTokens: 0,
        reasoningTokens: 0,
      },
      modelCallMetadata: { responseModel: "echo-1", finishReasons: ["stop"] },
    };
  }

  private hang(signal: AbortSignal): Promise<never> {
    return new Promise((_resolve, reject) => {
      signal.addEventListener("abort", () => {
        this.resolveAbort(signal.aborted);
        reject(signal.reason);
      });
    });
  }

  async executeDeferredToolCall(
    call: DeferredToolExecution<EchoItem>,
  ): Promise<DeferredToolOutcome> {
    const args = JSON.parse(call.toolCall.arguments) as {
      fail?: string;
      crash?: string;
      foreign?: string;
      status?: number;
    };
    if (args.status) throw providerError(args.status);
    if (args.fail) throw new ToolExecutionError(args.fail);
    if (args.foreign) throw new ForeignToolExecutionError(args.foreign);
    if (args.crash) throw new TypeError(args.crash);
    await call.saveHeartbeatCheckpoint("half-way");
    await new Promise((resolve) => setTimeout(resolve, 5));
    // A tool reads its execution from anywhere below the call, across awaits.
    this.toolRuns.push({
      key: currentToolExecution()?.idempotencyKey,
      args: call.toolCall.arguments,
    });
    return { kind: "tool_execution_result", output: JSON.stringify({ ok: true }) };
  }

  async buildUnfinishedTurnMessages(turn: AgentTurnContext<EchoItem>) {
    return [
      {
        role: "assistant" as const,
        frameworkItem: JSON.stringify({ said: `unfinished ${turn.turnId}` }),
      },
    ];
  }
}

/** A provider's HTTP error as the AI SDK throws it after its own retries: a retry wrapper
 *  whose last error carries the status and the answer's headers. */
function providerError(status: number): Error {
  const last = Object.assign(new Error(`provider said ${status}`), {
    statusCode: status,
    responseHeaders: { "Retry-After": "2", "content-type": "application/json" },
  });
  return Object.assign(new Error(`Failed after 3 attempts. Last error: ${last.message}`), {
    lastError: last,
  });
}
