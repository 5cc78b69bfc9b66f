/** The usage of one model Step: what the run used since it was restored, in the session's terms. */
import type { Usage } from "@openai/agents";
import type { AgentUsage } from "./dex.js";

/** What the run's usage counters were when the Step started. */
export interface UsageMark {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  details: number;
}

export function markOf(usage: Usage): UsageMark {
  return {
    requests: usage.requests,
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    details: Math.max(usage.inputTokensDetails.length, usage.outputTokensDetails.length),
  };
}

export const NO_USAGE: UsageMark = { requests: 0, inputTokens: 0, outputTokens: 0, details: 0 };

/** The usage since `mark`: the model calls this Step made. */
export function usageSince(usage: Usage, mark: UsageMark): AgentUsage {
  return {
    modelCalls: usage.requests - mark.requests,
    inputTokens: usage.inputTokens - mark.inputTokens,
    outputTokens: usage.outputTokens - mark.outputTokens,
    cachedInputTokens: sum(usage.inputTokensDetails.slice(mark.details), "cached_tokens"),
    reasoningTokens: sum(usage.outputTokensDetails.slice(mark.details), "reasoning_tokens"),
  };
}

function sum(details: readonly Record<string, number>[], key: string): number {
  return details.reduce((total, entry) => total + (entry[key] ?? 0), 0);
}
