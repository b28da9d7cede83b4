// A client on the official TypeScript MCP SDK (the library MCP Inspector
// and many other clients are built on) lists ServerFS's tools and makes the
// given calls: the SDK compiles every outputSchema with ajv, which prints
// `unknown format "uint64" ignored …` (and the like) on stderr for each
// construct it does not know, and it validates each structuredContent
// against its schema. The test asserts nothing reaches stderr (issue 17).
//
// Usage: node schema_probe.mjs SDK_NODE_MODULES JSON
//   JSON: {"command", "args", "env", "calls": [{"name", "arguments"}]}
// Prints {"tools": [names], "results": [{"name", "isError", "text"}]}.

import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [modules, spec] = process.argv.slice(2);
const { command, args, env, calls } = JSON.parse(spec);
const sdk = (file) => import(pathToFileURL(join(modules, "@modelcontextprotocol/sdk/dist/esm", file)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

const client = new Client({ name: "serverfs-schema-probe", version: "1" });
await client.connect(new StdioClientTransport({ command, args, env, stderr: "ignore" }));
const { tools } = await client.listTools();
const results = [];
for (const call of calls) {
  const result = await client.callTool(call);
  const text = result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
  results.push({ name: call.name, isError: result.isError === true, text });
}
await client.close();
console.log(JSON.stringify({ tools: tools.map((t) => t.name), results }));
