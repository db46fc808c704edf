// A remote A2A agent, on the protocol's own TypeScript SDK (@a2a-js/sdk
// with express, from npm), for app's TestRemoteA2AAgent: it answers a
// prompt with "remote says: PROMPT" (a working status first), fails the
// prompt "fail", and takes 30 s over the prompt "slow". It prints the
// port it listens on (127.0.0.1). Its environment names the SDK's
// node_modules folder (A2A_MODULES).
import { pathToFileURL } from "node:url";
import { createRequire } from "node:module";

const mods = process.env.A2A_MODULES;
const load = (p) => import(pathToFileURL(mods + "/" + p).href);
const { DefaultRequestHandler, InMemoryTaskStore, AgentEvent } = await load("@a2a-js/sdk/dist/server/index.js");
const { jsonRpcHandler, agentCardHandler, UserBuilder } = await load("@a2a-js/sdk/dist/server/express/index.js");
const { TaskState, Role } = await load("@a2a-js/sdk/dist/index.js");
const express = createRequire(mods + "/")("express");

const text = (t) => ({ content: { $case: "text", value: t }, metadata: undefined, filename: "", mediaType: "text/plain" });
const status = (ctx, state, t) => AgentEvent.statusUpdate({ taskId: ctx.taskId, contextId: ctx.contextId,
  status: { state, message: t ? { messageId: "s" + Math.random(), contextId: ctx.contextId, taskId: ctx.taskId, role: Role.ROLE_AGENT, parts: [text(t)], metadata: undefined, extensions: [], referenceTaskIds: [] } : undefined, timestamp: undefined },
  metadata: undefined });

const executor = {
  async execute(ctx, bus) {
    const prompt = ctx.userMessage.parts.map((p) => p.content && p.content.value).join("");
    bus.publish(AgentEvent.task({ id: ctx.taskId, contextId: ctx.contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined }, artifacts: [], history: [ctx.userMessage], metadata: undefined }));
    bus.publish(status(ctx, TaskState.TASK_STATE_WORKING, "thinking about it"));
    if (prompt === "slow") {
      await new Promise((r) => setTimeout(r, 30000));
    }
    if (prompt === "fail") {
      bus.publish(status(ctx, TaskState.TASK_STATE_FAILED, "it broke"));
      bus.finished();
      return;
    }
    bus.publish(AgentEvent.artifactUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, artifact: { artifactId: "a1", name: "answer", description: "", parts: [text("remote says: " + prompt)], metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
    bus.publish(status(ctx, TaskState.TASK_STATE_COMPLETED));
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    bus.finished();
  },
};

const app = express();
const server = app.listen(0, "127.0.0.1", () => {
  const port = server.address().port;
  const card = {
    name: "echoer", description: "Says back what it is told.", version: "1.0.0",
    supportedInterfaces: [{ url: `http://127.0.0.1:${port}/a2a`, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" }],
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    defaultInputModes: ["text/plain"], defaultOutputModes: ["text/plain"], skills: [], securitySchemes: {}, securityRequirements: [], signatures: [],
    provider: undefined, documentationUrl: "", iconUrl: "",
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler }));
  app.use("/a2a", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  console.log(port);
});
