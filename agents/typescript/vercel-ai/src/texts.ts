/**
 * Every text this package puts in front of the model, in one place.
 *
 * The first four are the session contract's texts, word for word the same as the Python core's
 * (`dex_agents.texts`), so a session reads the same whichever runner served a turn.
 */

/** What the model sees for a failed call, followed by its error. */
export const TOOL_CALL_FAILED_PREFIX = "The tool call failed: ";
export const OUTCOME_UNKNOWN_TEXT =
  "The tool call's outcome is unknown: it stopped without returning a result, so it may " +
  "or may not have taken effect. It will not be retried automatically.";
export const DEFAULT_REJECTION_TEXT = "The user rejected this tool call.";

/** A tool Step for a tool the runner does not have (renamed or removed since the call). */
export function unknownToolText(toolName: string, known: readonly string[]): string {
  const list = known.length > 0 ? known.join(", ") : "none";
  return `there is no tool named ${JSON.stringify(toolName)}; the tools are: ${list}`;
}

/** The model's arguments are not JSON. */
export function argumentsNotJsonText(toolName: string): string {
  return `the arguments for tool ${JSON.stringify(toolName)} are not valid JSON`;
}

/** The model's arguments do not fit the tool's input schema. */
export function invalidArgumentsText(toolName: string, detail: string): string {
  return `invalid arguments for tool ${JSON.stringify(toolName)}: ${detail}`;
}

/** The tool has no `execute`: it is answered outside the runner, which a tool Step cannot do. */
export function notExecutableText(toolName: string): string {
  return `tool ${JSON.stringify(toolName)} has no execute function, so a tool Step cannot run it`;
}
