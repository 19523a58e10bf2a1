// The web UI's entry point: the router (hash routes, so the daemon serves
// one page), the connection indicator, sign-out handling, and the
// bookkeeping every view shares (rooms, agents, unread counts).

import { h } from './dom.js';
import { feed } from './events.js';
import { state, loadAccounts, loadRooms, loadAgents, emit } from './state.js';
import { initCounts, noteMessage } from './unread.js';
import { mountSidebar, mountRooms } from './rooms.js';
import { mountRoom } from './room.js';
import { mountAgents } from './agents.js';
import { mountStatus } from './status.js';
import { mountAgentSessions, mountSession } from './sessions.js';
import { loadApprovals, mountIndicator } from './approvals.js';
import { mountDelegation } from './delegations.js';

const main = document.getElementById('main');
const conn = document.getElementById('conn');
const signoutBtn = document.getElementById('signout');
const sidebar = mountSidebar(document.getElementById('sidebar'));
mountIndicator(document.getElementById('approvals'));

const routes = [
  { re: /^#\/?$/, name: 'rooms', title: 'Rooms', mount: mountRooms },
  { re: /^#\/rooms\/([^/?#]+)(?:\/messages\/([^/?#]+))?$/, name: 'room', title: 'Room', mount: (el, m) => mountRoom(el, { id: decodeURIComponent(m[1]), focus: m[2] ? decodeURIComponent(m[2]) : null }) },
  { re: /^#\/agents$/, name: 'agents', title: 'Agents', mount: mountAgents },
  { re: /^#\/agents\/([^/?#]+)$/, name: 'agent-sessions', title: 'Sessions', mount: (el, m) => mountAgentSessions(el, { peer: decodeURIComponent(m[1]) }) },
  { re: /^#\/sessions\/([^/?#]+)(?:\/turns\/([^/?#]+))?$/, name: 'session', title: 'Session', mount: (el, m) => mountSession(el, { id: decodeURIComponent(m[1]), turn: m[2] ? decodeURIComponent(m[2]) : null }) },
  { re: /^#\/delegations\/([^/?#]+)$/, name: 'delegation', title: 'Delegation', mount: (el, m) => mountDelegation(el, { id: decodeURIComponent(m[1]) }) },
  { re: /^#\/status$/, name: 'status', title: 'Status', mount: mountStatus },
];

let view = null;
let firstRoute = true;

function route() {
  const hash = location.hash || '#/';
  if (!hash.startsWith('#/') && hash !== '#') return; // an in-page anchor
  let r = null, m = null;
  for (const c of routes) {
    m = c.re.exec(hash);
    if (m) {
      r = c;
      break;
    }
  }
  if (view && view.destroy) view.destroy();
  view = null;
  if (!r) {
    document.body.dataset.route = 'missing';
    main.replaceChildren(h('div', { class: 'page' }, h('h1', { id: 'page-title', tabindex: '-1' }, 'Not found'), h('p', null, 'There is no such page. ', h('a', { href: '#/' }, 'See the rooms.'))));
  } else {
    document.body.dataset.route = r.name;
    document.title = `${r.title} · jam`;
    view = r.mount(main, m);
  }
  for (const a of document.querySelectorAll('[data-nav]')) {
    const section = { room: 'rooms', delegation: 'rooms', 'agent-sessions': 'agents', session: 'agents' };
    const on = a.dataset.nav === (r && (section[r.name] || r.name));
    if (on) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  sidebar.setCurrent(r && r.name === 'room' ? decodeURIComponent(m[1]) : null);
  // Move focus to the new page's heading, except on the first load.
  if (!firstRoute) {
    const heading = document.getElementById('page-title');
    if (heading) heading.focus({ preventScroll: true });
    main.scrollTop = 0;
  }
  firstRoute = false;
}

window.addEventListener('hashchange', route);

// The skip link moves focus without changing the route.
document.querySelector('[data-skip]').addEventListener('click', (e) => {
  e.preventDefault();
  (document.getElementById('page-title') || main).focus();
});

// Connection indicator.
const CONN_TEXT = { connecting: 'Connecting…', live: 'Live', reconnecting: 'Reconnecting…', signedout: 'Signed out' };
function setConn(s) {
  conn.dataset.state = s;
  conn.querySelector('.conn-text').textContent = CONN_TEXT[s] || s;
  conn.title = s === 'reconnecting' ? 'The daemon does not answer; retrying. Nothing is lost: the page catches up when it is back.' : '';
}
feed.on('state', setConn);

// Signed out: by the button, or because the session ended (idle,
// too old, signed out elsewhere, or its state file was removed).
let signedOut = false;
let byButton = false;
window.addEventListener('jam:signedout', () => {
  if (signedOut) return;
  signedOut = true;
  feed.stop();
  setConn('signedout');
  signoutBtn.hidden = true;
  const why = byButton ? 'This browser is signed out. ' : 'This browser\'s session is no longer valid. ';
  const dialog = h('div', { class: 'signin', role: 'alertdialog', tabindex: '-1', 'aria-modal': 'true', 'aria-labelledby': 'so-title', 'aria-describedby': 'so-text' },
    h('h1', { id: 'so-title' }, 'Signed out'),
    h('p', { id: 'so-text' }, why + 'Open a new sign-in link: run ', h('code', null, 'jam ui'), ' on this machine.'));
  document.body.append(h('div', { class: 'overlay' }, dialog));
  dialog.focus();
});

// Sign-out ends the session in the daemon: the cookie opens nothing
// afterwards, even if it was copied.
signoutBtn.addEventListener('click', async () => {
  signoutBtn.disabled = true;
  try {
    const res = await fetch('/signout', { method: 'POST', headers: { 'X-Jam-UI': '1' }, credentials: 'same-origin', cache: 'no-store' });
    if (res.ok || res.status === 401) {
      byButton = true;
      window.dispatchEvent(new CustomEvent('jam:signedout'));
      return;
    }
  } catch {
    // The daemon does not answer; the button stays for another try.
  }
  signoutBtn.disabled = false;
});

// While the stream is down, ask once whether the session still holds: an
// EventSource cannot tell a stopped daemon from a refused session.
feed.on('lost', async () => {
  try {
    const res = await fetch('/v1/status', { credentials: 'same-origin', cache: 'no-store' });
    if (res.status === 401) window.dispatchEvent(new CustomEvent('jam:signedout'));
  } catch {
    // The daemon is down; the feed keeps retrying.
  }
});

// Shared bookkeeping of room changes: the rooms' last message times and
// the unread counts.
feed.on('event', (ev) => {
  if (ev.kind !== 'room.message' || !ev.room) return;
  const data = ev.data || {};
  const r = state.rooms.get(ev.room);
  if (!r) {
    refreshRooms();
    return;
  }
  const m = data.message;
  if (m && data.kind !== 'delete' && m.message_type === 'text' && (!r.last_message_at || m.inserted_at > r.last_message_at)) {
    r.last_message_at = m.inserted_at;
    emit('rooms');
  }
  if (m && data.kind === 'upsert') noteMessage(ev.room, m);
});

let roomsTimer = 0;
function refreshRooms() {
  if (roomsTimer) return;
  roomsTimer = setTimeout(async () => {
    roomsTimer = 0;
    await loadRooms().catch(() => {});
    initCounts();
  }, 500);
}

feed.on('resync', async () => {
  await Promise.all([loadAccounts().catch(() => {}), loadAgents().catch(() => {})]);
  refreshRooms();
});

async function boot() {
  feed.start();
  route();
  try {
    await loadAccounts();
  } catch {
    // Shown by the views that need accounts.
  }
  await Promise.all([loadRooms().catch(() => {}), loadAgents().catch(() => {}), loadApprovals().catch(() => {})]);
  initCounts();
}

boot();
