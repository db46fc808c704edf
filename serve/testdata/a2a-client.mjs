// The A2A protocol's own TypeScript client (@a2a-js/sdk, from npm) against
// orca serve, for serve's TestA2AWithTheOfficialClient: it prints one JSON
// object of what it saw. Its environment names the SDK (A2A_SDK), the
// server (BASE) and its token (TOKEN).
import { pathToFileURL } from "node:url";

const { ClientFactory, JsonRpcTransportFactory, DefaultAgentCardResolver } = await import(pathToFileURL(process.env.A2A_SDK + "/dist/client/index.js").href);
const { TaskState } = await import(pathToFileURL(process.env.A2A_SDK + "/dist/index.js").href);
const base = process.env.BASE;
const authed = (url, init = {}) => fetch(url, { ...init, headers: { ...(init.headers || {}), Authorization: "Bearer " + process.env.TOKEN } });
const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl: authed })], cardResolver: new DefaultAgentCardResolver({ fetchImpl: fetch }) });
const report = {};
const text = (t) => ({ content: { $case: "text", value: t }, metadata: undefined });
const message = (id, contextId, t, taskId = "") => ({ messageId: id, contextId, taskId, role: 1, parts: [text(t)], metadata: undefined, extensions: [], referenceTaskIds: [] });
const request = (m) => ({ tenant: "", message: m, configuration: undefined, metadata: undefined });
const brief = (ev) => {
  if (ev && ev.id && ev.status) {
    // A task itself (sendMessage's result).
    const m = ev.status.message;
    return { kind: "task", state: TaskState[ev.status.state], taskId: ev.id, text: m ? m.parts.map((p) => p.content && p.content.value).join("") : undefined,
      artifacts: (ev.artifacts || []).map((a) => a.parts.map((p) => p.content.value).join("")) };
  }
  const r = ev.payload || ev;
  const kind = r.$case || Object.keys(r)[0];
  const v = r.value || r[kind];
  const out = { kind };
  if (v && v.status) {
    out.state = TaskState[v.status.state];
    const m = v.status.message;
    if (m) out.text = m.parts.map((p) => p.content && p.content.value).join("");
  }
  if (v && v.artifact) out.text = v.artifact.parts.map((p) => p.content && p.content.value).join("");
  if (v && v.id) out.taskId = v.id;
  if (v && v.taskId) out.taskId = v.taskId;
  return out;
};

const cardResp = await fetch(base + "/.well-known/agent-card.json");
report.card = await cardResp.json();
const client = await factory.createFromUrl(base);

// A streamed task: a turn that reads a file and answers.
report.stream1 = [];
for await (const ev of client.sendMessageStream(request(message("m1", "c1", "what does a.txt say?")))) {
  report.stream1.push(brief(ev));
}
const taskId = report.stream1.find((e) => e.taskId).taskId;
const task = await client.getTask({ tenant: "", id: taskId, historyLength: undefined });
report.task1 = { state: TaskState[task.status.state], artifacts: task.artifacts.map((a) => a.parts.map((p) => p.content.value).join("")) };

// A call parked for approval: input-required; the next message approves it.
const parked = await client.sendMessage(request(message("m2", "c2", "make a file")));
report.parked = brief(parked);
const resumed = await client.sendMessage(request(message("m3", "c2", "approve", report.parked.taskId)));
report.resumed = brief(resumed);

// A cancel mid-turn.
report.stream3 = [];
let cancelled = null;
for await (const ev of client.sendMessageStream(request(message("m4", "c3", "wait")))) {
  const b = brief(ev);
  report.stream3.push(b);
  if (b.text && b.text.startsWith("Running Wait") && !cancelled) {
    cancelled = await client.cancelTask({ tenant: "", id: b.taskId, metadata: undefined });
  }
}
report.cancelled = cancelled && TaskState[cancelled.status.state];

// What the card does not offer is refused: push notifications.
try {
  await client.createTaskPushNotificationConfig({ tenant: "", taskId, config: { id: "p", url: "http://127.0.0.1:1/hook", token: "", authentication: undefined } });
  report.push = "accepted";
} catch (e) {
  report.push = String(e.message || e);
}
// An unknown task.
try {
  await client.getTask({ tenant: "", id: "no-such-task", historyLength: undefined });
  report.unknownTask = "found";
} catch (e) {
  report.unknownTask = String(e.message || e);
}
// The protocol's previous version (0.3), with the SDK's client of it.
// A 0.3 client reads the card's url and protocolVersion, and speaks to that.
const { LegacyJsonRpcTransport } = await import(pathToFileURL(process.env.A2A_SDK + "/dist/compat/v0_3/client/index.js").href);
report.legacyCard = { url: report.card.url, protocolVersion: report.card.protocolVersion };
const legacy = new LegacyJsonRpcTransport({ endpoint: report.card.url, fetchImpl: authed });
report.legacy = brief(await legacy.sendMessage(request(message("m5", "c4", "hello, old client"))));
console.log(JSON.stringify(report));
