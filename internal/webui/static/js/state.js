// What the page knows, shared by the views: accounts, rooms, agents and
// their socket states, the pipeline's delivery steps per message, working
// indicators, and unread counts. Views subscribe to "changed" topics.

import { get, enc } from './api.js';
import { feed } from './events.js';

const bus = new EventTarget();

export function on(topic, fn) {
  const l = (e) => fn(e.detail);
  bus.addEventListener(topic, l);
  return () => bus.removeEventListener(topic, l);
}

export function emit(topic, detail) {
  bus.dispatchEvent(new CustomEvent(topic, { detail }));
}

export const state = {
  accounts: [],
  rooms: new Map(), // id -> wire.Room
  roomsError: null,
  agents: [],
  agentsByPeer: new Map(),
  agentsById: new Map(),
  presence: new Map(), // peer -> socket state (up, connecting, …)
  // pipeline: message id -> Map(agent id -> {status, error})
  pipeline: new Map(),
  // activity: room id -> Set of participant ids working there
  activity: new Map(),
};

// me returns the account's person {user_id, handle} for a profile.
export function me(profile) {
  return state.accounts.find((a) => a.profile === profile) || state.accounts[0] || null;
}

// once shares one in-flight request among the callers that want it.
const inflight = new Map();
function once(name, fn) {
  let p = inflight.get(name);
  if (!p) {
    p = fn().finally(() => inflight.delete(name));
    inflight.set(name, p);
  }
  return p;
}

export const loadAccounts = () => once('accounts', fetchAccounts);
export const loadRooms = () => once('rooms', fetchRooms);
export const loadAgents = () => once('agents', fetchAgents);

async function fetchAccounts() {
  const res = await get('/v1/accounts');
  state.accounts = res.accounts || [];
  emit('accounts');
  return state.accounts;
}

async function fetchRooms() {
  if (!state.accounts.length) await loadAccounts();
  const rooms = new Map();
  let error = null;
  const profiles = state.accounts.length ? state.accounts.map((a) => a.profile) : [''];
  await Promise.all(profiles.map(async (p) => {
    try {
      const res = await get('/v1/rooms', { account: p });
      for (const r of res.rooms || []) rooms.set(r.id, r);
    } catch (e) {
      error = e;
    }
  }));
  // Keep what the page learned live (a newer last message) over the list.
  for (const [id, r] of rooms) {
    const old = state.rooms.get(id);
    if (old && old.last_message_at && (!r.last_message_at || old.last_message_at > r.last_message_at)) r.last_message_at = old.last_message_at;
  }
  state.rooms = rooms;
  state.roomsError = error;
  emit('rooms');
  return rooms;
}

async function fetchAgents() {
  const res = await get('/v1/agents');
  state.agents = res.agents || [];
  state.agentsByPeer = new Map(state.agents.map((a) => [a.peer, a]));
  state.agentsById = new Map(state.agents.map((a) => [a.agent_id, a]));
  for (const a of state.agents) state.presence.set(a.peer, a.state);
  emit('agents');
  return state.agents;
}

export function roomTitle(id) {
  const r = state.rooms.get(id);
  return (r && r.title) || 'Untitled room';
}

// presenceOf maps an agent socket state to online, connecting or offline.
export function presenceOf(socketState) {
  switch (socketState) {
    case 'up': return 'online';
    case 'connecting':
    case 'reconnecting': return 'connecting';
    default: return 'offline';
  }
}

// ownedStatus says what an owned agent is doing, from its socket's state
// and the states of its sessions' current turns: running (a turn runs),
// starting (a turn's process is being prepared, or the socket connects),
// idle (up with nothing to do) or stopped (not connected: jam cannot
// hand it anything). presence is the matching chip colour.
export function ownedStatus(socketState, turnStates) {
  let status;
  if (socketState === 'connecting' || socketState === 'reconnecting') status = 'starting';
  else if (socketState !== 'up') status = 'stopped';
  else if (turnStates.some((s) => s === 'running' || s === 'cancelling')) status = 'running';
  else if (turnStates.includes('preparing')) status = 'starting';
  else status = 'idle';
  const presence = { running: 'online', idle: 'online', starting: 'connecting', stopped: 'offline' }[status];
  return { status, presence };
}

// Delivery of a message to an agent, from the two sources: the message's
// per-recipient status on Band, and the daemon's pipeline events. The
// steps, in order: queued (jam holds it), delivered (handed to the agent's
// session or inbox), processing (the agent is on it), settled (answered or
// acknowledged); failed when the last attempt failed.
export const STATUSES = ['queued', 'delivered', 'processing', 'settled', 'failed'];
const RANK = { queued: 1, delivered: 2, processing: 3, settled: 4 };

export const EVENT_STATUS = {
  'message.spooled': 'queued',
  'message.queued': 'queued',
  'message.queued_unrouted': 'queued',
  'message.claim_retry': 'queued',
  'message.claimed': 'delivered',
  'message.delivered': 'delivered',
  'message.replied': 'processing',
  'message.settled': 'settled',
  'message.delivery_failed': 'failed',
  'message.claim_failed': 'failed',
  // Marked failed on Band: the agent could not serve it (still queued).
  'message.failed': 'failed',
};

const BAND_STATUS = { queued: 'queued', delivered: 'queued', processing: 'processing', processed: 'settled', failed: 'failed' };

// deliveries returns [{agentId, handle, status, error}] for a message.
export function deliveries(msg) {
  const out = new Map();
  for (const d of msg.delivery || []) {
    out.set(d.agent_id, { agentId: d.agent_id, handle: d.handle, band: BAND_STATUS[d.status] || 'queued', error: d.error });
  }
  const pipe = state.pipeline.get(msg.id);
  if (pipe) {
    for (const [agentId, p] of pipe) {
      const e = out.get(agentId) || { agentId };
      e.pipe = p.status;
      e.pipeError = p.error;
      out.set(agentId, e);
    }
  }
  const list = [];
  for (const e of out.values()) {
    let status;
    if (e.band === 'settled' || e.pipe === 'settled') status = 'settled';
    else if (e.pipe === 'failed' || (e.band === 'failed' && !e.pipe)) status = 'failed';
    else status = (RANK[e.pipe] || 0) >= (RANK[e.band] || 0) ? e.pipe : e.band;
    const agent = state.agentsById.get(e.agentId);
    list.push({ agentId: e.agentId, handle: e.handle || (agent && agent.handle) || '', status: status || 'queued', error: status === 'failed' ? (e.pipeError || e.error || '') : '' });
  }
  list.sort((a, b) => a.handle.localeCompare(b.handle));
  return list;
}

// The pipeline events, applied as they arrive.
feed.on('event', (ev) => {
  if (ev.kind === 'agent.state' && ev.peer) {
    state.presence.set(ev.peer, (ev.data && ev.data.state) || '');
    emit('presence', ev.peer);
    return;
  }
  if (ev.kind === 'room.activity' && ev.room) {
    applyActivity(ev.room, ev.data || {});
    return;
  }
  const status = EVENT_STATUS[ev.kind];
  if (!status || !ev.message_id || !ev.peer) return;
  const agent = state.agentsByPeer.get(ev.peer);
  if (!agent) {
    refreshAgentsSoon();
    return;
  }
  let m = state.pipeline.get(ev.message_id);
  if (!m) {
    m = new Map();
    state.pipeline.set(ev.message_id, m);
    // Keep the map bounded: the oldest messages go first.
    if (state.pipeline.size > 2000) state.pipeline.delete(state.pipeline.keys().next().value);
  }
  m.set(agent.agent_id, { status, error: (ev.data && ev.data.error) || '' });
  emit('delivery', { messageId: ev.message_id, room: ev.room, agentId: agent.agent_id, status });
});

feed.on('snapshot', (snap) => {
  const agents = snap && snap.agents;
  if (agents) {
    for (const [peer, s] of Object.entries(agents)) state.presence.set(peer, s);
    emit('presence', null);
  }
  const activity = snap && snap.activity;
  if (activity) {
    state.activity = new Map(Object.entries(activity).map(([room, ids]) => [room, new Set(ids)]));
    for (const room of state.activity.keys()) emit('activity', room);
  }
});

// After a loss the daemon may have restarted, and a restarted daemon does
// not end the indicators of the one before: forget them. Indicators that
// are still on are published again within seconds.
feed.on('resync', () => {
  const rooms = [...state.activity.keys()];
  state.activity = new Map();
  for (const room of rooms) emit('activity', room);
});

let agentsTimer = 0;
function refreshAgentsSoon() {
  if (agentsTimer) return;
  agentsTimer = setTimeout(() => {
    agentsTimer = 0;
    loadAgents().catch(() => {});
  }, 300);
}

// applyActivity records a change of a working indicator, a room.activity
// event {participant_id, working}. The daemon publishes both ends, so an
// indicator holds until its end arrives.
function applyActivity(room, data) {
  const id = data.participant_id;
  if (!id) return;
  let set = state.activity.get(room);
  if (!set) state.activity.set(room, (set = new Set()));
  if (data.working) {
    if (!set.has(id)) activitySince.set(`${room} ${id}`, Date.now());
    set.add(id);
  } else {
    set.delete(id);
    activitySince.delete(`${room} ${id}`);
  }
  emit('activity', room);
}

// activitySince: "room participant" -> when this page learnt that the
// indicator started (ms, the page's clock).
const activitySince = new Map();

export function isWorking(room, participantId) {
  return !!state.activity.get(room)?.has(participantId);
}

// workingSince returns when this page learnt that a participant's working
// indicator in a room started (0 when it knew it from a snapshot).
export function workingSince(room, participantId) {
  return activitySince.get(`${room} ${participantId}`) || 0;
}

// pendingFor counts an agent's messages in a room that it holds but has
// not settled (delivered or processing), from the pipeline.
export function pendingFor(roomMessages, agentId) {
  let n = 0;
  for (const m of roomMessages) {
    const d = deliveries(m).find((x) => x.agentId === agentId);
    if (d && (d.status === 'delivered' || d.status === 'processing')) n++;
  }
  return n;
}

export const roomPath = (id) => `/v1/rooms/${enc(id)}`;
