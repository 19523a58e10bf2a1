// A deterministic ACP agent on the official TypeScript SDK, driven by
// jam's harness tests as a peer that shares no code with jam. The SDK
// checks every message jam sends against the protocol's schema.
//
// Usage: node agent.mjs STATE_DIR
// Prompts: "PERM" asks permission, then writes and reads notes.txt through
// the client; "ESCAPE" tries to write outside the session's directory;
// "SLOW" streams until cancelled; "MODEL" names the session's model;
// anything else is restated word by word. Sessions are kept in STATE_DIR,
// so a new process can load one.
//
// Models: sessions offer the models ts-small (the default) and ts-large
// as a session configuration option of category "model"; with
// JAM_TS_AGENT_MODELS=legacy as the older models object, set with
// session/set_model; with JAM_TS_AGENT_MODELS=none not at all.
import * as acp from "@agentclientprotocol/sdk";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";

const stateDir = process.argv[2];
mkdirSync(stateDir, { recursive: true });
const file = (id) => join(stateDir, `${id}.json`);
const load = (id) => JSON.parse(readFileSync(file(id), "utf8"));
const save = (s) => writeFileSync(file(s.id), JSON.stringify(s));
const cancelled = new Set();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let next = 0;

const MODELS = ["ts-small", "ts-large"];
const modelStyle = process.env.JAM_TS_AGENT_MODELS ?? "options";
const modelOption = (s) => ({
  id: "model", name: "Model", category: "model", type: "select", currentValue: s.model,
  options: MODELS.map((m) => ({ value: m, name: m })),
});
// What session/new and session/load return about the session's model.
const setup = (s) => {
  if (modelStyle === "legacy") {
    return { models: { availableModels: MODELS.map((m) => ({ modelId: m, name: m })), currentModelId: s.model } };
  }
  if (modelStyle === "none") {
    return {};
  }
  return { configOptions: [modelOption(s)] };
};
const setModel = (sessionId, model) => {
  const s = load(sessionId);
  if (!MODELS.includes(model)) {
    throw acp.RequestError.invalidParams({ model }, `unknown model ${model}`);
  }
  s.model = model;
  save(s);
  return s;
};

const text = (t) => ({ type: "text", text: t });
const say = (client, sessionId, t) =>
  client.notify(acp.methods.client.session.update, { sessionId, update: { sessionUpdate: "agent_message_chunk", content: text(t) } });

async function answer(client, s, prompt) {
  const sessionId = s.id;
  if (prompt.includes("SLOW")) {
    for (let i = 0; !cancelled.has(sessionId); i++) {
      await say(client, sessionId, `slow${i} `);
      await sleep(100);
    }
    return { stopReason: "cancelled" };
  }
  if (prompt.includes("MODEL")) {
    await say(client, sessionId, `model: ${s.model}`);
    return { stopReason: "end_turn" };
  }
  if (prompt.includes("ESCAPE")) {
    try {
      await client.request(acp.methods.client.fs.writeTextFile, { sessionId, path: "/etc/jam-escape", content: "x" });
      await say(client, sessionId, "escaped");
    } catch (e) {
      await say(client, sessionId, `refused: ${e.message}`);
    }
    return { stopReason: "end_turn" };
  }
  if (prompt.includes("PERM")) {
    const toolCallId = `call_${++next}`;
    await client.notify(acp.methods.client.session.update, {
      sessionId, update: { sessionUpdate: "tool_call", toolCallId, title: "Write notes.txt", kind: "edit", status: "pending" },
    });
    const res = await client.request(acp.methods.client.session.requestPermission, {
      sessionId,
      toolCall: { toolCallId, title: "Write notes.txt", kind: "edit" },
      options: [
        { optionId: "yes", name: "Allow", kind: "allow_once" },
        { optionId: "no", name: "Reject", kind: "reject_once" },
      ],
    });
    if (res.outcome.outcome !== "selected" || res.outcome.optionId !== "yes") {
      await client.notify(acp.methods.client.session.update, { sessionId, update: { sessionUpdate: "tool_call_update", toolCallId, status: "failed" } });
      await say(client, sessionId, "not allowed");
      return { stopReason: "end_turn" };
    }
    const path = join(s.cwd, "notes.txt");
    await client.request(acp.methods.client.fs.writeTextFile, { sessionId, path, content: "written via ACP\n" });
    const back = await client.request(acp.methods.client.fs.readTextFile, { sessionId, path });
    await client.notify(acp.methods.client.session.update, {
      sessionId, update: { sessionUpdate: "tool_call_update", toolCallId, status: "completed", content: [{ type: "content", content: text("written") }] },
    });
    await say(client, sessionId, `read back: ${back.content.trim()}`);
    return { stopReason: "end_turn" };
  }
  for (const w of `You said: ${prompt}`.split(" ")) {
    await say(client, sessionId, w + " ");
  }
  return { stopReason: "end_turn" };
}

acp
  .agent({ name: "jam-ts-agent" })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: true },
    authMethods: [],
    agentInfo: { name: "jam-ts-agent", version: "1.0.0" },
  }))
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    const s = { id: `sess_${process.pid}_${++next}`, cwd: params.cwd, history: [], model: MODELS[0] };
    save(s);
    return { sessionId: s.id, ...setup(s) };
  })
  .onRequest(acp.methods.agent.session.load, async ({ params, client }) => {
    const s = load(params.sessionId);
    s.cwd = params.cwd;
    save(s);
    for (const [kind, t] of s.history) {
      await client.notify(acp.methods.client.session.update, { sessionId: s.id, update: { sessionUpdate: kind, content: text(t) } });
    }
    return setup(s);
  })
  .onRequest(acp.methods.agent.session.setConfigOption, ({ params }) => {
    if (modelStyle !== "options" || params.configId !== "model") {
      throw acp.RequestError.invalidParams({ configId: params.configId }, `unknown option ${params.configId}`);
    }
    return { configOptions: [modelOption(setModel(params.sessionId, params.value))] };
  })
  .onRequest("session/set_model", (p) => p, ({ params }) => {
    if (modelStyle !== "legacy") {
      throw acp.RequestError.methodNotFound("session/set_model");
    }
    setModel(params.sessionId, params.modelId);
    return {};
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const s = load(params.sessionId);
    const prompt = params.prompt.filter((b) => b.type === "text").map((b) => b.text).join("\n");
    cancelled.delete(s.id);
    const res = await answer(client, s, prompt);
    s.history.push(["user_message_chunk", prompt], ["agent_message_chunk", `answered: ${prompt}`]);
    save(s);
    return res;
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    cancelled.add(params.sessionId);
  })
  .connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
