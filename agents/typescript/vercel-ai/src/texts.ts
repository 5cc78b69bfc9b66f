/**
 * Every text this package puts in front of the model: the session contract's texts and a tool
 * Step's refusals, all from the TypeScript core, word for word the same as the Python core's.
 */
import { texts } from "./dex.js";

export const {
  TOOL_CALL_FAILED_PREFIX,
  OUTCOME_UNKNOWN_TEXT,
  DEFAULT_REJECTION_TEXT,
  unknownToolText,
  argumentsNotJsonText,
  invalidArgumentsText,
  notExecutableText,
} = texts;
