/**
 * ClaudeAgentRunner: the Claude Agent SDK (the Claude Code CLI) as a whole-turn harness.
 *
 * The CLI runs a turn's model calls and tools itself, so a RunModel Step is one whole CLI run:
 * `runModelStep` runs one `query()` to the turn's final answer, or to the write call the runner's
 * PreToolUse hook defers. The CLI's transcript goes to a `RecordSessionStore` filled with the
 * entries of the earlier turns (and of the turn's earlier runs, kept in the run state); the
 * entries the CLI appended during the turn are stored with the turn's final message, and the
 * next turn resumes the CLI session by its ID from them. Each run gets its own empty
 * `CLAUDE_CONFIG_DIR`, so the CLI resumes from the session's records only, on any host.
 *
 * A write call of the runner's in-process tools or of its tool sources' tools (effect not
 * `read`, `sources.ts`) is deferred by the hook:
 * the run ends before the tool runs, the turn asks for the call as a tool Step, and
 * `executeDeferredToolCall` runs the tool's handler (or calls the source); the next RunModel resumes the CLI session,
 * whose call of the tool gets the recorded result. Every other tool runs inside the CLI and is
 * at-least-once: a retried or rerun RunModel Step runs it again.
 *
 * The session's built-in tools are offered as the tools of one more in-process SDK MCP server
 * (`builtins.ts`), whose calls are deferred the same way and reported under the built-in's own
 * name, so the core runs them as its built-in Steps. A planning turn offers only `write_todos`:
 * the run gets no other tool (no CLI tool, no MCP server but the built-ins'), and the plan note
 * comes first in the turn's prompt. `optionsFor` derives each run's options from the session
 * settings, so a settings update takes effect at the session's next turn.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type HookCallbackMatcher,
  type McpServerConfig,
  type Options,
  query,
  type SDKResultMessage,
  type SDKUserMessage,
} from "@anthropic-ai/claude-agent-sdk";
import * as builtIns from "./builtins.js";
import type {
  AgentFrameworkRunner,
  AgentTurnContext,
  AgentTurnOutcome,
  CallableToolSource,
  DeferredToolExecution,
  DeferredToolOutcome,
  FrameworkMessage,
} from "./dex.js";
import { buildPlanNote, ToolExecutionError, type texts, withToolExecution } from "./dex.js";
import { type Declared, WriteGate } from "./gate.js";
import { type SourceListing, SourceTools } from "./sources.js";
import { type Entries, merged, RecordSessionStore } from "./store.js";
import { TurnRecorder, withToolNames } from "./stream.js";
import { RESUME_PROMPT } from "./texts.js";
import { RecordedResults, resultText, SdkTools, type ToolServer } from "./tools.js";
import {
  historyOf,
  loadRunState,
  type RunState,
  TURN_KIND,
  type TurnTranscript,
  USER_KIND,
  withoutPromptSnapshots,
} from "./transcript.js";

/** Environment that turns off the CLI's non-essential traffic, telemetry and auto-update. */
export const QUIET_CLI_ENV: Readonly<Record<string, string>> = {
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  DISABLE_TELEMETRY: "1",
  DISABLE_AUTOUPDATER: "1",
  DISABLE_ERROR_REPORTING: "1",
};

export interface ClaudeAgentRunnerOptions {
  /**
   * The SDK's options of every CLI run, used as given except: `sessionStore`, `resume`,
   * `includePartialMessages`, `abortController` and `CLAUDE_CONFIG_DIR` (the runner's own), the
   * runner's PreToolUse hook (first), and the servers of `toolServers` added to `mcpServers`.
   */
  options?: Options;
  /**
   * The in-process MCP tools, by server key (the model sees `mcp__<key>__<tool>`): their write
   * calls run as tool Steps, their reads inside the CLI run.
   */
  toolServers?: Record<string, ToolServer>;
  /**
   * Tool sources (the core's `McpToolSource`, or any `CallableToolSource`), by server key (the
   * model sees `mcp__<key>__<tool>`, for an MCP source's tool `mcp__<key>__<server>__<tool>`):
   * their write calls run as tool Steps (`callSourceTool`, the Step's idempotency key), their
   * reads inside the CLI run (the key of the call's tool_use ID).
   */
  toolSources?: Record<string, CallableToolSource>;
  /**
   * Let the CLI retry a failed model request by itself inside one RunModel attempt. Off by
   * default (`CLAUDE_CODE_MAX_RETRIES=0` unless `options.env` sets it): RunModel's attempts,
   * recorded in the Step history, are the model call's only retries.
   */
  frameworkRetries?: boolean;
  /** How often a long CLI run or tool call heartbeats, in milliseconds (default 20 s). */
  heartbeatIntervalMs?: number;
  /**
   * The options of each CLI run from the session's current settings (`updateSessionSettings` /
   * `update_session_settings` take effect at the session's next turn): given `options` and the
   * settings, typically `{ ...options, model: settings.model, systemPrompt: settings.instructions }`.
   * The same refusals as `options` apply to what it returns.
   */
  optionsFor?: OptionsFor;
}

/** The options of one CLI run, from the runner's options and the session's settings. */
export type OptionsFor = (options: Options, sessionSettings: Readonly<Record<string, unknown>>) => Options;

/** A CLI run ended with an error result, or with none: the RunModel attempt fails. */
export class HarnessTurnError extends Error {
  override name = "HarnessTurnError";
}

type Item = Record<string, unknown>;

export class ClaudeAgentRunner implements AgentFrameworkRunner<Item> {
  /** Planning turns offer only `write_todos`, the plan note first in the prompt. */
  readonly supportsPlanMode = true;
  readonly #options: Options;
  readonly #optionsFor: OptionsFor | null;
  readonly #tools: SdkTools;
  readonly #sources: SourceTools;
  readonly #heartbeatMs: number;
  readonly #retries: Record<string, string>;

  constructor(options: ClaudeAgentRunnerOptions = {}) {
    const given = options.options ?? {};
    const toolServers = options.toolServers ?? {};
    const toolSources = options.toolSources ?? {};
    for (const key of [...Object.keys(toolServers), ...Object.keys(toolSources)]) {
      if (key === builtIns.SERVER_KEY) {
        throw new Error(
          `the tool server key ${JSON.stringify(builtIns.SERVER_KEY)} is reserved for the session's built-in tools: give that server another key`,
        );
      }
      if (Object.hasOwn(toolServers, key) && Object.hasOwn(toolSources, key)) {
        throw new Error(`the key ${JSON.stringify(key)} is both in toolServers and in toolSources: give each its own`);
      }
    }
    this.#sources = new SourceTools(toolSources);
    checkOptions(given, this.#serverKeys(toolServers));
    this.#options = given;
    this.#optionsFor = options.optionsFor ?? null;
    this.#tools = new SdkTools(toolServers);
    this.#heartbeatMs = options.heartbeatIntervalMs ?? 20_000;
    this.#retries = options.frameworkRetries === true ? {} : { CLAUDE_CODE_MAX_RETRIES: "0" };
  }

  parseItem(frameworkItem: string): Item {
    return JSON.parse(frameworkItem) as Item;
  }

  buildUserMessage(text: string): Item {
    return { kind: USER_KIND, text };
  }

  async runModelStep(turn: AgentTurnContext<Item>): Promise<AgentTurnOutcome> {
    const history = historyOf(turn.messages);
    const state = loadRunState(turn.frameworkRunState);
    const sessionId = state?.session_id ?? history.sessionId;
    const store = storeOf(sessionId, history.entries, state);
    const offered = builtIns.offered(turn.enabledBuiltInTools, turn.interactionMode === "planning");
    const recorder = new TurnRecorder(turn, offered);
    const handed = new RecordedResults();
    const listing = await this.#sources.listing();
    const gate = new WriteGate(turn, this.#declaredIn(listing), handed, offered);
    const configDir = mkdtempSync(join(tmpdir(), "dex-claude-config-"));
    const timer = setInterval(() => turn.heartbeat(), this.#heartbeatMs);
    timer.unref();
    try {
      const options = this.#runOptions(turn, { sessionId, store, gate, handed, configDir, offered, listing });
      // A resumed run sends a text of its own: an empty input fails to resume.
      await run(state !== null ? [RESUME_PROMPT] : prompt(turn, history.prompts), options, recorder, turn);
    } finally {
      clearInterval(timer);
      rmSync(configDir, { recursive: true, force: true });
    }
    const result = answer(recorder);
    if (state !== null && !handed.allTaken()) {
      throw new HarnessTurnError(
        "Claude Code resumed the turn without finishing its deferred call (the call's recorded result was not handed to the CLI)",
      );
    }
    const entries = merged(state?.entries ?? {}, store.appended());
    const messages = withToolNames([...(state?.messages ?? []), ...recorder.messages]);
    if (result.terminal_reason === "tool_deferred") {
      return deferred(result, gate, entries, messages, recorder);
    }
    const transcript: TurnTranscript = {
      kind: TURN_KIND,
      session_id: result.session_id,
      entries,
      cost_usd: result.total_cost_usd,
      result: { num_turns: result.num_turns, stop_reason: result.stop_reason },
    };
    const final: FrameworkMessage = {
      role: "assistant",
      frameworkItem: JSON.stringify(transcript),
      text: recorder.finalText(),
    };
    return { kind: "turn_completed", newMessages: [...messages, final], usage: recorder.usage() };
  }

  /** Runs a deferred write call's tool handler, once per tool Step attempt; an error result
   *  fails the call (the model sees its text). */
  async executeDeferredToolCall(call: DeferredToolExecution<Item>): Promise<DeferredToolOutcome> {
    const timer = setInterval(() => call.heartbeat(), this.#heartbeatMs);
    timer.unref();
    try {
      const { toolName, arguments: args } = call.toolCall;
      const listing = await this.#sources.listing();
      if (listing.has(toolName)) {
        const output = await withToolExecution(call, () => listing.call(toolName, args, call.cancellationSignal));
        return { kind: "tool_execution_result", output };
      }
      const result = await withToolExecution(call, () => this.#tools.call(toolName, args));
      const text = resultText(result);
      if (result.isError) throw new ToolExecutionError(text);
      return { kind: "tool_execution_result", output: text };
    } finally {
      clearInterval(timer);
    }
  }

  /** The options `optionsFor` gives for these settings (the runner's own without it). */
  sessionOptions(sessionSettings: Readonly<Record<string, unknown>>): Options {
    if (this.#optionsFor === null) return this.#options;
    const options = this.#optionsFor(this.#options, sessionSettings);
    checkOptions(options, this.#serverKeys(this.#tools.servers));
    return options;
  }

  /** The keys of the runner's own servers: its tool servers' and its tool sources'. */
  #serverKeys(toolServers: Readonly<Record<string, ToolServer>>): string[] {
    return [...Object.keys(toolServers), ...this.#sources.keys];
  }

  /** What a served tool declares in a run: a tool server's tool its annotations' effect, a
   *  source's tool the source's policy in the run's listing. */
  #declaredIn(listing: SourceListing): Declared {
    return (toolName) => {
      const effect = this.#tools.effect(toolName);
      return effect === undefined ? listing.declared(toolName) : { effect };
    };
  }

  #runOptions(turn: AgentTurnContext<Item>, run: RunSetup): Options {
    const given = this.sessionOptions(turn.sessionSettings);
    const gate: HookCallbackMatcher = { hooks: [run.gate.hook] };
    const abortController = new AbortController();
    turn.cancellationSignal.addEventListener("abort", () => abortController.abort(turn.cancellationSignal.reason), {
      once: true,
    });
    if (turn.cancellationSignal.aborted) abortController.abort(turn.cancellationSignal.reason);
    const builtInServer: Record<string, McpServerConfig> =
      run.offered.length > 0 ? { [builtIns.SERVER_KEY]: builtIns.server(run.offered, run.handed) } : {};
    const offered = run.offered.map(builtIns.modelName);
    const tools: Pick<Options, "mcpServers" | "allowedTools" | "tools"> =
      turn.interactionMode === "planning"
        ? // A planning turn's run offers only write_todos: no CLI tool, no other server.
          { tools: [], mcpServers: builtInServer, allowedTools: offered }
        : {
            mcpServers: {
              ...given.mcpServers,
              ...this.#tools.serving(run.handed),
              ...run.listing.serving(run.handed, turn),
              ...builtInServer,
            },
            allowedTools: [...(given.allowedTools ?? []), ...offered],
          };
    return {
      ...given,
      ...tools,
      env: { ...process.env, ...QUIET_CLI_ENV, ...this.#retries, ...given.env, CLAUDE_CONFIG_DIR: run.configDir },
      hooks: { ...given.hooks, PreToolUse: [gate, ...(given.hooks?.PreToolUse ?? [])] },
      sessionStore: run.store,
      sessionStoreFlush: "eager",
      ...(run.sessionId === null ? {} : { resume: run.sessionId }),
      includePartialMessages: true,
      abortController,
    };
  }
}

interface RunSetup {
  sessionId: string | null;
  store: RecordSessionStore;
  gate: WriteGate;
  handed: RecordedResults;
  configDir: string;
  offered: readonly texts.BuiltInToolName[];
  listing: SourceListing;
}

/** The refusals of the options a run is given (the runner's, or what `optionsFor` returns). */
function checkOptions(options: Options, serverKeys: readonly string[]): void {
  if (options.sessionStore !== undefined || options.resume !== undefined || options.continue) {
    throw new Error(
      "ClaudeAgentRunner keeps the transcript itself: leave sessionStore, resume and continue unset in the options",
    );
  }
  for (const key of [...serverKeys, builtIns.SERVER_KEY]) {
    if (options.mcpServers !== undefined && Object.hasOwn(options.mcpServers, key)) {
      throw new Error(
        key === builtIns.SERVER_KEY
          ? `the mcpServers key ${JSON.stringify(key)} is reserved for the session's built-in tools: give that server another key`
          : `the tool server or tool source key ${JSON.stringify(key)} is also in options.mcpServers: give it once`,
      );
    }
  }
}

/** The turn's first prompt: the plan note (when the turn has one), then each user text since
 *  the last completed turn. */
function prompt(turn: AgentTurnContext<Item>, texts: readonly string[]): string[] {
  const note = buildPlanNote(turn.plan, turn.interactionMode);
  return note === null ? [...texts] : [note, ...texts];
}

/** The earlier turns' entries (without their prompt snapshots: a turn's first run records the
 *  prompt and tools of its own options), then those the turn's earlier runs wrote (whole: the
 *  CLI finishes a deferred call with the run's own snapshot). */
function storeOf(sessionId: string | null, earlier: Entries, state: RunState | null): RecordSessionStore {
  const store = new RecordSessionStore();
  if (sessionId === null) return store;
  const cleaned: Entries = {};
  for (const [subpath, entries] of Object.entries(earlier)) cleaned[subpath] = withoutPromptSnapshots(entries);
  store.preload(sessionId, merged(cleaned, state?.entries ?? {}));
  return store;
}

/** The turn's prompt: one user message whose text blocks are each user text since the last
 *  completed turn, the input kept open until the run's result (in-process tool servers answer
 *  the CLI through that stream: an input that ends early leaves a deferred call's tool
 *  unavailable). */
async function* userMessage(texts: readonly string[], done: Promise<void>): AsyncGenerator<SDKUserMessage> {
  yield {
    type: "user",
    message: { role: "user", content: texts.map((text) => ({ type: "text" as const, text })) },
    parent_tool_use_id: null,
  };
  await done;
}

async function run(
  texts: readonly string[],
  options: Options,
  recorder: TurnRecorder,
  turn: AgentTurnContext<Item>,
): Promise<void> {
  let finish = (): void => {};
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  try {
    for await (const message of query({ prompt: userMessage(texts, done), options })) {
      recorder.observe(message);
      turn.heartbeat();
      if (message.type === "result") finish();
    }
  } catch (error) {
    if (turn.cancellationSignal.aborted) throw error;
    throw new HarnessTurnError(`Claude Code turn failed: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  } finally {
    finish();
  }
}

/** The run's result; an error result, or none, fails the attempt. */
function answer(recorder: TurnRecorder): SDKResultMessage {
  const result = recorder.result;
  if (result === undefined) throw new HarnessTurnError("Claude Code turn failed: no result");
  if (result.is_error) {
    const detail = result.subtype === "success" ? [result.result] : result.errors;
    throw new HarnessTurnError(`Claude Code turn failed: ${detail.join("; ") || result.subtype}`);
  }
  return result;
}

/** The run stopped before a write call: the call becomes a tool Step, and what the run wrote
 *  waits in the run state for the run that resumes it. */
function deferred(
  result: SDKResultMessage,
  gate: WriteGate,
  entries: Entries,
  messages: FrameworkMessage[],
  recorder: TurnRecorder,
): AgentTurnOutcome {
  if (gate.deferred.length === 0) {
    throw new HarnessTurnError(
      `Claude Code deferred a tool call the runner does not run as a tool Step (${("deferred_tool_use" in result ? result.deferred_tool_use?.name : undefined) ?? "unknown"}); only the runner's own hook may answer "defer"`,
    );
  }
  const state: RunState = { session_id: result.session_id, entries, messages };
  return {
    kind: "tool_calls_requested",
    frameworkRunState: JSON.stringify(state),
    toolCalls: gate.deferred,
    usage: recorder.usage(),
  };
}
