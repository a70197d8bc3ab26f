// A minimal MCP server over stdio (newline-delimited JSON-RPC 2.0), with
// no dependencies, for the Gemini CLI end-to-end test. It offers one tool,
// write_note, which writes text to a file: a side effect the test can see
// on disk.
import { createInterface } from "node:readline";
import { writeFileSync } from "node:fs";

const send = (msg) => process.stdout.write(JSON.stringify(msg) + "\n");
const reply = (id, result) => send({ jsonrpc: "2.0", id, result });

const tools = [
  {
    name: "write_note",
    description: "Writes a note (text) to a file (path).",
    inputSchema: {
      type: "object",
      properties: { path: { type: "string" }, text: { type: "string" } },
      required: ["path", "text"],
    },
  },
];

createInterface({ input: process.stdin }).on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  if (msg.id === undefined || msg.id === null) return; // a notification
  switch (msg.method) {
    case "initialize":
      reply(msg.id, {
        protocolVersion: msg.params?.protocolVersion ?? "2025-06-18",
        capabilities: { tools: {} },
        serverInfo: { name: "toolgate-e2e", version: "1.0.0" },
      });
      break;
    case "tools/list":
      reply(msg.id, { tools });
      break;
    case "tools/call": {
      const args = msg.params?.arguments ?? {};
      try {
        writeFileSync(String(args.path), String(args.text));
        reply(msg.id, { content: [{ type: "text", text: `wrote ${args.path}` }] });
      } catch (err) {
        reply(msg.id, { isError: true, content: [{ type: "text", text: String(err) }] });
      }
      break;
    }
    case "ping":
      reply(msg.id, {});
      break;
    default:
      send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: `method not found: ${msg.method}` } });
  }
});
