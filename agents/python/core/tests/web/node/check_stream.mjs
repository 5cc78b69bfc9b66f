// Parses captured dex-agents UI message streams with the real `ai` package and prints what a
// browser would hold, as JSON: {"chunks": [[chunk...] per file], "errors": [...], "message"}.
//
//   node check_stream.mjs [--continue] stream-1.txt [stream-2.txt ...]
//
// Each file is the body of one response (Server-Sent Events). Every `data:` must parse with
// uiMessageChunkSchema (parseJsonEventStream); the chunks are assembled with
// readUIMessageStream. With --continue, each stream continues the message the previous one
// assembled (what useChat does for a continuation); without it, each starts afresh and
// "message" is the last one's. "errors" holds the `error` chunks' texts and any chunk
// readUIMessageStream could not apply. Exits 1 on a chunk the schema refuses.
import { readFileSync } from "node:fs";
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from "ai";

const args = process.argv.slice(2);
const continues = args[0] === "--continue";
const files = continues ? args.slice(1) : args;

function chunksOf(file, seen) {
  const body = new Blob([readFileSync(file)]).stream();
  return parseJsonEventStream({ stream: body, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream({
      transform(result, controller) {
        if (!result.success) {
          console.error(`${file}: a chunk the schema refuses: ${JSON.stringify(result.rawValue)}`);
          console.error(String(result.error).slice(0, 2000));
          process.exit(1);
        }
        seen.push(result.value);
        controller.enqueue(result.value);
      },
    }),
  );
}

const output = { chunks: [], errors: [], message: null };
let message;
for (const file of files) {
  const seen = [];
  output.chunks.push(seen);
  let last;
  const stream = readUIMessageStream({
    stream: chunksOf(file, seen),
    message: continues ? message : undefined,
    onError: (error) => output.errors.push(String(error.message ?? error)),
  });
  for await (const snapshot of stream) {
    last = snapshot;
  }
  message = last ?? message;
}
output.message = message ?? null;
process.stdout.write(JSON.stringify(output));
