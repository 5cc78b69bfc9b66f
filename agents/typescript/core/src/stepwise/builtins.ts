/**
 * The built-in tools as Stepwise offers them: their definitions (texts.ts, word for word the
 * Python core's) and the plan note the model reads before the turn's messages. The session
 * runs the built-ins; the runner only offers them, and they take no effect of the runner's.
 */

import type { AgentPlan, InteractionMode } from "../runner.js";
import { NO_PLAN_YET, PLAN_NOTE_PLANNING_LINE } from "../texts.js";

export { BUILT_IN_TOOL_DEFINITIONS, BUILT_IN_TOOL_NAMES, type BuiltInToolName } from "../texts.js";

/** The plan as the model sees it, shown as user text before the turn's messages. */
export function buildPlanNote(
  plan: AgentPlan | null,
  interactionMode: InteractionMode,
): string | null {
  const planning = interactionMode === "planning";
  if (plan === null || plan.status === "cleared") {
    return planning ? `${NO_PLAN_YET}\n${PLAN_NOTE_PLANNING_LINE}` : null;
  }
  const lines = [`[Dex] The current plan, revision ${plan.revision}, is ${plan.status}:`];
  lines.push(...plan.tasks.map((task) => `- [${task.status}] ${task.content}`));
  if (planning) lines.push(PLAN_NOTE_PLANNING_LINE);
  return lines.join("\n");
}
