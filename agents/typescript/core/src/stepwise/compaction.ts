/**
 * Context compaction: where to cut the history, and the one model call that summarizes it.
 *
 * A cut falls only between model responses whose tool calls all have their results before the
 * cut, so no summary separates a tool call from its result. Tokens are estimated at about
 * four characters each, as the Worker estimates them for a runner it calls over HTTP.
 */

import type { AgentMessage, ContextSummaryRequest, ContextSummaryResult } from "../runner.js";
import {
  CONTEXT_SUMMARY_INSTRUCTION,
  CONTEXT_SUMMARY_PREFIX,
  contextLeftOutNote,
} from "../texts.js";
import {
  type ChatItem,
  contentText,
  storedItem,
  stripForRequest,
  toolCallsOf,
  userItem,
} from "./items.js";
import { countTextTokens, countTokens, type ModelClient, replyText } from "./model.js";

/** Indexes i such that a cut after items[i] separates no tool call from its result. */
export function cutPoints(items: readonly ChatItem[]): number[] {
  const cuts: number[] = [];
  const open = new Set<string>();
  items.forEach((item, index) => {
    if (item.role === "tool") open.delete(String(item.tool_call_id));
    for (const call of toolCallsOf(item)) open.add(String(call.id));
    const following = items[index + 1];
    if (open.size === 0 && following !== undefined && following.role !== "tool") cuts.push(index);
  });
  return cuts;
}

/** The sequence of the earliest cut after which the messages' sizes fit in the retained
 *  budget, else of the latest cut; null when there is no cut. */
export function earliestCutWithinBudget(
  messages: readonly AgentMessage[],
  cuts: readonly number[],
  sizes: readonly number[],
  retainedTokenBudget: number,
): number | null {
  const last = cuts[cuts.length - 1];
  if (last === undefined) return null;
  let retained = sizes.reduce((sum, size) => sum + size, 0);
  let previous = -1;
  for (const index of cuts) {
    for (let i = previous + 1; i <= index; i++) retained -= sizes[i] ?? 0;
    previous = index;
    if (retained <= retainedTokenBudget) return messages[index]?.sequence ?? null;
  }
  return messages[last]?.sequence ?? null;
}

/** How many of the oldest messages to leave out of the summary request so the rest and the
 *  note saying how many were left out fit in `budget`: only through a cut, the earliest that
 *  fits, else the latest; 0 when every message fits. */
export function messagesLeftOut(
  sizes: readonly number[],
  cuts: readonly number[],
  budget: number,
  noteTokens: number,
): number {
  let total = sizes.reduce((sum, size) => sum + size, 0);
  if (total <= budget) return 0;
  let dropped = 0;
  for (const index of cuts) {
    for (let i = dropped; i <= index; i++) total -= sizes[i] ?? 0;
    dropped = index + 1;
    if (total + noteTokens <= budget) break;
  }
  return dropped;
}

/** The last sequence to summarize: the earliest cut whose later messages fit in the retained
 *  budget, else the latest cut; null when the history has no cut. */
export function selectCutoff(
  messages: readonly AgentMessage[],
  items: readonly (ChatItem | null)[],
  retainedTokenBudget: number,
): number | null {
  const stored = messages.map((message, index) => storedItem(message, items[index] ?? null));
  const cuts = cutPoints(stored);
  if (cuts.length === 0) return null;
  const sizes = stored.map((item) => countTokens([stripForRequest(item)]));
  return earliestCutWithinBudget(messages, cuts, sizes, retainedTokenBudget);
}

/** One model call whose input starts with the previous summary, then the messages that fit in
 *  the input token budget after room for the answer. */
export async function summarize(
  client: ModelClient,
  request: ContextSummaryRequest<ChatItem | null>,
  maxOutputTokens: number | null,
): Promise<ContextSummaryResult> {
  const stored = request.messages.map((message, index) =>
    storedItem(message, request.items[index] ?? null),
  );
  const lines = stored.map(render);
  const head: ChatItem[] = [];
  if (request.previousSummary !== null) {
    head.push(userItem(`${CONTEXT_SUMMARY_PREFIX}\n${request.previousSummary.text}`));
  }
  const budget = request.inputTokenBudget - (maxOutputTokens ?? 0);
  const fixed = countTokens(head) + countTextTokens(CONTEXT_SUMMARY_INSTRUCTION);
  const leftOut = messagesLeftOut(
    lines.map(countTextTokens),
    cutPoints(stored),
    budget - fixed,
    countTextTokens(contextLeftOutNote(lines.length)),
  );
  const body = leftOut > 0 ? [contextLeftOutNote(leftOut)] : [];
  body.push(...lines.slice(leftOut), CONTEXT_SUMMARY_INSTRUCTION);
  const reply = await client.complete({
    messages: [...head, userItem(body.join("\n\n"))],
    tools: [],
    toolChoice: null,
    maxOutputTokens,
    cancellationSignal: request.cancellationSignal,
    deadline: request.deadline,
    onText: () => {},
    onReasoning: () => {},
    heartbeat: request.heartbeat,
  });
  return { text: replyText(reply).trim(), usage: reply.usage, modelCallMetadata: reply.metadata };
}

/** One message as transcript text for the summary request. */
export function render(item: ChatItem): string {
  const content = contentText(item.content) ?? "";
  if (item.role === "tool") return `Tool result (${item.name || item.tool_call_id}): ${content}`;
  if (item.role === "assistant") {
    const lines = content ? [`Assistant: ${content}`] : [];
    for (const call of toolCallsOf(item)) {
      lines.push(`Assistant called ${call.function.name} with ${call.function.arguments}`);
    }
    return lines.join("\n") || "Assistant: (no text)";
  }
  if (item.role === "system") return `System: ${content}`;
  return `User: ${content}`;
}
