/**
 * StepwiseRunner: the core's own agent loop in TypeScript, one model call per RunModel Step,
 * served by `serveRunners` like any framework adapter. The same loop, texts, events and Step
 * shapes as the Python core's `dex_agents.stepwise`.
 *
 * The turn's items (model responses, tool results, continuation messages) stay in the run
 * state until the turn ends; TurnCompleted stores them. Tools run only in tool Steps.
 */

import { randomUUID } from "node:crypto";
import type {
  AgentFrameworkRunner,
  AgentToolCall,
  AgentTurnContext,
  AgentTurnOutcome,
  AgentUsage,
  ContextSummaryRequest,
  ContextSummaryResult,
  DeferredToolCall,
  DeferredToolExecution,
  DeferredToolOutcome,
  FrameworkMessage,
  ToolCallsRequested,
  ToolTaskCancellation,
  ToolTaskPoll,
  ToolTaskPollOutcome,
  TurnCompleted,
} from "../runner.js";
import { ToolExecutionError, withToolExecution } from "../runner.js";
import {
  CONTINUATION_LIMIT_ERROR,
  type FunctionToolDefinition,
  forcedChoiceProblem,
  MAX_CONSECUTIVE_CONTINUATIONS,
  unknownToolText,
} from "../texts.js";
import { isToolSource, type ToolSource } from "../tool-source.js";
import { BUILT_IN_TOOL_DEFINITIONS, BUILT_IN_TOOL_NAMES, buildPlanNote } from "./builtins.js";
import { selectCutoff, summarize } from "./compaction.js";
import {
  type AgentDefinition,
  checkDefinition,
  type TurnContinuation,
  type TurnContinuationContext,
  type TurnContinuationDecision,
} from "./definition.js";
import {
  type ChatItem,
  parseChatItem,
  RunState,
  splitTurn,
  stripForRequest,
  summaryItem,
  toFrameworkMessages,
  toolCallsOf,
  toolResultItems,
  unansweredCalls,
  userItem,
} from "./items.js";
import {
  countTokens,
  type ModelClient,
  type ModelReply,
  type ModelToolChoice,
  replyText,
  replyToolCalls,
} from "./model.js";
import type { Tool } from "./tools.js";

/** A stored item as the runner reads it: null for an item another runner stored. */
export type StepwiseItem = ChatItem | null;
type Turn = AgentTurnContext<StepwiseItem>;

const EMPTY_USAGE: AgentUsage = {
  modelCalls: 0,
  inputTokens: 0,
  outputTokens: 0,
  cachedInputTokens: 0,
  reasoningTokens: 0,
};
const BUILT_IN_POLICY = { effect: "read", requiresApproval: false } as const;

/** Runs an AgentDefinition in Step mode: one model call per RunModel Step. */
export class StepwiseRunner implements AgentFrameworkRunner<StepwiseItem> {
  readonly supportsPlanMode = true;
  readonly tools = new Map<string, Tool>();
  readonly sources: ToolSource[] = [];
  /** Present when a tool source polls tasks (the MCP source does), as `tool_tasks`. */
  readonly pollToolTask?: (poll: ToolTaskPoll) => Promise<ToolTaskPollOutcome>;
  readonly cancelToolTask?: (cancellation: ToolTaskCancellation) => Promise<void>;

  constructor(readonly definition: AgentDefinition) {
    checkDefinition(definition);
    for (const tool of definition.tools ?? []) {
      if (isToolSource(tool)) {
        this.sources.push(tool);
        continue;
      }
      if (this.tools.has(tool.name))
        throw new RangeError(`two tools are named ${JSON.stringify(tool.name)}`);
      this.tools.set(tool.name, tool);
    }
    if (this.sources.some((source) => source.pollToolTask !== undefined)) {
      this.pollToolTask = (poll) => this.pollSourceTask(poll);
      this.cancelToolTask = (cancellation) => this.cancelSourceTask(cancellation);
    }
    if (definition.planningToolChoice === "required" && definition.resolveModel === undefined) {
      const problem = forcedProblem(this.client({}));
      if (problem !== null) throw new RangeError(problem);
    }
  }

  // The runner protocol ------------------------------------------------------------------------

  parseItem(frameworkItem: string): StepwiseItem {
    return parseChatItem(frameworkItem);
  }

  buildUserMessage(text: string): StepwiseItem {
    return userItem(text);
  }

  async runModelStep(turn: Turn): Promise<AgentTurnOutcome> {
    for (const source of this.sources) await source.listTools(); // cached after the first
    const state = RunState.load(turn.frameworkRunState);
    const resolved = unansweredCalls(state.items);
    const items = [...state.items, ...toolResultItems(state.items, turn.toolCalls, true)];
    let count = state.consecutiveContinuations;
    if (resolved.length > 0 && this.definition.decideTurnContinuation !== undefined) {
      const decided = await this.decideAfterTools(
        turn,
        items,
        resolved.map((call) => call.id),
        count,
      );
      if (typeof decided !== "number") return decided;
      count = decided;
    }
    return await this.modelStep(turn, items, count);
  }

  /** The run state's items with a tool result for every call, so a steered or failed turn
   *  keeps its exact transcript. */
  async buildUnfinishedTurnMessages(turn: Turn): Promise<FrameworkMessage[]> {
    const items = RunState.load(turn.frameworkRunState).items;
    return toFrameworkMessages([...items, ...toolResultItems(items, turn.toolCalls, false)]);
  }

  async executeDeferredToolCall(
    call: DeferredToolExecution<StepwiseItem>,
  ): Promise<DeferredToolOutcome> {
    const record = call.toolCall;
    const source = this.sourceOf(record);
    if (source !== null) {
      return await withToolExecution(call, () => source.executeDeferredToolCall(call));
    }
    const tool = this.tools.get(record.toolName);
    if (tool === undefined) {
      throw new ToolExecutionError(unknownToolText(record.toolName, [...this.tools.keys()]));
    }
    // serveRunners sets it too; this serves a runner driven on its own (tests).
    return await withToolExecution(call, () => tool.run(record.arguments, call));
  }

  /** Polls a task that a tool source started. */
  private async pollSourceTask(poll: ToolTaskPoll): Promise<ToolTaskPollOutcome> {
    const source = this.sourceOf(poll.toolCall);
    if (source?.pollToolTask === undefined) {
      throw new ToolExecutionError(`no tool source polls the task of ${poll.toolCall.toolName}`);
    }
    return await source.pollToolTask(poll);
  }

  /** Cancels a source's task that cancel_turn abandoned. */
  private async cancelSourceTask(cancellation: ToolTaskCancellation): Promise<void> {
    await this.sourceOf(cancellation.toolCall)?.cancelToolTask?.(cancellation);
  }

  // Compaction -----------------------------------------------------------------------------------

  /** The next model call's input tokens, at about four characters a token. (A Worker calling
   *  this runner over HTTP estimates from the stored texts itself.) */
  estimateInputTokens(turn: Turn): number {
    let items = RunState.load(turn.frameworkRunState).items;
    items = [...items, ...toolResultItems(items, turn.toolCalls, false)];
    return countTokens(this.modelInput(turn, items), this.offeredTools(turn));
  }

  selectCompactionCutoff(turn: Turn, retainedTokenBudget: number): number | null {
    return selectCutoff(turn.messages, turn.items, retainedTokenBudget);
  }

  async summarizeContext(
    request: ContextSummaryRequest<StepwiseItem>,
  ): Promise<ContextSummaryResult> {
    const client = this.client(request.sessionSettings);
    return await summarize(client, request, this.definition.maxOutputTokens ?? null);
  }

  // Model input ----------------------------------------------------------------------------------

  /** The model of this call: resolveModel's choice, else the definition's model. */
  client(sessionSettings: Readonly<Record<string, unknown>>): ModelClient {
    const { resolveModel, model } = this.definition;
    const client = resolveModel ? resolveModel(sessionSettings) : model;
    if (client === undefined) throw new TypeError("resolveModel returned no ModelClient");
    return client;
  }

  instructions(turn: Turn): string {
    const instructions = this.definition.instructions;
    if (typeof instructions === "string") return instructions;
    const text = instructions({
      sessionSettings: turn.sessionSettings,
      interactionMode: turn.interactionMode,
      turnId: turn.turnId,
    });
    if (typeof text !== "string")
      throw new TypeError("an instructions function must return a string");
    return text;
  }

  /** System instructions, the summary, the stored history, the plan note before the turn's
   *  messages, then the turn's unstored items. */
  modelInput(turn: Turn, items: readonly ChatItem[]): ChatItem[] {
    const messages: ChatItem[] = [];
    const instructions = this.instructions(turn);
    if (instructions) messages.push({ role: "system", content: instructions });
    if (turn.contextSummary !== null) messages.push(summaryItem(turn.contextSummary));
    const [earlier, current] = splitTurn(turn);
    messages.push(...earlier);
    const note = buildPlanNote(turn.plan, turn.interactionMode);
    if (note !== null) messages.push(userItem(note));
    messages.push(...current, ...items);
    return messages.map(stripForRequest);
  }

  /** A planning turn offers only write_todos; an enabled built-in name is reserved. */
  offeredTools(turn: Turn): FunctionToolDefinition[] {
    const enabled = new Set(turn.enabledBuiltInTools);
    if (turn.interactionMode === "planning") {
      return enabled.has("write_todos") ? [BUILT_IN_TOOL_DEFINITIONS.write_todos] : [];
    }
    const tools = [...this.tools.values()]
      .filter((tool) => !enabled.has(tool.name))
      .map((tool) => tool.definition());
    tools.push(...this.sourceDefinitions(enabled));
    for (const name of BUILT_IN_TOOL_NAMES) {
      if (enabled.has(name)) tools.push(BUILT_IN_TOOL_DEFINITIONS[name]);
    }
    return tools;
  }

  // Tool sources ---------------------------------------------------------------------------------

  /** The sources' listed tools, skipping a name the agent's own tools or an enabled built-in
   *  already use. */
  private sourceDefinitions(reserved: ReadonlySet<string>): FunctionToolDefinition[] {
    const taken = new Set([...this.tools.keys(), ...reserved]);
    const definitions: FunctionToolDefinition[] = [];
    for (const source of this.sources) {
      for (const definition of source.toolDefinitions()) {
        if (taken.has(definition.function.name)) continue;
        taken.add(definition.function.name);
        definitions.push(definition);
      }
    }
    return definitions;
  }

  private offeringSource(turn: Turn, name: string): ToolSource | null {
    if (this.tools.has(name) || turn.enabledBuiltInTools.includes(name)) return null;
    return this.sources.find((source) => source.hasTool(name)) ?? null;
  }

  private sourceOf(record: AgentToolCall | ToolTaskPoll["toolCall"]): ToolSource | null {
    const unreferenced =
      record.toolSourceReference === null || record.toolSourceReference === undefined;
    if (unreferenced && this.tools.has(record.toolName)) return null;
    return this.sources.find((source) => source.owns(record)) ?? null;
  }

  // One model call -------------------------------------------------------------------------------

  private async modelStep(turn: Turn, items: ChatItem[], count: number): Promise<AgentTurnOutcome> {
    const client = this.client(turn.sessionSettings);
    let toolChoice: ModelToolChoice | null = null;
    if (this.forcesWriteTodos(turn, items)) {
      const problem = forcedProblem(client);
      if (problem !== null) {
        return {
          kind: "turn_completed",
          newMessages: toFrameworkMessages(items),
          usage: EMPTY_USAGE,
          turnError: problem,
        };
      }
      toolChoice = { type: "function", function: { name: "write_todos" } };
    }
    const reply = await client.complete({
      messages: this.modelInput(turn, items),
      tools: this.offeredTools(turn),
      toolChoice,
      maxOutputTokens: this.definition.maxOutputTokens ?? null,
      cancellationSignal: turn.cancellationSignal,
      deadline: turn.deadline,
      onText: (text) => turn.events.write("text_delta", { text }),
      onReasoning: (text) => turn.events.write("reasoning_delta", { text }),
      heartbeat: turn.heartbeat,
    });
    fixToolCallIds(reply.item, usedToolCallIds(turn, items));
    items.push(reply.item);
    if (replyToolCalls(reply).length > 0) return this.toolCallsRequested(turn, items, count, reply);
    return await this.answered(turn, items, count, reply);
  }

  private toolCallsRequested(
    turn: Turn,
    items: ChatItem[],
    count: number,
    reply: ModelReply,
  ): ToolCallsRequested {
    return {
      kind: "tool_calls_requested",
      frameworkRunState: new RunState(items, count).dump(),
      toolCalls: replyToolCalls(reply).map((call) =>
        this.deferredCall(turn, call.id, call.function.name, call.function.arguments),
      ),
      usage: reply.usage,
      modelCallMetadata: reply.metadata,
    };
  }

  private async answered(
    turn: Turn,
    items: ChatItem[],
    count: number,
    reply: ModelReply,
  ): Promise<AgentTurnOutcome> {
    const decision =
      this.definition.decideTurnContinuation === undefined
        ? null
        : await this.decide(turn, "answer", count, replyText(reply), []);
    const done: TurnCompleted = {
      kind: "turn_completed",
      newMessages: toFrameworkMessages(items),
      usage: reply.usage,
      modelCallMetadata: reply.metadata,
    };
    if (!isContinuation(decision)) return done;
    if (count >= MAX_CONSECUTIVE_CONTINUATIONS)
      return { ...done, turnError: CONTINUATION_LIMIT_ERROR };
    // The continuation is stored as user text, so the next request ends with a user message.
    items.push(userItem(decision.message));
    return {
      kind: "turn_continued",
      frameworkRunState: new RunState([], count + 1).dump(),
      newMessages: toFrameworkMessages(items),
      usage: reply.usage,
      modelCallMetadata: reply.metadata,
    };
  }

  /** Asks the hook once the tool results are in: "end" completes the turn with them, a
   *  continuation's message follows them; returns the continuations made in a row. */
  private async decideAfterTools(
    turn: Turn,
    items: ChatItem[],
    ids: string[],
    count: number,
  ): Promise<TurnCompleted | number> {
    const byId = new Map(turn.toolCalls.map((record) => [record.toolCallId, record]));
    const records = ids.flatMap((id) => byId.get(id) ?? []);
    const decision = await this.decide(turn, "tool_calls", count, null, records);
    const newMessages = toFrameworkMessages(items);
    if (decision === "end") return { kind: "turn_completed", newMessages, usage: EMPTY_USAGE };
    if (!isContinuation(decision)) return 0;
    if (count >= MAX_CONSECUTIVE_CONTINUATIONS) {
      return {
        kind: "turn_completed",
        newMessages,
        usage: EMPTY_USAGE,
        turnError: CONTINUATION_LIMIT_ERROR,
      };
    }
    items.push(userItem(decision.message));
    return count + 1;
  }

  private async decide(
    turn: Turn,
    after: TurnContinuationContext["after"],
    count: number,
    answer: string | null,
    toolCalls: readonly AgentToolCall[],
  ): Promise<TurnContinuationDecision> {
    const decide = this.definition.decideTurnContinuation;
    if (decide === undefined) return null;
    const decision = await decide({
      after,
      turnId: turn.turnId,
      interactionMode: turn.interactionMode,
      sessionSettings: turn.sessionSettings,
      consecutiveContinuations: count,
      answer,
      toolCalls,
    });
    if (
      decision !== null &&
      decision !== undefined &&
      decision !== "end" &&
      !isContinuation(decision)
    ) {
      throw new TypeError(
        `decideTurnContinuation must return continueTurn(message), "end" or null, not ${JSON.stringify(decision)}`,
      );
    }
    return decision;
  }

  private deferredCall(
    turn: Turn,
    toolCallId: string,
    name: string,
    args: string,
  ): DeferredToolCall {
    const source = this.offeringSource(turn, name);
    if (source !== null) {
      return source.deferredToolCall(toolCallId, name, args, (...a) =>
        turn.resolveToolPolicy(...a),
      );
    }
    return { toolCallId, toolName: name, arguments: args, policy: this.policy(turn, name) };
  }

  private policy(turn: Turn, name: string): DeferredToolCall["policy"] {
    if (turn.enabledBuiltInTools.includes(name)) return BUILT_IN_POLICY;
    const tool = this.tools.get(name);
    // An unknown tool fails without taking effect, so it needs no approval.
    if (tool === undefined) return turn.resolveToolPolicy(name, "read", false);
    return turn.resolveToolPolicy(name, tool.effect, tool.requiresApproval);
  }

  // Plan mode ------------------------------------------------------------------------------------

  /** "required" forces write_todos on a planning turn's first model call, without a draft. */
  private forcesWriteTodos(turn: Turn, items: readonly ChatItem[]): boolean {
    if (this.definition.planningToolChoice !== "required") return false;
    if (turn.interactionMode !== "planning" || !turn.enabledBuiltInTools.includes("write_todos"))
      return false;
    if (turn.plan !== null && turn.plan.status === "draft") return false;
    const [, current] = splitTurn(turn);
    return ![...current, ...items].some((item) => item.role === "assistant");
  }
}

function isContinuation(
  decision: TurnContinuationDecision | unknown,
): decision is TurnContinuation {
  return (
    typeof decision === "object" &&
    decision !== null &&
    (decision as TurnContinuation).kind === "continue" &&
    typeof (decision as TurnContinuation).message === "string"
  );
}

function forcedProblem(client: ModelClient): string | null {
  return client.supportsForcedToolChoice() ? null : forcedChoiceProblem(client.model);
}

function usedToolCallIds(turn: Turn, items: readonly ChatItem[]): Set<string> {
  const [, current] = splitTurn(turn);
  return new Set([...current, ...items].flatMap(toolCallsOf).map((call) => String(call.id)));
}

/** Tool call IDs must be non-empty, one URL path segment (no '/', not '.' or '..'), and unique
 *  in the turn; some providers reuse IDs across responses, so such an ID is replaced in the
 *  stored item too. */
function fixToolCallIds(item: ChatItem, used: Set<string>): void {
  for (const call of toolCallsOf(item)) {
    let id = String(call.id ?? "");
    if (!id || id.includes("/") || id === "." || id === ".." || used.has(id)) {
      id = `call_${randomUUID().replaceAll("-", "").slice(0, 24)}`;
      call.id = id;
    }
    used.add(id);
  }
}
