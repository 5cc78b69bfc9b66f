/**
 * The gated copy of the application's agent graph, built once per runner.
 *
 * Every function tool of every agent reachable through handoffs gets `needsApproval: true`, so
 * the SDK stops right after the model call that asks for tools, with one `RunToolApprovalItem`
 * per call and before any of them runs. When the run resumes with the calls approved, the
 * gated tool does not run the application's tool: it answers with the session's recorded
 * result for that call (found by `details.toolCall.callId`), which the model Step put in an
 * AsyncLocalStorage around the resumed run. The application's agents are never changed.
 *
 * A restored run state names its current agent and the SDK finds it by name in the graph, so
 * every agent of the graph needs a unique name: a duplicate is refused when the runner is made.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import {
  type Agent,
  type FunctionTool,
  getDefaultModel,
  Handoff,
  type Model,
  type ModelProvider,
  OpenAIProvider,
  type Tool,
  tool,
} from "@openai/agents";
import { SingleRequestModel } from "./model.js";
import { duplicateAgentNameText, noFinalRecordText } from "./texts.js";

// biome-ignore lint/suspicious/noExplicitAny: the SDK's agents are generic in context and output.
export type AnyAgent = Agent<any, any>;
// biome-ignore lint/suspicious/noExplicitAny: a function tool of any context, parameters and result.
export type AnyFunctionTool = FunctionTool<any, any, any>;

/** The recorded results of the calls a resumed run answers, by call ID. */
const recordedResults = new AsyncLocalStorage<ReadonlyMap<string, string>>();

/** Runs `work` with `results` as the answers of the gated tools it invokes. */
export function withRecordedResults<T>(results: ReadonlyMap<string, string>, work: () => Promise<T>): Promise<T> {
  return recordedResults.run(results, work);
}

/**
 * A needsApproval the SDK knows as static (`needsApproval: true`), not a policy to evaluate
 * again after a restore: taken from a tool built with it.
 */
const ALWAYS_APPROVE = tool({
  name: "dex_gate",
  description: "",
  parameters: { type: "object", properties: {}, required: [], additionalProperties: false },
  strict: true,
  needsApproval: true,
  execute: () => "",
}).needsApproval;

export interface GraphOptions {
  /** Wrap every agent's model so that a model call sends exactly one request. */
  singleRequest: boolean;
  /** The run config's model, which replaces every agent's own when set. */
  model: string | Model | undefined;
  /** The run config's model provider, for model names. */
  modelProvider: ModelProvider | undefined;
}

/** The application's graph and its gated copy, each agent by its (unique) name. */
export class AgentGraph {
  readonly root: AnyAgent;
  readonly gatedRoot: AnyAgent;
  /** The application's agents by name. */
  readonly agents: ReadonlyMap<string, AnyAgent>;

  constructor(root: AnyAgent, options: GraphOptions) {
    this.agents = reachableAgents(root);
    const gated = new Map<string, AnyAgent>();
    let provider: ModelProvider | undefined = options.modelProvider;
    const resolveProvider = (): ModelProvider => {
      provider ??= new OpenAIProvider();
      return provider;
    };
    // Two passes: every gated agent exists before the handoffs between them are set.
    for (const [name, agent] of this.agents) {
      const own = options.model ?? agent.model;
      const model = own === "" ? getDefaultModel() : own;
      gated.set(
        name,
        agent.clone({
          tools: agent.tools.map(gatedTool),
          mcpServers: [...agent.mcpServers],
          ...(options.singleRequest ? { model: new SingleRequestModel(model, resolveProvider) } : {}),
        }),
      );
    }
    for (const [name, agent] of this.agents) {
      const copy = gated.get(name) as AnyAgent;
      copy.handoffs = agent.handoffs.map((target) => gatedHandoff(target, gated));
    }
    this.root = root;
    this.gatedRoot = gated.get(root.name) as AnyAgent;
  }

  /** The application's function tool `toolName` of agent `agentName` (else of any agent). */
  functionTool(toolName: string, agentName: string | null): AnyFunctionTool | undefined {
    const owner = agentName === null ? undefined : this.agents.get(agentName);
    const own = owner === undefined ? undefined : findFunctionTool(owner.tools, toolName);
    if (own !== undefined) {
      return own;
    }
    for (const agent of this.agents.values()) {
      const found = findFunctionTool(agent.tools, toolName);
      if (found !== undefined) {
        return found;
      }
    }
    return undefined;
  }

  /** The names of every function tool of the graph. */
  functionToolNames(): string[] {
    const names = new Set<string>();
    for (const agent of this.agents.values()) {
      for (const candidate of agent.tools) {
        if (candidate.type === "function") {
          names.add(candidate.name);
        }
      }
    }
    return [...names];
  }
}

function findFunctionTool(tools: readonly Tool[], name: string): AnyFunctionTool | undefined {
  const found = tools.find((candidate) => candidate.type === "function" && candidate.name === name);
  return found as AnyFunctionTool | undefined;
}

/** Every agent reachable from `root` through handoffs, by name; a name used twice is refused. */
function reachableAgents(root: AnyAgent): Map<string, AnyAgent> {
  const agents = new Map<string, AnyAgent>();
  const pending: AnyAgent[] = [root];
  for (let agent = pending.pop(); agent !== undefined; agent = pending.pop()) {
    const known = agents.get(agent.name);
    if (known === agent) {
      continue;
    }
    if (known !== undefined) {
      throw new Error(duplicateAgentNameText(agent.name));
    }
    agents.set(agent.name, agent);
    for (const target of agent.handoffs) {
      pending.push(target instanceof Handoff ? target.agent : target);
    }
  }
  return agents;
}

/** A handoff to the gated copy of its target (the application's callback still runs). */
function gatedHandoff(target: AnyAgent | Handoff, gated: ReadonlyMap<string, AnyAgent>): AnyAgent | Handoff {
  if (target instanceof Handoff) {
    return target.clone({ agent: gated.get(target.agent.name) as AnyAgent });
  }
  return gated.get(target.name) as AnyAgent;
}

/**
 * A function tool's gated copy: the same name, description, schema and `isEnabled`, always asking
 * for approval, answering from the recorded result. Any other tool is kept as it is: it runs
 * inside the model Step (see the README's limits).
 */
function gatedTool(original: Tool): Tool {
  if (original.type !== "function") {
    return original;
  }
  const copy: AnyFunctionTool = {
    type: "function",
    name: original.name,
    description: original.description,
    parameters: original.parameters,
    strict: original.strict,
    ...(original.deferLoading === undefined ? {} : { deferLoading: original.deferLoading }),
    ...(original.providerData === undefined ? {} : { providerData: original.providerData }),
    ...(original.allowedCallers === undefined ? {} : { allowedCallers: original.allowedCallers }),
    invoke: async (_runContext, _input, details) => recordedResult(details?.toolCall?.callId),
    needsApproval: ALWAYS_APPROVE,
    isEnabled: original.isEnabled,
  };
  return copy;
}

function recordedResult(callId: string | undefined): string {
  const result = callId === undefined ? undefined : recordedResults.getStore()?.get(callId);
  if (result === undefined) {
    throw new Error(noFinalRecordText(callId ?? "<none>"));
  }
  return result;
}
