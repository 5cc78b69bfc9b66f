/**
 * Stepwise tools: a function, its JSON Schema, and its effect and approval policy.
 *
 * The schema goes to the model as the tool's parameters and is checked (types, required and
 * unknown properties) before the function runs; `parse` (a zod schema's `parse`, say) checks
 * and shapes the arguments further. The effect and approval feed the session's effect table.
 */

import type {
  DeferredToolExecution,
  ToolEffect,
  ToolExecutionResult,
  ToolInputRequested,
} from "../runner.js";
import { ToolExecutionError } from "../runner.js";
import {
  argumentsNotJsonText,
  type FunctionToolDefinition,
  invalidArgumentsText,
} from "../texts.js";

export type JsonSchema = Record<string, unknown>;

/** What a tool's function gets besides its arguments. */
export interface ToolContext {
  /** Stable across the attempts of this call: pass it to the service the tool writes to. */
  idempotencyKey: string;
  /** Aborted when the call is cancelled or its Step's connection is gone. */
  cancellationSignal: AbortSignal;
  execution: DeferredToolExecution;
}

export interface ToolSpec<Args = Record<string, unknown>> {
  /** 1 to 64 letters, digits, '_' or '-' (what every major provider accepts). */
  name: string;
  description: string;
  /** The arguments' JSON Schema (an object schema); none means no arguments. */
  parameters?: JsonSchema;
  /** Checks and shapes the arguments after the schema check; what it throws is the model's
   *  "invalid arguments" error. */
  parse?: (args: Record<string, unknown>) => Args;
  /** null or absent: the session's tool_policies and default_tool_effect decide. */
  effect?: ToolEffect | null;
  /** null or absent: the effect's default. */
  requiresApproval?: boolean | null;
  /** Returns text (as is), a ToolExecutionResult or ToolInputRequested, or any JSON value. */
  execute(args: Args, context: ToolContext): unknown;
}

/** A tool the model can call. */
export interface Tool {
  readonly name: string;
  readonly effect: ToolEffect | null;
  readonly requiresApproval: boolean | null;
  definition(): FunctionToolDefinition;
  run(
    argumentsText: string,
    execution: DeferredToolExecution,
  ): Promise<ToolExecutionResult | ToolInputRequested>;
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const EFFECTS: ReadonlySet<string> = new Set([
  "read",
  "idempotent_write",
  "non_idempotent_write",
  "unclassified",
]);
const NO_ARGUMENTS: JsonSchema = { type: "object", properties: {}, additionalProperties: false };

/** Declares a tool. */
export function tool<Args = Record<string, unknown>>(spec: ToolSpec<Args>): Tool {
  if (!TOOL_NAME.test(spec.name)) {
    throw new RangeError(
      `tool name ${JSON.stringify(spec.name)} must be 1 to 64 letters, digits, '_' or '-'`,
    );
  }
  if (spec.effect !== undefined && spec.effect !== null && !EFFECTS.has(spec.effect)) {
    throw new RangeError(`tool ${spec.name}: effect must be one of ${[...EFFECTS].join(", ")}`);
  }
  const parameters = spec.parameters ?? NO_ARGUMENTS;
  if (parameters.type !== "object") {
    throw new RangeError(
      `tool ${spec.name}: parameters must be an object schema ({"type": "object", ...})`,
    );
  }
  return {
    name: spec.name,
    effect: spec.effect ?? null,
    requiresApproval: spec.requiresApproval ?? null,
    definition: () => ({
      type: "function",
      function: { name: spec.name, description: spec.description || spec.name, parameters },
    }),
    run: async (argumentsText, execution) => {
      const args = validate(spec, parameters, argumentsText);
      const context = {
        idempotencyKey: execution.idempotencyKey,
        cancellationSignal: execution.cancellationSignal,
        execution,
      };
      return toolResult(await spec.execute(args, context));
    },
  };
}

function validate<Args>(spec: ToolSpec<Args>, schema: JsonSchema, argumentsText: string): Args {
  let value: unknown;
  try {
    value = JSON.parse(argumentsText || "{}");
  } catch {
    throw new ToolExecutionError(argumentsNotJsonText(spec.name));
  }
  if (!isObject(value)) {
    throw new ToolExecutionError(
      invalidArgumentsText(spec.name, "arguments must be a JSON object"),
    );
  }
  const problem = schemaProblem(schema, value, "");
  if (problem !== null) throw new ToolExecutionError(invalidArgumentsText(spec.name, problem));
  if (spec.parse === undefined) return value as Args;
  try {
    return spec.parse(value);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new ToolExecutionError(invalidArgumentsText(spec.name, detail));
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const TYPE_CHECKS: Record<string, (value: unknown) => boolean> = {
  string: (value) => typeof value === "string",
  number: (value) => typeof value === "number" && Number.isFinite(value),
  integer: (value) => typeof value === "number" && Number.isInteger(value),
  boolean: (value) => typeof value === "boolean",
  array: Array.isArray,
  object: isObject,
  null: (value) => value === null,
};

/** Why `value` does not fit the schema's types, enum, required and additional properties
 *  (recursively through properties and items), or null; other keywords are not checked. */
export function schemaProblem(schema: JsonSchema, value: unknown, where: string): string | null {
  const at = where || "arguments";
  const types =
    schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.length > 0 && !types.some((type) => TYPE_CHECKS[String(type)]?.(value) ?? true)) {
    return `${at} must be ${types.join(" or ")}`;
  }
  if (
    Array.isArray(schema.enum) &&
    !schema.enum.some((option) => JSON.stringify(option) === JSON.stringify(value))
  ) {
    return `${at} must be one of ${schema.enum.map((option) => JSON.stringify(option)).join(", ")}`;
  }
  if (isObject(value)) return objectProblem(schema, value, where);
  if (Array.isArray(value) && isObject(schema.items)) {
    for (const [index, element] of value.entries()) {
      const problem = schemaProblem(schema.items, element, `${at}[${index}]`);
      if (problem !== null) return problem;
    }
  }
  return null;
}

function objectProblem(
  schema: JsonSchema,
  value: Record<string, unknown>,
  where: string,
): string | null {
  const properties = isObject(schema.properties) ? schema.properties : {};
  const prefix = where ? `${where}.` : "";
  for (const name of Array.isArray(schema.required) ? schema.required : []) {
    if (!Object.hasOwn(value, String(name))) return `${prefix}${String(name)} is required`;
  }
  for (const [name, element] of Object.entries(value)) {
    const property = Object.hasOwn(properties, name) ? properties[name] : undefined;
    if (isObject(property)) {
      const problem = schemaProblem(property, element, `${prefix}${name}`);
      if (problem !== null) return problem;
    } else if (schema.additionalProperties === false) {
      return `unknown argument ${JSON.stringify(`${prefix}${name}`)}`;
    }
  }
  return null;
}

/** What the session records for a tool's return value: text as is, anything else as JSON. */
export function toolResult(value: unknown): ToolExecutionResult | ToolInputRequested {
  if (
    isObject(value) &&
    (value.kind === "tool_execution_result" || value.kind === "tool_input_requested")
  ) {
    return value as unknown as ToolExecutionResult | ToolInputRequested;
  }
  if (isObject(value) && value.kind === "tool_task_started") {
    throw new TypeError("a Stepwise tool cannot return ToolTaskStarted: nothing polls the task");
  }
  if (typeof value === "string") return { kind: "tool_execution_result", output: value };
  const output = JSON.stringify(value === undefined ? null : value);
  if (output === undefined)
    throw new TypeError(`a tool returned ${typeof value}, which is not JSON`);
  return { kind: "tool_execution_result", output };
}
