// The official ACP client (@agentclientprotocol/sdk, from npm) driving
// orca acp for cmd/orca's TestACPWithTheOfficialClient: it prints one JSON
// object of what it saw on its standard output. Its environment names the
// SDK (ACP_SDK), orca's command (ORCA_CMD, JSON argv; ORCA_ENV, JSON;
// ORCA_ACP_FLAGS, JSON, after "acp"), the
// workspace (WS) and the two scripts of the scripted model (S1, S2).
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const acp = await import(pathToFileURL(process.env.ACP_SDK + "/dist/v1/stable/acp.js").href);
const { client, methods, ndJsonStream } = acp;
const argv = JSON.parse(process.env.ORCA_CMD);
const env = { ...process.env, ...JSON.parse(process.env.ORCA_ENV) };
const ws = process.env.WS;
const report = {};

// start starts orca acp with the script and returns its process and the
// client's stream to it.
function start(script) {
  const proc = spawn(argv[0], [...argv.slice(1), "acp", ...JSON.parse(process.env.ORCA_ACP_FLAGS || "[]"), "--script", script, "--permission-mode", "accept-edits", "-w", ws], { stdio: ["pipe", "pipe", "inherit"], env });
  const exited = new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal })));
  return { proc, exited, stream: ndJsonStream(Writable.toWeb(proc.stdin), Readable.toWeb(proc.stdout)) };
}

// updates are the session/update notifications, as kinds and the fields
// the test looks at; asked the permission requests; answers what the
// client answers them, in order.
function app(updates, asked, answers) {
  // answers: by tool call id.
  return client({ name: "orca-test-client" })
    .onNotification(methods.client.session.update, ({ params }) => {
      const u = params.update;
      const seen = { kind: u.sessionUpdate };
      if (u.content && u.content.type === "text") seen.text = u.content.text;
      if (u.toolCallId) seen.id = u.toolCallId;
      if (u.status) seen.status = u.status;
      if (u.title) seen.title = u.title;
      if (u.kind) seen.toolKind = u.kind;
      if (u.locations) seen.locations = u.locations.map((l) => l.path);
      if (Array.isArray(u.content)) {
        seen.content = u.content.map((c) => (c.type === "diff" ? { type: "diff", path: c.path, oldText: c.oldText, newText: c.newText } : { type: c.type, text: c.content && c.content.text }));
      }
      if (u.entries) seen.entries = u.entries.map((e) => e.content + ":" + e.status);
      updates.push(seen);
    })
    .onRequest(methods.client.session.requestPermission, async ({ params, agent }) => {
      asked.push({ id: params.toolCall.toolCallId, title: params.toolCall.title, options: params.options.map((o) => o.optionId + ":" + o.kind) });
      const optionId = answers[params.toolCall.toolCallId] || "reject_once";
      if (optionId === "cancel") {
        // The user cancels the turn while it asks: the pending request is
        // answered cancelled, as the protocol says.
        await agent.notify(methods.agent.session.cancel, { sessionId: params.sessionId });
        return { outcome: { outcome: "cancelled" } };
      }
      return { outcome: { outcome: "selected", optionId } };
    });
}

// The first editor: a new session, a prompt whose turn reads, edits,
// runs a command (allowed once) and another (rejected), and answers; then
// the editor goes away (its end of orca's stdin closes).
{
  const { proc, exited, stream } = start(process.env.S1);
  const updates = [], asked = [];
  await app(updates, asked, { echo: "allow_once", ok: "allow_once", no: "reject_once" }).connectWith(stream, async (ctx) => {
    const init = await ctx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true } });
    report.init = init;
    const mcpServers = process.env.MCP_EVERYTHING ? [{ name: "everything", command: process.execPath, args: [process.env.MCP_EVERYTHING], env: [] }] : [];
    const s = await ctx.request(methods.agent.session.new, { cwd: ws, mcpServers });
    report.session = s.sessionId;
    report.modes = s.modes;
    report.configOptions = s.configOptions;
    const model = s.configOptions[0].currentValue;
    report.setModel = (await ctx.request(methods.agent.session.setConfigOption, { sessionId: s.sessionId, configId: "model", value: model })).configOptions[0].currentValue;
    try {
      await ctx.request(methods.agent.session.setConfigOption, { sessionId: s.sessionId, configId: "model", value: "no-such-model" });
    } catch (e) {
      report.badModel = { code: e.code, message: e.message, data: e.data };
    }
    const r = await ctx.request(methods.agent.session.prompt, { sessionId: s.sessionId, prompt: [{ type: "text", text: "fix the greeting" }] });
    report.stop1 = r.stopReason;
    try {
      await ctx.request("orca/nonsense", {});
    } catch (e) {
      report.unknownMethod = { code: e.code, message: e.message };
    }
    try {
      await ctx.request(methods.agent.session.prompt, { sessionId: "session_nope", prompt: [{ type: "text", text: "hi" }] });
    } catch (e) {
      report.unknownSession = { code: e.code, message: e.message, data: e.data };
    }
  });
  report.updates1 = updates;
  report.asked1 = asked;
  proc.stdin.end();
  report.exit1 = await exited;
}

// The second editor: loads the session (its history replayed), prompts
// again, and cancels the turn while its command runs.
{
  const { proc, exited, stream } = start(process.env.S2);
  const updates = [], asked = [];
  await app(updates, asked, { asking: "cancel", slow: "allow_once" }).connectWith(stream, async (ctx) => {
    await ctx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    await ctx.request(methods.agent.session.load, { sessionId: report.session, cwd: ws, mcpServers: [] });
    report.replayed = updates.splice(0);
    // Cancelled while it asks: the call does not run.
    report.stopAsking = (await ctx.request(methods.agent.session.prompt, { sessionId: report.session, prompt: [{ type: "text", text: "ask me" }] })).stopReason;
    report.updatesAsking = updates.splice(0);
    // In bypassPermissions, the command is not asked about.
    await ctx.request(methods.agent.session.setMode, { sessionId: report.session, modeId: "bypassPermissions" });
    const running = ctx.request(methods.agent.session.prompt, { sessionId: report.session, prompt: [{ type: "text", text: "wait for it" }] });
    for (let i = 0; i < 200 && !updates.some((u) => u.status === "in_progress"); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await ctx.notify(methods.agent.session.cancel, { sessionId: report.session });
    report.stop2 = (await running).stopReason;
  });
  report.updates2 = updates;
  report.asked2 = asked;
  proc.stdin.end();
  report.exit2 = await exited;
}
console.log(JSON.stringify(report));
