/**
 * Stepwise's items (Chat Completions messages, the stored run state) as a pi-ai `Context`, and
 * a pi-ai `AssistantMessage` back as one assistant item.
 *
 * Stepwise stores every message as Chat Completions JSON, so a session's history reads the
 * same whichever model client wrote it; each call turns it into pi-ai's messages (system text
 * as the system prompt, tool results as `toolResult` messages) and the reply back.
 */

import type {
  Api,
  AssistantMessage,
  Context,
  Message,
  Model,
  TextContent,
  Tool,
  ToolCall,
  ToolResultMessage,
  Usage,
} from "@mariozechner/pi-ai";
import type { AgentUsage, ChatItem, ChatToolCall, ModelRequest } from "@superdurable/dex-agents";

type FunctionToolDefinition = ModelRequest["tools"][number];

const NO_USAGE: Usage = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

/** A message's content as text: parts show their text. */
export function itemText(content: ChatItem["content"]): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part?.text === "string" ? part.text : "")).join("");
  }
  return "";
}

function itemCalls(item: ChatItem): ChatToolCall[] {
  return item.role === "assistant" && Array.isArray(item.tool_calls) ? item.tool_calls : [];
}

/** The request as a pi-ai Context: the system items joined as the system prompt. */
export function toContext(
  model: Model<Api>,
  items: readonly ChatItem[],
  tools: readonly FunctionToolDefinition[],
): Context {
  const system: string[] = [];
  const messages: Message[] = [];
  const names = new Map<string, string>();
  for (const item of items) {
    if (item.role === "system") {
      const text = itemText(item.content);
      if (text) system.push(text);
      continue;
    }
    for (const call of itemCalls(item)) names.set(call.id, call.function.name);
    messages.push(toMessage(model, item, names));
  }
  const context: Context = { messages };
  if (system.length > 0) context.systemPrompt = system.join("\n\n");
  if (tools.length > 0) context.tools = tools.map(toTool);
  return context;
}

function toTool(definition: FunctionToolDefinition): Tool {
  const parameters = definition.function.parameters ?? { type: "object", properties: {} };
  return {
    name: definition.function.name,
    description: definition.function.description ?? definition.function.name,
    // A JSON Schema: TypeBox schemas are JSON Schemas, and the providers send it as is.
    parameters: parameters as unknown as Tool["parameters"],
  };
}

function toMessage(model: Model<Api>, item: ChatItem, names: Map<string, string>): Message {
  const text = itemText(item.content);
  if (item.role === "tool") {
    const id = item.tool_call_id ?? "";
    const result: ToolResultMessage = {
      role: "toolResult",
      toolCallId: id,
      toolName: item.name ?? names.get(id) ?? "",
      content: [{ type: "text", text }],
      isError: false,
      timestamp: 0,
    };
    return result;
  }
  if (item.role === "user") return { role: "user", content: text, timestamp: 0 };
  const calls = itemCalls(item);
  const content: AssistantMessage["content"] = text ? [{ type: "text", text }] : [];
  for (const call of calls) {
    content.push({
      type: "toolCall",
      id: call.id,
      name: call.function.name,
      arguments: parsedArguments(call.function.arguments),
    });
  }
  return {
    role: "assistant",
    content,
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: NO_USAGE,
    stopReason: calls.length > 0 ? "toolUse" : "stop",
    timestamp: 0,
  };
}

function parsedArguments(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text || "{}");
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/** The reply as one assistant item; thinking is streamed, not stored. */
export function toAssistantItem(message: AssistantMessage): ChatItem & { role: "assistant" } {
  const text = message.content
    .filter((block): block is TextContent => block.type === "text")
    .map((block) => block.text)
    .join("");
  const calls = message.content
    .filter((block): block is ToolCall => block.type === "toolCall")
    .map(
      (call): ChatToolCall => ({
        id: call.id,
        type: "function",
        function: { name: call.name, arguments: JSON.stringify(call.arguments ?? {}) },
      }),
    );
  // Content may be null only beside tool calls.
  const item: ChatItem & { role: "assistant" } = {
    role: "assistant",
    content: text || (calls.length > 0 ? null : ""),
  };
  if (calls.length > 0) item.tool_calls = calls;
  return item;
}

/** pi-ai counts cached input apart from `input`; the engine's input is the whole prompt. */
export function agentUsage(usage: Usage): AgentUsage {
  return {
    modelCalls: 1,
    inputTokens: usage.input + usage.cacheRead + usage.cacheWrite,
    outputTokens: usage.output,
    cachedInputTokens: usage.cacheRead,
    reasoningTokens: 0,
  };
}
