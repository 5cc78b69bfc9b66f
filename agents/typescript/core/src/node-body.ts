/** What a Node framework's body parser left on `req.body` (Express's `express.json()`,
 *  Fastify's parser), as the text of the body it read: `serveRunners` and `serveUiStream` both
 *  accept a request whose stream a parser consumed before them. */
export function parsedBodyText(parsed: unknown): string {
  if (typeof parsed === "string") return parsed;
  if (Buffer.isBuffer(parsed)) return parsed.toString("utf8");
  return JSON.stringify(parsed);
}
