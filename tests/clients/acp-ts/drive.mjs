// Drives an ACP agent with the official TypeScript SDK (stable v1 API) and tees
// every line the agent writes to $ACP_TEE_OUT and every line we write to
// $ACP_TEE_IN, for schema validation by the Python test. Prints one JSON summary
// line on stdout. Usage: node drive.mjs <cwd> <agent command> [args...]
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [cwd, cmd, ...args] = process.argv.slice(2);
const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "inherit"] });

function tee(path) {
  let pending = "";
  return (chunk) => {
    pending += chunk.toString("utf8");
    const lines = pending.split("\n");
    pending = lines.pop();
    for (const line of lines) appendFileSync(path, line + "\n");
  };
}
child.stdout.on("data", tee(process.env.ACP_TEE_OUT));
const toAgent = new Writable({
  write(chunk, _enc, done) {
    tee(process.env.ACP_TEE_IN)(chunk);
    child.stdin.write(chunk, done);
  },
});
const stream = acp.ndJsonStream(Writable.toWeb(toAgent), Readable.toWeb(child.stdout));

const updates = [];
const permissions = [];
const app = acp
  .client({ name: "loopd-ts-conformance" })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    permissions.push({ title: params.toolCall.title, kinds: params.options.map((o) => o.kind) });
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update.sessionUpdate);
  });

const summary = {};
await app.connectWith(stream, async (ctx) => {
  const a = acp.methods.agent;
  const init = await ctx.request(a.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "loopd-ts-conformance", version: "0.0.1" },
  });
  summary.protocolVersion = init.protocolVersion;
  const { sessionId, modes } = await ctx.request(a.session.new, { cwd, mcpServers: [] });
  summary.modes = modes.availableModes.map((m) => m.id);
  const first = await ctx.request(a.session.prompt, {
    sessionId,
    prompt: [
      { type: "text", text: "write the file" },
      { type: "resource_link", uri: `file://${cwd}/a.py`, name: "a.py" },
      { type: "resource", resource: { uri: `file://${cwd}/b.py`, text: "print(1)\n" } },
    ],
  });
  summary.stopReason = first.stopReason;
  await ctx.request(a.session.setMode, { sessionId, modeId: "full_auto" });
  const opts = await ctx.request(a.session.setConfigOption, {
    sessionId, configId: "mode", value: "plan",
  });
  summary.mode = opts.configOptions.find((o) => o.id === "mode").currentValue;
  const listed = await ctx.request(a.session.list, {});
  summary.listed = listed.sessions.map((s) => s.sessionId).includes(sessionId);
  await ctx.request(a.session.close, { sessionId });
  const before = updates.length;
  await ctx.request(a.session.load, { sessionId, cwd, mcpServers: [] });
  summary.replayed = updates.slice(before);
  summary.updates = updates.slice(0, before);
  summary.permissions = permissions;
});
child.kill();
console.log(JSON.stringify(summary));
