/**
 * What a turn reports from the SDK's stream messages: text deltas, tool calls and results, the
 * final answer and usage.
 */
import type { SDKMessage, SDKResultMessage } from "@anthropic-ai/claude-agent-sdk";
import { builtInOf } from "./builtins.js";
import type { AgentTurnContext, AgentUsage, FrameworkMessage } from "./dex.js";

interface Block {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: unknown;
}

/** Collects one CLI run's messages as the turn's stored messages and usage. */
export class TurnRecorder {
  readonly messages: FrameworkMessage[] = [];
  readonly results: SDKResultMessage[] = [];
  readonly #texts: string[] = [];
  readonly #turn: AgentTurnContext;
  readonly #builtIns: readonly string[];
  modelCalls = 0;

  /** `builtIns`: the built-ins the run offers, whose calls are reported under their own names. */
  constructor(turn: AgentTurnContext, builtIns: readonly string[] = []) {
    this.#turn = turn;
    this.#builtIns = builtIns;
  }

  observe(message: SDKMessage): void {
    if (message.type === "stream_event" && message.parent_tool_use_id === null) {
      const event = message.event;
      if (event.type === "message_start") this.modelCalls += 1;
      if (event.type === "content_block_delta" && event.delta.type === "text_delta") {
        this.#turn.events.write("text_delta", { text: event.delta.text });
      }
    } else if (message.type === "assistant" && message.parent_tool_use_id === null) {
      for (const block of message.message.content as Block[]) this.#assistantBlock(block);
    } else if (message.type === "user" && message.parent_tool_use_id === null) {
      const content = message.message.content;
      if (typeof content !== "string") for (const block of content as Block[]) this.#toolResult(block);
    } else if (message.type === "result") {
      this.results.push(message);
    }
  }

  /** The run's answer: its last result. The pinned CLI starts a run that resumes a deferred call
   *  with an error result of its own (`tool_deferred_unavailable`: it looks for the tool before
   *  the in-process servers are connected), then runs the call once they are and reports the
   *  run's real result; an earlier error result of any other kind is the answer. */
  get result(): SDKResultMessage | undefined {
    const failed = this.results
      .slice(0, -1)
      .find((result) => result.is_error && result.terminal_reason !== "tool_deferred_unavailable");
    return failed ?? this.results[this.results.length - 1];
  }

  finalText(): string {
    const result = this.result;
    if (result !== undefined && result.subtype === "success") return result.result;
    return this.#texts[this.#texts.length - 1] ?? "";
  }

  usage(): AgentUsage {
    const usage = this.result?.usage;
    return {
      modelCalls: this.modelCalls,
      inputTokens: usage?.input_tokens ?? 0,
      outputTokens: usage?.output_tokens ?? 0,
      cachedInputTokens: usage?.cache_read_input_tokens ?? 0,
      reasoningTokens: 0,
    };
  }

  #assistantBlock(block: Block): void {
    if (block.type === "text" && block.text !== undefined) {
      this.#texts.push(block.text);
    } else if (block.type === "tool_use" && block.id !== undefined) {
      this.messages.push({
        role: "assistant",
        frameworkItem: JSON.stringify({ tool_use: block.id }),
        toolCallId: block.id,
        toolName: builtInOf(block.name ?? "", this.#builtIns) ?? block.name ?? "",
        toolArguments: JSON.stringify(block.input ?? {}),
      });
    }
  }

  #toolResult(block: Block): void {
    if (block.type !== "tool_result" || block.tool_use_id === undefined) return;
    this.messages.push({
      role: "tool",
      frameworkItem: JSON.stringify({ tool_result: block.tool_use_id }),
      toolCallId: block.tool_use_id,
      toolOutput: outputText(block.content),
    });
  }
}

/** `messages` with each tool result named as its call: the CLI's result carries only the
 *  tool_use ID, and a deferred call's result comes in a later run than the call. */
export function withToolNames(messages: readonly FrameworkMessage[]): FrameworkMessage[] {
  const names = new Map<string, string>();
  for (const m of messages) {
    if (m.role === "assistant" && m.toolCallId != null && m.toolName != null) names.set(m.toolCallId, m.toolName);
  }
  return messages.map((m) => {
    const name = m.role === "tool" && m.toolName == null && m.toolCallId != null ? names.get(m.toolCallId) : undefined;
    return name === undefined ? m : { ...m, toolName: name };
  });
}

function outputText(content: unknown): string {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  const parts = (content as Block[]).filter((item) => item.type === "text").map((item) => item.text ?? "");
  return parts.length > 0 ? parts.join("") : JSON.stringify(content);
}
