import react from "@vitejs/plugin-react";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// The build goes into the Python package, which serves it at `/` (`dex-agents serve`).
// Relative asset paths (`base: "./"`) keep it working when the app is mounted under a prefix.
const outDir = fileURLToPath(new URL("../src/dex_agents/web/static", import.meta.url));

export default defineConfig({
  base: "./",
  plugins: [react()],
  build: {
    outDir,
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
  },
  server: {
    // `npm run dev` proxies the API to a running `dex-agents serve`.
    proxy: { "/api": process.env.DEX_AGENTS_VIEWER_API ?? "http://127.0.0.1:8000" },
  },
});
