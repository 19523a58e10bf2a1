// check.mjs drives a Band-compatible server (jam's hub, or Band itself) with
// the official Phoenix JavaScript client, as Band's TypeScript SDK does:
// connect as an agent, join chat_room:{room}, wait for a message_created
// push that mentions the agent (@[[agent id]]), make a heartbeat round trip,
// leave the channel and disconnect.
//
// Usage:
//   node check.mjs --url http://127.0.0.1:PORT --key band_a_… --agent AGENT_ID --room ROOM_ID
// or the environment variables JAM_HUB_URL, JAM_AGENT_KEY, JAM_AGENT_ID,
// JAM_ROOM_ID. --timeout-ms (default 20000) bounds the whole check.
//
// Every line on stdout is one JSON object with an "event": "open", "joined"
// (post the message once you see it), "message", "heartbeat", "left", and
// last "result" on success or "error" on failure. The exit status is 0 only
// after "result".

import { parseArgs } from "node:util";
import { Socket } from "phoenix";
import WebSocket from "ws";

const { values: args } = parseArgs({
  options: {
    url: { type: "string", default: process.env.JAM_HUB_URL },
    key: { type: "string", default: process.env.JAM_AGENT_KEY },
    agent: { type: "string", default: process.env.JAM_AGENT_ID },
    room: { type: "string", default: process.env.JAM_ROOM_ID },
    "timeout-ms": { type: "string", default: "20000" },
  },
});

let finished = false;

// emit writes one JSON line; exit waits for stdout to drain, since writes
// to a pipe are asynchronous in Node.
function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}
function exit(code) {
  finished = true;
  process.stdout.write("", () => process.exit(code));
}
function fail(message) {
  if (finished) return;
  emit({ event: "error", step, message });
  console.error(`phoenixjs check failed during ${step}: ${message}`);
  exit(1);
}

let step = "arguments";
for (const name of ["url", "key", "agent", "room"]) {
  if (!args[name]) fail(`missing --${name}`);
}
const timeoutMs = Number(args["timeout-ms"]);
if (!(timeoutMs > 0)) fail(`bad --timeout-ms ${args["timeout-ms"]}`);
if (finished) process.exitCode = 1;
else run();

function run() {
  const timer = setTimeout(() => fail(`timed out after ${timeoutMs} ms`), timeoutMs);
  // Nothing may end the check quietly: an idle event loop is a failure.
  process.on("beforeExit", () => fail("nothing left to wait for before the check finished"));

  // phoenix.js appends "/websocket" and vsn=2.0.0 itself.
  const endpoint = args.url.replace(/^http/, "ws").replace(/\/+$/, "") + "/api/v1/socket";
  const topic = `chat_room:${args.room}`;
  const token = `@[[${args.agent}]]`;

  const socket = new Socket(endpoint, {
    transport: WebSocket,
    params: { api_key: args.key, agent_id: args.agent },
    // phoenix.js also beats on its own and closes the socket when a reply is
    // a whole interval late; the check forces one beat with ping().
    heartbeatIntervalMs: 5000,
    timeout: 10000,
    // A check must not paper over a failure by reconnecting or rejoining.
    reconnectAfterMs: () => 3600000,
    rejoinAfterMs: () => 3600000,
  });

  let closing = false;
  let leaving = null; // {ref, done} while waiting for the server's reply to phx_leave
  let heartbeatReplies = 0;
  let push = null; // the raw message_created frame that mentions the agent

  socket.onOpen(() => emit({ event: "open", url: socket.endPointURL().replace(/api_key=[^&]*/, "api_key=…") }));
  socket.onError((err) => {
    if (!closing) fail(`socket error: ${err && err.message ? err.message : String(err && err.type ? err.type : err)}`);
  });
  socket.onClose((ev) => {
    if (!closing) fail(`socket closed by the server (code ${ev && ev.code}${ev && ev.reason ? ", " + ev.reason : ""})`);
  });
  socket.onMessage((msg) => {
    if (msg.event === "phx_reply") {
      if (leaving && msg.ref === leaving.ref && msg.topic === topic) {
        if (msg.payload.status !== "ok") return fail(`leave reply ${JSON.stringify(msg.payload)}`);
        const { done } = leaving;
        leaving = null;
        done();
        return;
      }
      if (msg.topic === "phoenix") {
        if (msg.payload.status !== "ok") fail(`heartbeat reply status ${JSON.stringify(msg.payload)}`);
        heartbeatReplies++;
      }
    }
    if (msg.topic === topic && msg.event === "message_created" && !push &&
        typeof msg.payload.content === "string" && msg.payload.content.includes(token)) {
      push = { join_ref: msg.join_ref ?? null, ref: msg.ref ?? null };
    }
  });

  step = "connect";
  socket.connect();

  const channel = socket.channel(topic, {});
  channel.onError((reason) => {
    if (!closing) fail(`channel error: ${JSON.stringify(reason)}`);
  });

  let received = false;
  let joinRefAtPush = null;
  channel.on("message_created", (payload) => {
    if (received || typeof payload.content !== "string" || !payload.content.includes(token)) return;
    received = true;
    joinRefAtPush = channel.joinRef();
    emit({ event: "message", id: payload.id, content: payload.content });
    heartbeat(payload);
  });

  step = "join";
  channel
    .join()
    .receive("ok", () => {
      step = "wait for message_created";
      emit({ event: "joined", topic, join_ref: channel.joinRef() });
    })
    .receive("error", (resp) => fail(`join refused: ${JSON.stringify(resp)}`))
    .receive("timeout", () => fail("join timed out"));

  function heartbeat(payload) {
    step = "heartbeat";
    const sent = socket.ping((latency) => {
      if (heartbeatReplies === 0) return fail("ping answered without a heartbeat phx_reply");
      emit({ event: "heartbeat", latency_ms: latency, replies: heartbeatReplies });
      leave(payload, latency);
    });
    if (!sent) fail("socket not connected for the heartbeat");
  }

  // phoenix.js resolves a leave with "ok" by itself (it cannot push once
  // the channel is leaving), so wait for the server's own phx_reply.
  function leave(payload, latency) {
    step = "leave";
    leaving = { ref: null, done: () => {
      emit({ event: "left", topic });
      disconnect(payload, latency);
    } };
    leaving.ref = channel.leave().ref;
  }

  function disconnect(payload, latency) {
    step = "disconnect";
    closing = true;
    socket.disconnect(() => {
      clearTimeout(timer);
      emit({
        event: "result",
        ok: true,
        message_id: payload.id,
        sender_id: payload.sender_id,
        content: payload.content,
        message_type: payload.message_type,
        push_join_ref: push ? push.join_ref : null,
        push_ref: push ? push.ref : null,
        channel_join_ref: joinRefAtPush,
        heartbeat_latency_ms: latency,
        heartbeat_replies: heartbeatReplies,
        phoenix_vsn: socket.vsn,
      });
      exit(0);
    }, 1000, "check done");
  }
}
