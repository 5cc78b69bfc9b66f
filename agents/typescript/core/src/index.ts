export * from "./client.js";
export * from "./runner.js";
export * from "./serve.js";
export * from "./wire.js";
