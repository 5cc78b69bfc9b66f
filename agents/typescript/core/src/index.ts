export * from "./client.js";
export * from "./events.js";
export * from "./records.js";
export * from "./runner.js";
export * from "./serve.js";
export * from "./stepwise/index.js";
export * as texts from "./texts.js";
export * from "./ui.js";
export * from "./wire.js";
