/**
 * The recorded outcome of each tool call, turned into the tool message the model reads next.
 *
 * A succeeded call's output is the string its tool returned, or the JSON of any other value: a
 * string goes back as a `text` output, a JSON value as a `json` output (a string that is itself
 * a JSON number, boolean, null, object or array comes back as that value), as Mastra sends the
 * result of a tool it ran. Every other final outcome is the session contract's text, from the
 * TypeScript core.
 */
import { type AgentToolCall, isFinal, modelVisibleResult, texts } from "./dex.js";
import { type ModelMessage, openCalls, type ToolOutput, type ToolResultPart } from "./messages.js";

/**
 * The tool message answering the open calls of the turn's last model response, or null when it
 * left none. `strict`: every call must have a final record (a model step); otherwise a missing
 * or unfinished record reads as outcome unknown (an unfinished turn).
 */
export function resultsMessage(
  turnMessages: readonly ModelMessage[],
  records: readonly AgentToolCall[],
  strict: boolean,
): ModelMessage | null {
  const calls = openCalls(turnMessages);
  if (calls.length === 0) {
    return null;
  }
  const byId = new Map(records.map((record) => [record.toolCallId, record]));
  const content: ToolResultPart[] = calls.map((call) => {
    const record = byId.get(call.toolCallId);
    if (strict && (record === undefined || !isFinal(record))) {
      throw new Error(`no final tool call record for deferred call ${JSON.stringify(call.toolCallId)}`);
    }
    const output: ToolOutput =
      record !== undefined && isFinal(record)
        ? outputOf(record)
        : { type: "error-text", value: texts.OUTCOME_UNKNOWN_TEXT };
    return { type: "tool-result", toolCallId: call.toolCallId, toolName: call.toolName, output, input: call.input };
  });
  return { role: "tool", content };
}

function outputOf(record: AgentToolCall): ToolOutput {
  const text = modelVisibleResult(record);
  // A rejection too: Mastra keeps only a result's value, so the model reads the rejection text.
  if (record.status !== "succeeded") {
    return { type: "error-text", value: text };
  }
  const parsed = parsedOutput(text);
  return parsed === undefined || typeof parsed === "string"
    ? { type: "text", value: text }
    : { type: "json", value: parsed };
}

/** The recorded output as JSON, or undefined when it is not JSON (a string the tool returned). */
function parsedOutput(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
