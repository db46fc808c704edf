// The AG-UI protocol's own client (@ag-ui/client's HttpAgent, which
// checks every event it reads against the protocol's rules) drives orca
// serve's AG-UI endpoint: a run with text and a tool call that ends on a
// call of the front end's tool; the tool's result continues the thread;
// a call parked for approval interrupts a run, and a resume entry goes
// on with it; an abort ends a run mid-turn. It prints what it saw as
// JSON for serve's TestAGUIWithTheOfficialClient.
const { HttpAgent } = await import(process.env.AGUI_CLIENT + "/dist/index.mjs");

const base = process.env.BASE;
const headers = { Authorization: "Bearer " + process.env.TOKEN };
const pickColor = {
  name: "pick_color",
  description: "Asks the user to pick a colour in the app.",
  parameters: { type: "object", properties: { prompt: { type: "string" } }, required: ["prompt"] },
};

// brief is an event on one line; a text message's content is joined.
function collect(events) {
  const out = [];
  for (const e of events) {
    switch (e.type) {
      case "TEXT_MESSAGE_CONTENT":
        if (out.length && out[out.length - 1].startsWith("TEXT ")) out[out.length - 1] += e.delta;
        else out.push("TEXT " + e.delta);
        break;
      case "TOOL_CALL_START":
        out.push("TOOL_CALL_START " + e.toolCallName);
        break;
      case "TOOL_CALL_ARGS":
        out.push("TOOL_CALL_ARGS " + e.delta);
        break;
      case "TOOL_CALL_RESULT":
        out.push("TOOL_CALL_RESULT " + String(e.content).split("\n")[0].trim());
        break;
      case "RUN_FINISHED":
        out.push("RUN_FINISHED " + JSON.stringify(e.outcome ?? e.result ?? {}).replace(/"(call|park)_[^"]*"/g, '"$1_ID"'));
        break;
      case "RUN_ERROR":
        out.push("RUN_ERROR " + e.code + " " + e.message);
        break;
      default:
        out.push(e.type);
    }
  }
  return out;
}

async function run(agent, params) {
  const events = [];
  let error;
  try {
    await agent.runAgent(params, { onEvent: ({ event }) => { events.push(event); } });
  } catch (e) {
    error = String(e?.message ?? e);
  }
  return { events: collect(events), raw: events, error };
}

const out = {};
const agent = new HttpAgent({ url: base + "/agui", headers, threadId: "thread-1" });

// 1. Text, a tool of orca's, and a call of the front end's tool.
agent.addMessage({ id: "u1", role: "user", content: "What does a.txt say? Then ask me for a colour." });
let r = await run(agent, { tools: [pickColor], context: [{ description: "the page", value: "settings" }] });
out.first = r.events;
out.firstError = r.error;
const pending = r.raw.find((e) => e.type === "RUN_FINISHED")?.outcome?.pendingToolCallIds ?? [];
out.pending = pending.length;
out.assistantCalls = agent.messages.filter((m) => m.role === "assistant").flatMap((m) => (m.toolCalls ?? []).map((c) => c.function.name));

// 2. The front end ran its tool: its result continues the thread.
agent.addMessage({ id: "t1", role: "tool", toolCallId: pending[0], content: "The user picked teal." });
r = await run(agent, { tools: [pickColor] });
out.second = r.events;
out.secondError = r.error;

// 3. A call the policy asks about interrupts the run; resuming approves it.
agent.addMessage({ id: "u2", role: "user", content: "Make made.txt" });
r = await run(agent, { tools: [pickColor] });
out.parked = r.events;
out.interrupts = agent.pendingInterrupts.map((i) => ({ reason: i.reason, toolCallId: i.toolCallId, message: i.message, schema: !!i.responseSchema }));
// The client itself refuses a run that leaves the interrupt unanswered.
r = await run(agent, {});
out.unanswered = r.error;
const id = agent.pendingInterrupts[0]?.id;
r = await run(agent, { tools: [pickColor], resume: [{ interruptId: id, status: "resolved", payload: { approved: true } }] });
out.resumed = r.events;
out.resumedError = r.error;

// 4. An abort mid-turn.
const waiter = new HttpAgent({ url: base + "/agui", headers, threadId: "thread-2" });
waiter.addMessage({ id: "w1", role: "user", content: "wait" });
const events = [];
let waited;
await new Promise((resolve) => {
  waiter
    .runAgent({}, {
      onEvent: ({ event }) => {
        events.push(event);
        if (event.type === "TOOL_CALL_END") setTimeout(() => waiter.abortRun(), 100);
      },
    })
    .then(() => resolve(), (e) => { waited = String(e?.message ?? e); resolve(); });
});
out.aborted = collect(events);
out.abortError = waited;

console.log(JSON.stringify(out));
