/**
 * @superdurable/dex-agents-pi: pi-ai models and Pi tools on the TypeScript core's Stepwise.
 *
 *   const agent = new StepwiseRunner({
 *     name: "Coder",
 *     instructions: "You edit code.",
 *     tools: piTools(createCodingTools(cwd)),
 *     model: piModelClient(getModel("anthropic", "claude-sonnet-4-5")),
 *   });
 *   serveRunners({ Coder: agent });
 */

export { type HttpObservation, PiModelError } from "./http.js";
export { agentUsage, toAssistantItem, toContext } from "./messages.js";
export { type PiModelClientOptions, type PiStreamOptions, piModelClient } from "./model.js";
export {
  currentToolExecution,
  type DurablePiTool,
  PI_TOOL_EFFECTS,
  type PiToolDeclaration,
  piTool,
  piTools,
  resultText,
} from "./tools.js";
