export * from "./runner.js";
export * from "./wire.js";
