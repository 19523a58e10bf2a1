// Unread counts per room. The daemon keeps no read markers, so this
// browser does: the time of the newest message seen in each room, in
// localStorage. A room whose last message is newer is counted from its
// recent messages; live messages add to the count of rooms not in view.

import { get } from './api.js';
import { state, emit, me, roomPath } from './state.js';

const PREFIX = 'jam.read.';
const memory = new Map(); // when localStorage is unavailable

function load(key) {
  try {
    return localStorage.getItem(key);
  } catch {
    return memory.get(key) ?? null;
  }
}

function save(key, value) {
  try {
    localStorage.setItem(key, value);
  } catch {
    memory.set(key, value);
  }
}

const counts = new Map(); // room -> number
const counted = new Map(); // room -> Set of message ids counted live
let viewing = null; // the room on screen

export function unread(room) {
  return counts.get(room) || 0;
}

export function readAt(room) {
  return load(PREFIX + room);
}

const later = (a, b) => Date.parse(a) > Date.parse(b);

// markRead records that the newest message of a room up to iso was seen.
export function markRead(room, iso) {
  if (iso) {
    const cur = readAt(room);
    if (!cur || later(iso, cur)) save(PREFIX + room, iso);
  }
  if (counts.get(room)) {
    counts.set(room, 0);
    counted.delete(room);
    emit('unread', room);
  }
}

export function setViewing(room) {
  viewing = room;
}

function countable(m, room) {
  if (m.message_type !== 'text' || m.local) return false;
  const acct = me(state.rooms.get(room)?.account);
  if (acct && m.sender_id === acct.user_id) return false;
  const seen = readAt(room);
  return !seen || later(m.inserted_at, seen);
}

// initCounts counts the unread messages of every room with something
// newer than its marker. The first time this browser opens jam, every
// room counts as read up to now.
export async function initCounts() {
  const rooms = [...state.rooms.values()];
  if (!load(PREFIX + 'init')) {
    const now = new Date().toISOString();
    for (const r of rooms) if (!readAt(r.id)) save(PREFIX + r.id, r.last_message_at || now);
    save(PREFIX + 'init', now);
  }
  const stale = rooms.filter((r) => r.id !== viewing && r.last_message_at && (!readAt(r.id) || later(r.last_message_at, readAt(r.id))));
  // A few at a time: each read may make the daemon fetch the room.
  const queue = stale.slice();
  const worker = async () => {
    for (let r = queue.shift(); r; r = queue.shift()) {
      try {
        const res = await get(`${roomPath(r.id)}/messages`, { account: r.account, limit: 100 });
        const ids = new Set((res.messages || []).filter((m) => countable(m, r.id)).map((m) => m.id));
        counts.set(r.id, ids.size);
        counted.set(r.id, ids);
        emit('unread', r.id);
      } catch {
        // The count stays unknown; the next live message adds to it.
      }
    }
  };
  await Promise.all([worker(), worker(), worker()]);
}

// noteMessage counts a message that arrived live, unless its room is on
// screen and the page is visible.
export function noteMessage(room, m) {
  if (!m || !countable(m, room)) return;
  if (room === viewing && document.visibilityState === 'visible') {
    markRead(room, m.inserted_at);
    return;
  }
  let ids = counted.get(room);
  if (!ids) counted.set(room, (ids = new Set()));
  if (ids.has(m.id)) return;
  ids.add(m.id);
  counts.set(room, (counts.get(room) || 0) + 1);
  emit('unread', room);
}
