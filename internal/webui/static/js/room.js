// A room: its timeline (live from the event stream), its participants
// with presence and working indicators, and the composer.

import { h, timeEl, announce, initials, throttle } from './dom.js';
import { get, post } from './api.js';
import { feed } from './events.js';
import { state, on, me, loadRooms, loadAgents, deliveries, presenceOf, ownedStatus, isWorking, workingSince, pendingFor, roomPath } from './state.js';
import { renderContent, plainContent, Completion } from './mention.js';
import { renderMarkdown, measure, preview } from './markdown.js';
import { describe } from './errors.js';
import { markRead, setViewing, noteMessage } from './unread.js';
import { loadSessions, sessionHref, ACTIVE } from './sessions.js';
import { loadUsage, sumLine } from './usage.js';
import { summary } from './changes.js';
import { forRoom, loadApprovals, onApprovals, answer, timeLeft, pending as pendingApprovals } from './approvals.js';
import { mountPanel as mountDelegations } from './delegations.js';

const STATUS_TEXT = {
  queued: 'queued',
  delivered: 'delivered',
  processing: 'processing',
  settled: 'settled',
  failed: 'failed',
};

// A message over COLLAPSE_LINES lines or COLLAPSE_CHARS characters shows
// its first PREVIEW_LINES lines (at most PREVIEW_CHARS) and a Show more
// button.
const COLLAPSE_LINES = 24, COLLAPSE_CHARS = 2400;
const PREVIEW_LINES = 12, PREVIEW_CHARS = 1200;

const byTime = (a, b) => {
  const x = Date.parse(a.inserted_at) || 0, y = Date.parse(b.inserted_at) || 0;
  if (x !== y) return x - y;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
};

export function mountRoom(main, { id, focus = null }) {
  const room = { id, account: state.rooms.get(id)?.account || '' };
  const messages = new Map(); // id -> wire.RoomMessage
  const arrivedAt = new Map(); // id -> when this page first saw it (ms)
  const nodes = new Map(); // id -> li
  let participants = [];
  let roomSeq = null; // the room sequence the timeline reflects
  let loaded = false;
  let pending = []; // room.message events that arrived before the first load
  let destroyed = false;
  const expanded = new Set(); // ids of long messages shown in full
  let focused = null; // the message the route named, once shown

  // Layout.
  const title = h('h1', { id: 'page-title', tabindex: '-1' }, state.rooms.get(id)?.title || 'Room');
  // usageEl: what the owned agents' turns in this room used.
  const usageEl = h('p', { class: 'sub room-usage', hidden: true, 'data-role': 'room-usage', title: 'What the agents’ turns in this room used' });
  const peopleBtn = h('button', { type: 'button', class: 'btn btn--quiet people-toggle', 'aria-expanded': 'false', 'aria-controls': 'people' }, 'People');
  const timeline = h('ol', { class: 'timeline', 'aria-labelledby': 'page-title', 'aria-describedby': 'timeline-desc' });
  const wrap = h('div', { class: 'timeline-wrap', role: 'region', tabindex: '0', 'aria-label': 'Messages' },
    h('p', { id: 'timeline-desc', class: 'visually-hidden' }, 'Messages, oldest first. New messages are announced.'),
    timeline);
  const peopleList = h('ul');
  // addForm adds one of jam's agents that is not in the room yet.
  const addSelect = h('select', { id: 'add-agent', name: 'agent' });
  const addBtn = h('button', { type: 'submit', class: 'btn btn--quiet' }, 'Add');
  const addMsg = h('p', { class: 'form-note', role: 'status', 'data-role': 'add-agent-result' });
  const addForm = h('form', { class: 'add-agent', 'aria-label': 'Add an agent to this room', hidden: true },
    h('label', { for: 'add-agent' }, 'Add an agent'),
    h('div', { class: 'row' }, addSelect, addBtn), addMsg);
  const people = h('aside', { id: 'people', class: 'people', 'aria-labelledby': 'people-title', hidden: true },
    h('h2', { id: 'people-title' }, 'Participants'), peopleList, addForm);
  const ta = h('textarea', { id: 'compose', name: 'text', rows: '1', placeholder: 'Message… type @ to mention', autocomplete: 'off', 'aria-describedby': 'compose-hint compose-error' });
  const suggest = h('ul', { id: 'mention-list', class: 'suggest', 'aria-label': 'Participants to mention' });
  const sendBtn = h('button', { type: 'submit', class: 'btn' }, 'Send');
  const errorEl = h('p', { id: 'compose-error', class: 'form-error', role: 'alert' });
  const workingEl = h('p', { class: 'status-line', role: 'status' });
  // Links to the owned agents' running turns in this room.
  const liveEl = h('p', { class: 'live-turns' });
  const form = h('form', { class: 'composer', 'aria-label': 'Send a message' },
    workingEl,
    liveEl,
    h('label', { for: 'compose', class: 'visually-hidden' }, 'Message'),
    h('div', { class: 'composer-row' }, suggest, ta, sendBtn),
    h('p', { id: 'compose-hint', class: 'hint' }, 'Enter sends, Shift+Enter starts a new line. Mention an agent with @ to give it work.'),
    errorEl);
  // The approvals the room's agents wait for, above the composer.
  const asks = h('section', { class: 'asks', 'aria-label': 'Approvals waiting for you', hidden: true });
  // The delegations of the room's sessions, as a tree; nothing while none.
  const delegationsEl = h('section', { class: 'delegations', 'aria-label': 'Delegations', hidden: true });
  const back = h('a', { href: '#/', class: 'btn btn--quiet back', 'aria-label': 'All rooms', title: 'All rooms' }, h('span', { 'aria-hidden': 'true' }, '‹'));
  main.replaceChildren(h('section', { class: 'room', 'aria-labelledby': 'page-title' },
    h('header', { class: 'room-head' }, back, title, usageEl, peopleBtn),
    h('div', { class: 'room-body' }, wrap, people),
    delegationsEl,
    asks,
    form));

  const showPeople = (open) => {
    people.hidden = !open;
    peopleBtn.setAttribute('aria-expanded', String(open));
  };
  peopleBtn.addEventListener('click', () => showPeople(people.hidden));
  people.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && getComputedStyle(peopleBtn).display !== 'none') {
      showPeople(false);
      peopleBtn.focus();
    }
  });

  // Names for mention tokens: participants, agents, delivery handles, me.
  const names = () => {
    const m = new Map();
    for (const a of state.agents) if (a.handle) m.set(a.agent_id.toLowerCase(), a.handle);
    for (const p of participants) m.set(p.id.toLowerCase(), p.handle || p.name);
    for (const msg of messages.values()) for (const d of msg.delivery || []) if (d.handle) m.set(d.agent_id.toLowerCase(), d.handle);
    const acct = me(room.account);
    if (acct && acct.handle) m.set(acct.user_id.toLowerCase(), acct.handle);
    return m;
  };
  const senderName = (msg) => {
    if (msg.sender_name) return msg.sender_name;
    const p = participants.find((x) => x.id === msg.sender_id);
    if (p) return p.name || p.handle;
    const a = state.agentsById.get(msg.sender_id);
    return a ? a.name : 'Unknown';
  };
  const selfId = () => me(room.account)?.user_id || '';

  function renderMessage(msg) {
    const mine = msg.sender_id === selfId();
    const agent = /agent/i.test(msg.sender_type || '');
    const ns = names();
    if (msg.message_type === 'system' || msg.local) {
      return h('li', { class: 'msg msg--system', dataset: { id: msg.id, type: msg.message_type } },
        renderContent(msg.text && !msg.content ? msg.text : msg.content, ns, selfId()), ' · ', timeEl(msg.inserted_at));
    }
    const cls = ['msg', mine ? 'msg--me' : agent ? 'msg--agent' : 'msg--user'];
    if (msg.message_type && msg.message_type !== 'text') cls.push('msg--event');
    if (msg.message_type === 'attention' || msg.message_type === 'error') cls.push(`msg--${msg.message_type}`);
    if (msg.pending) cls.push('msg--pending');
    if (msg.id === focused) cls.push('msg--focus');
    const dl = deliveries(msg);
    const handle = participants.find((p) => p.id === msg.sender_id)?.handle;
    return h('li', { class: cls.join(' '), tabindex: msg.id === focused ? '-1' : null, dataset: { id: msg.id, sender: mine ? 'me' : agent ? 'agent' : 'user', type: msg.message_type || 'text' } },
      h('div', { class: 'msg-head' },
        h('span', { class: 'who' }, mine ? 'You' : senderName(msg)),
        handle && !mine ? h('span', { class: 'sub' }, `@${handle}`) : null,
        msg.message_type && msg.message_type !== 'text' ? h('span', { class: 'kind' }, msg.message_type.replace(/_/g, ' ')) : null,
        msg.pending ? h('span', { class: 'sub' }, 'sending…') : timeEl(msg.inserted_at)),
      body(msg, ns),
      links(msg),
      dl.length ? h('ul', { class: 'delivery', 'aria-label': 'Delivery' }, dl.map((d) => h('li', {
        class: 'chip',
        dataset: { agent: d.agentId, status: d.status },
        title: d.error || `${d.handle ? `@${d.handle}` : 'agent'}: ${STATUS_TEXT[d.status]}`,
      }, `${d.handle ? `@${d.handle}` : 'agent'} · ${STATUS_TEXT[d.status]}`,
      // A failure says why where the person looks, not only on hover.
      d.status === 'failed' && d.error ? h('span', { class: 'reason' }, `: ${d.error}`) : null))) : null);
  }

  // body renders a message's Markdown; a long message shows its first
  // lines until the person asks for more (expanded keeps that choice
  // across re-renders).
  function body(msg, ns) {
    const src = msg.content || msg.text || '';
    const size = measure(src);
    const long = size.lines > COLLAPSE_LINES || size.chars > COLLAPSE_CHARS;
    const open = expanded.has(msg.id);
    const text = (t) => renderContent(t, ns, selfId());
    const bodyId = `body-${msg.id}`;
    const el = h('div', { class: long && !open ? 'msg-body md msg-body--collapsed' : 'msg-body md', id: bodyId },
      renderMarkdown(long && !open ? preview(src, PREVIEW_LINES, PREVIEW_CHARS) : src, text));
    if (!long) return el;
    const more = size.lines > PREVIEW_LINES ? `${size.lines >= 1000 ? '1000+' : size.lines} lines` : `${Math.round(size.chars / 1024)} KB`;
    const btn = h('button', { type: 'button', class: 'btn btn--quiet more', 'aria-expanded': String(open), 'aria-controls': bodyId, dataset: { more: msg.id } },
      open ? 'Show less' : `Show more (${more})`);
    btn.addEventListener('click', () => {
      if (expanded.has(msg.id)) expanded.delete(msg.id);
      else expanded.add(msg.id);
      rerender(msg.id);
      const again = nodes.get(msg.id)?.querySelector('button.more');
      if (again) again.focus({ preventScroll: true });
      if (!expanded.has(msg.id)) nodes.get(msg.id)?.scrollIntoView({ block: 'nearest' });
    });
    return [el, btn];
  }

  const nearBottom = () => wrap.scrollHeight - wrap.scrollTop - wrap.clientHeight < 120;
  // A timeline read at its end stays there while messages are drawn
  // again taller (links, delivery chips) and while the cards and lines
  // around the composer take height from it. The scroll is smooth: its
  // steps say nothing of where the person reads until it ends.
  let atEnd = true, following = false;
  const toBottom = () => {
    following = true;
    wrap.scrollTop = wrap.scrollHeight;
  };
  wrap.addEventListener('scroll', () => { if (!following) atEnd = nearBottom(); }, { passive: true });
  wrap.addEventListener('scrollend', () => {
    following = false;
    atEnd = nearBottom();
  });
  const resized = new ResizeObserver(() => { if (atEnd) toBottom(); });
  resized.observe(wrap);
  resized.observe(timeline);

  function emptyState() {
    const empty = timeline.querySelector('.empty');
    if (messages.size === 0 && !empty) timeline.append(h('li', { class: 'empty' }, 'No messages yet. Mention an agent with @ to give it work.'));
    if (messages.size > 0 && empty) empty.remove();
  }

  // upsert puts a message in the timeline at its place in time order.
  function upsert(msg, { live = false } = {}) {
    const old = messages.get(msg.id);
    if (old && !old.pending && msg.seq && old.seq && msg.seq < old.seq) return; // an older state
    const stick = nearBottom();
    if (!arrivedAt.has(msg.id)) arrivedAt.set(msg.id, Date.now());
    messages.set(msg.id, msg);
    const li = renderMessage(msg);
    const prev = nodes.get(msg.id);
    if (prev && (!old || byTime(old, msg) === 0)) {
      prev.replaceWith(li);
    } else {
      if (prev) prev.remove();
      let before = null;
      for (const [oid, node] of nodes) {
        const o = messages.get(oid);
        if (oid !== msg.id && o && byTime(msg, o) < 0 && (!before || byTime(o, messages.get(before.dataset.id)) < 0)) before = node;
      }
      timeline.insertBefore(li, before);
    }
    nodes.set(msg.id, li);
    emptyState();
    if (stick) toBottom();
    if (live && !old && msg.message_type === 'text' && msg.sender_id !== selfId()) {
      announce(`${senderName(msg)}: ${plainContent(msg.content || msg.text, names()).slice(0, 200)}`);
    }
    renderWorking();
    if (!old || old.reply_to !== msg.reply_to || old.turn !== msg.turn) relink();
  }

  function remove(msgId) {
    messages.delete(msgId);
    arrivedAt.delete(msgId);
    linkKeys.delete(msgId);
    nodes.get(msgId)?.remove();
    nodes.delete(msgId);
    emptyState();
  }

  function rerender(msgId) {
    const msg = messages.get(msgId);
    const node = nodes.get(msgId);
    if (!msg || !node) return;
    const li = renderMessage(msg);
    node.replaceWith(li);
    nodes.set(msgId, li);
  }

  function renderPeople() {
    const acctId = selfId();
    const list = participants.slice().sort((a, b) => {
      const t = (x) => (x.id === acctId ? 0 : /agent/i.test(x.type) ? 1 : 2);
      return t(a) - t(b) || (a.name || '').localeCompare(b.name || '');
    });
    peopleBtn.textContent = `People (${list.length})`;
    renderAddAgent();
    peopleList.replaceChildren(...list.map((p) => {
      const agent = state.agentsById.get(p.id);
      const isAgent = /agent/i.test(p.type);
      let presence = null, presenceText = '';
      if (p.id === acctId) {
        presence = 'online';
        presenceText = 'you';
      } else if (agent) {
        const socket = state.presence.get(agent.peer) || agent.state;
        if (agent.runtime) {
          const o = ownedStatus(socket, [...liveTurns.values()].filter((lt) => lt.agent === agent.peer).map((lt) => lt.state));
          presence = o.presence;
          presenceText = o.status;
        } else {
          presence = presenceOf(socket);
          presenceText = presence;
        }
      }
      const busy = working(p.id);
      const held = agent ? pendingFor(messages.values(), p.id) : 0;
      return h('li', { class: 'person', dataset: { participant: p.id, presence: presence || 'unknown' } },
        h('span', { class: isAgent ? 'avatar avatar--agent' : 'avatar', 'aria-hidden': 'true' }, initials(p.name || p.handle),
          presence ? h('span', { class: 'presence', dataset: { presence } }) : null),
        h('span', { class: 'name' }, p.name || p.handle || p.id,
          presenceText ? h('span', { class: 'presence-text', dataset: { presence } }, presenceText) : null),
        h('span', { class: 'meta' }, [p.handle ? `@${p.handle}` : '', isAgent ? (p.handle ? ' · agent' : 'agent') : ''].join('')),
        h('span', { class: 'doing' },
          busy ? h('span', { class: 'working', dataset: { working: 'true' } }, 'working') : held ? `${held} message${held === 1 ? '' : 's'} in hand` : ''));
    }));
    renderWorking();
  }

  // renderAddAgent offers the agents that are not participants.
  function renderAddAgent() {
    const inRoom = new Set(participants.map((p) => p.id));
    const acct = room.account;
    const free = state.agents.filter((a) => !inRoom.has(a.agent_id) && (!acct || !a.account || a.account === acct));
    addForm.hidden = !free.length;
    const keep = addSelect.value;
    addSelect.replaceChildren(...free.map((a) => h('option', { value: a.peer }, `${a.name || a.handle} (@${a.handle})`)));
    if (free.some((a) => a.peer === keep)) addSelect.value = keep;
  }
  addForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const peer = addSelect.value;
    if (!peer) return;
    const a = state.agentsByPeer.get(peer);
    addBtn.disabled = true;
    addMsg.textContent = 'Adding…';
    addMsg.classList.remove('form-error');
    try {
      await post(`${roomPath(id)}/agents`, { agent: peer });
      addMsg.textContent = `${a ? `@${a.handle}` : peer} joined the room.`;
      announce(addMsg.textContent);
      await Promise.all([loadAgents().catch(() => {}), load()]);
    } catch (err) {
      addMsg.textContent = describe(err, `${a ? `@${a.handle}` : peer} was not added`);
      addMsg.classList.add('form-error');
    } finally {
      addBtn.disabled = false;
    }
  });

  // working reports whether a participant works in this room. Band keeps
  // an agent's indicator on for a few seconds after it answered; once the
  // agent posted a message after the indicator started, and holds no
  // other message of the room, its work is done and shows so at once.
  function working(pid) {
    if (!isWorking(id, pid)) return false;
    const since = workingSince(id, pid);
    let answered = false;
    for (const m of messages.values()) {
      if (m.sender_id === pid && m.message_type === 'text' && (arrivedAt.get(m.id) || 0) >= since) answered = true;
    }
    return !answered || pendingFor(messages.values(), pid) > 0;
  }
  function renderWorking() {
    const who = participants.filter((p) => working(p.id)).map((p) => `@${p.handle || p.name}`);
    const text = who.length ? `${who.join(', ')} ${who.length === 1 ? 'is' : 'are'} working…` : '';
    if (workingEl.textContent !== text) workingEl.textContent = text;
  }

  // The owned agents' sessions in this room and their running turns:
  // session id -> {agent, turn} while a turn runs.
  const liveTurns = new Map();
  function renderLive() {
    const links = [...liveTurns.entries()].map(([sid, lt]) => {
      const a = state.agentsByPeer.get(lt.agent);
      const name = a ? `@${a.handle}` : lt.agent;
      const cancel = h('button', { type: 'button', class: 'btn btn--quiet btn--small btn--danger', dataset: { cancelTurn: lt.turn }, 'aria-label': `Cancel ${name}'s turn` }, 'Cancel turn');
      cancel.addEventListener('click', async () => {
        cancel.disabled = true;
        try {
          await post(`/v1/turns/${encodeURIComponent(lt.turn)}/cancel`);
          announce(`Cancelling ${name}'s turn.`);
        } catch (err) {
          errorEl.textContent = describe(err, `${name}'s turn was not cancelled`);
          cancel.disabled = false;
        }
      });
      return h('span', { class: 'live-turn' }, h('a', { href: sessionHref(sid, lt.turn), dataset: { liveTurn: lt.turn } }, `Watch ${name}'s turn live`), ' ', cancel);
    });
    liveEl.replaceChildren(...links.flatMap((l, i) => (i ? [' · ', l] : [l])));
    renderPeople();
  }
  async function loadLive() {
    try {
      const ss = await loadSessions();
      if (destroyed) return;
      liveTurns.clear();
      for (const s of ss) {
        if (s.room === id && s.current_turn && ACTIVE.has(s.current_turn_state)) liveTurns.set(s.id, { agent: s.agent, turn: s.current_turn, state: s.current_turn_state });
      }
      renderLive();
      await loadTurnLinks(ss.filter((s) => s.room === id));
    } catch {
      // Without sessions the room still works; the links just do not show.
    }
  }

  // Replies and turns. An owned agent's turn names the message it
  // answers; a posted reply (an owned or an attached agent's) names the
  // message it answers in reply_to, and an owned agent's also its turn,
  // from what jam recorded as it posted the reply. turnOf maps a source
  // message to its latest turn; turnById maps a turn id to its turn.
  let roomTurns = []; // [{turn, session, agentId}]
  const turnOf = new Map();
  const turnById = new Map();
  // changeSetOf maps a turn id to its (newest) change set.
  const changeSetOf = new Map();
  async function loadTurnLinks(sessions) {
    const csLists = [];
    const lists = await Promise.all(sessions.map(async (s) => {
      const [res, css] = await Promise.all([
        get(`/v1/sessions/${encodeURIComponent(s.id)}/turns`).catch(() => null),
        get(`/v1/sessions/${encodeURIComponent(s.id)}/changesets`, { limit: 500 }).catch(() => null),
      ]);
      csLists.push(...((css && css.changesets) || []));
      const agentId = state.agentsByPeer.get(s.agent)?.agent_id || '';
      return ((res && res.turns) || []).map((t) => ({ turn: t, session: s.id, agentId }));
    }));
    if (destroyed) return;
    roomTurns = lists.flat();
    // The newest change set of a turn is the one its reply links to.
    changeSetOf.clear();
    for (const cs of csLists) if (cs.turn && !changeSetOf.has(cs.turn)) changeSetOf.set(cs.turn, cs);
    linkReplies();
  }
  const reloadTurnLinks = throttle(() => loadLive(), 400);
  const relink = throttle(() => { if (!destroyed) linkReplies(); }, 200);
  // replyTo returns the first reply to a message, oldest first.
  function replyTo(msgId) {
    let best = null;
    for (const m of messages.values()) if (m.reply_to === msgId && (!best || byTime(m, best) < 0)) best = m;
    return best;
  }
  const linkKey = (m) => JSON.stringify([turnOf.get(m)?.turn.id, turnOf.get(m)?.turn.state, replyTo(m)?.id, turnById.get(messages.get(m)?.turn)?.turn.seq, changeSetOf.get(messages.get(m)?.turn)?.id]);
  // linkKeys: message id -> the linkKey its node was drawn with.
  const linkKeys = new Map();
  function linkReplies() {
    turnOf.clear();
    turnById.clear();
    const sorted = roomTurns.filter((x) => x.turn.message).sort((a, b) => (a.turn.started_at || a.turn.created_at || '').localeCompare(b.turn.started_at || b.turn.created_at || ''));
    for (const x of sorted) turnOf.set(x.turn.message, x);
    for (const x of roomTurns) turnById.set(x.turn.id, x);
    for (const m of [...messages.keys()]) if (nodes.has(m) && linkKeys.get(m) !== linkKey(m)) rerender(m);
  }

  // links renders a message's links: the message it answers and its turn,
  // or the turn that answers it and the reply.
  function links(msg) {
    linkKeys.set(msg.id, linkKey(msg.id));
    const out = [];
    if (msg.reply_to) {
      const src = messages.get(msg.reply_to);
      const who = src ? (src.sender_id === selfId() ? 'you' : senderName(src)) : '';
      const snippet = src ? plainContent(src.content || src.text, names()).replace(/\s+/g, ' ').slice(0, 60) : '';
      out.push(h('a', { href: `#/rooms/${encodeURIComponent(id)}/messages/${encodeURIComponent(msg.reply_to)}`, class: 'reply-to', dataset: { replyTo: msg.reply_to }, title: snippet || null },
        h('span', { 'aria-hidden': 'true' }, '↪ '), who ? `In reply to ${who}` : 'In reply to a message', snippet ? `: “${snippet}${snippet.length >= 60 ? '…' : ''}”` : ''));
      const t = msg.turn && turnById.get(msg.turn);
      if (t) out.push(h('a', { href: sessionHref(t.session, t.turn.id), dataset: { turnLink: t.turn.id } }, `Turn ${t.turn.seq}`));
      // What the turn changed, when it changed anything.
      const cs = msg.turn && changeSetOf.get(msg.turn);
      if (cs && (cs.files || []).length) {
        out.push(h('a', { href: sessionHref(cs.session, cs.turn), class: 'cs-link', dataset: { changesetLink: cs.id } }, summary(cs)));
      }
      return h('p', { class: 'msg-links' }, out);
    }
    const t = turnOf.get(msg.id);
    if (t) out.push(h('a', { href: sessionHref(t.session, t.turn.id), dataset: { turnLink: t.turn.id } }, `Turn ${t.turn.seq}: ${t.turn.state}`));
    const reply = replyTo(msg.id);
    if (reply) out.push(h('a', { href: `#/rooms/${encodeURIComponent(id)}/messages/${encodeURIComponent(reply.id)}`, dataset: { replyLink: reply.id } }, 'See the reply'));
    return out.length ? h('p', { class: 'msg-links' }, out) : null;
  }
  function applyTurnEvent(ev) {
    const d = ev.data || {};
    if (!d.session || ev.kind === 'turn.update') return;
    if (ACTIVE.has(d.state)) liveTurns.set(d.session, { agent: ev.peer, turn: d.turn, state: d.state });
    else if (liveTurns.get(d.session)?.turn === d.turn) liveTurns.delete(d.session);
    renderLive();
  }

  // loadRoomUsage shows what the turns in this room used, once any ran.
  async function loadRoomUsage() {
    try {
      const row = (await loadUsage('room')).get(id);
      if (destroyed) return;
      usageEl.hidden = !row;
      usageEl.textContent = row ? sumLine(row) : '';
    } catch {
      // The room works without it.
    }
  }
  const reloadUsage = throttle(loadRoomUsage, 500);

  // load reads the room afresh and reconciles the timeline with it.
  async function load() {
    try {
      if (!state.rooms.has(id)) await loadRooms().catch(() => {});
      const r = state.rooms.get(id);
      if (r) {
        room.account = r.account;
        title.textContent = r.title || 'Untitled room';
        document.title = `${r.title || 'Room'} · jam`;
      }
      const [msgs, ps] = await Promise.all([
        get(`${roomPath(id)}/messages`, { account: room.account }),
        get(`${roomPath(id)}/participants`, { account: room.account }),
        state.agents.length ? null : loadAgents().catch(() => {}),
      ]);
      if (destroyed) return;
      main.querySelector('.error-box')?.remove();
      if (!room.account) room.account = msgs.account;
      participants = ps.participants || [];
      const fresh = new Set((msgs.messages || []).map((m) => m.id));
      for (const mid of [...messages.keys()]) if (!fresh.has(mid) && !messages.get(mid).pending) remove(mid);
      const first = !loaded;
      for (const m of msgs.messages || []) upsert(m, { live: !first && !messages.has(m.id) });
      roomSeq = Math.max(roomSeq || 0, msgs.seq || 0);
      loaded = true;
      const queued = pending;
      pending = [];
      for (const ev of queued) applyRoomEvent(ev);
      renderPeople();
      emptyState();
      if (first) toBottom();
      if (first && focus) showFocus();
      seen();
    } catch (e) {
      if (destroyed) return;
      showError(e);
    }
  }
  const reload = throttle(load, 250);

  // showFocus scrolls to the message the route names and marks it.
  function showFocus() {
    const node = nodes.get(focus);
    if (!node) return;
    focused = focus; // kept when the message is drawn again
    node.classList.add('msg--focus');
    node.setAttribute('tabindex', '-1');
    node.scrollIntoView({ block: 'center' });
  }

  function showError(e) {
    const box = main.querySelector('.error-box') || h('div', { class: 'error-box', role: 'alert' });
    box.textContent = describe(e, 'This room cannot be shown');
    if (!box.isConnected) wrap.prepend(box);
  }

  function seen() {
    if (document.visibilityState !== 'visible') return;
    let newest = null;
    for (const m of messages.values()) if (!m.pending && (!newest || byTime(newest, m) < 0)) newest = m;
    markRead(id, newest ? newest.inserted_at : null);
  }

  function applyRoomEvent(ev) {
    const data = ev.data || {};
    if (room.account && data.account && data.account !== room.account) return;
    if (!loaded) {
      pending.push(ev);
      return;
    }
    if (typeof data.seq === 'number') {
      // A jump in the room sequence means a change was not published (or
      // not to this page): read the room again.
      if (roomSeq != null && data.seq > roomSeq + 1) reload();
      roomSeq = Math.max(roomSeq || 0, data.seq);
    }
    if (data.kind === 'delete') {
      remove(ev.message_id);
      return;
    }
    if (data.message) {
      // upsert keeps the newer of two states of a message, and replaces
      // the pending copy of a message this page posted.
      upsert(data.message, { live: true });
      seen();
    }
  }

  // Approvals: a card per pending approval of this room, with the time
  // left and the three answers. A card goes when the approval is
  // answered, wherever that happens, or times out.
  const DECISIONS = [['allow', 'Allow', ''], ['always', 'Always allow', 'btn--quiet'], ['deny', 'Deny', 'btn--quiet btn--danger']];
  const cards = new Map(); // approval id -> card
  let tick = 0;
  function renderAsks() {
    const list = forRoom(id);
    const ids = new Set(list.map((a) => a.id));
    for (const [aid, card] of cards) {
      if (!ids.has(aid)) {
        card.remove();
        cards.delete(aid);
      }
    }
    for (const a of list) if (!cards.has(a.id)) cards.set(a.id, askCard(a));
    asks.replaceChildren(...list.map((a) => cards.get(a.id)));
    asks.hidden = !list.length;
    if (list.length && !tick) tick = setInterval(renderLeft, 1000);
    if (!list.length && tick) {
      clearInterval(tick);
      tick = 0;
    }
    renderLeft();
  }
  function renderLeft() {
    const now = Date.now();
    for (const [aid, card] of cards) {
      const a = pendingApprovals.get(aid);
      const el = card.querySelector('.ask-left');
      if (a && el) el.textContent = timeLeft(a, now);
    }
  }
  function askCard(a) {
    const agent = a.agent || 'An agent';
    const headId = `ask-${a.id}`;
    const buttons = DECISIONS.map(([decision, label, cls]) => h('button', {
      type: 'button', class: `btn ${cls}`.trim(), dataset: { approval: a.id, decision }, 'aria-label': `${label}: ${agent} to ${a.title}`,
    }, label));
    const card = h('article', { class: 'ask', role: 'group', 'aria-labelledby': headId, dataset: { approval: a.id } },
      h('p', { class: 'ask-what', id: headId }, h('strong', null, agent), ' asks to ', h('span', { class: 'ask-title' }, a.title)),
      h('p', { class: 'ask-meta' }, a.tool_kind ? h('span', { class: 'kind' }, a.tool_kind) : null, h('span', { class: 'ask-left' }, timeLeft(a)), h('span', null, ' · denied without an answer')),
      h('div', { class: 'ask-actions' }, buttons));
    for (const b of buttons) {
      b.addEventListener('click', async () => {
        for (const x of buttons) x.disabled = true;
        errorEl.textContent = '';
        const label = DECISIONS.find((d) => d[0] === b.dataset.decision)[1];
        try {
          await answer(a.id, b.dataset.decision);
          announce(`${label}: ${agent} to ${a.title}.`);
        } catch (err) {
          errorEl.textContent = describe(err, `${agent}'s request was not answered`);
          // Answered or ended meanwhile: the card has nothing left to do.
          if (err.code === 'conflict' || err.code === 'not_found') loadApprovals().catch(() => {});
          else for (const x of buttons) x.disabled = false;
        }
      });
    }
    return card;
  }

  // Events.
  const offs = [
    onApprovals(renderAsks),
    feed.on('event', (ev) => {
      if (ev.room !== id) return;
      if (ev.kind === 'room.message') applyRoomEvent(ev);
      // A reply's link is recorded as it is posted, which can be after
      // its room.message event: read the room again for it.
      else if (ev.kind === 'message.replied') reload();
      else if (ev.kind.startsWith('turn.')) {
        applyTurnEvent(ev);
        if (ev.kind !== 'turn.update') reloadTurnLinks();
        if (ev.kind !== 'turn.update' && !ACTIVE.has((ev.data || {}).state)) reloadUsage();
      }
    }),
    feed.on('resync', () => { load(); loadLive(); loadRoomUsage(); }),
    on('delivery', (d) => {
      if (messages.has(d.messageId)) {
        rerender(d.messageId);
        renderPeople();
      }
    }),
    on('presence', renderPeople),
    on('agents', () => { renderPeople(); renderLive(); for (const mid of messages.keys()) rerender(mid); }),
    on('activity', (r) => { if (r === id) renderPeople(); }),
    on('rooms', () => {
      const r = state.rooms.get(id);
      if (r && r.title) title.textContent = r.title;
    }),
  ];
  const onVisible = () => seen();
  document.addEventListener('visibilitychange', onVisible);
  setViewing(id);

  // Composer.
  const completion = new Completion(ta, suggest, () => participants
    .filter((p) => p.id !== selfId())
    .map((p) => ({ id: p.id, handle: p.handle || '', name: p.name, type: /agent/i.test(p.type) ? 'agent' : 'person' })));
  const grow = () => {
    ta.style.height = 'auto';
    ta.style.height = `${Math.min(ta.scrollHeight + 2, 192)}px`;
  };
  ta.addEventListener('input', () => {
    grow();
    if (errorEl.textContent) errorEl.textContent = '';
  });
  // An Enter that picked a mention or sent the message must not also
  // insert a line break: some input paths (automation, a few virtual
  // keyboards) deliver the character separately from the keydown.
  let enterUsed = false;
  ta.addEventListener('keydown', (e) => {
    if (e.isComposing) return;
    if (completion.keydown(e)) {
      e.preventDefault();
      enterUsed = e.key === 'Enter';
      return;
    }
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      enterUsed = true;
      form.requestSubmit();
    }
  });
  ta.addEventListener('beforeinput', (e) => {
    if (enterUsed && (e.inputType === 'insertLineBreak' || e.inputType === 'insertParagraph')) e.preventDefault();
  });
  ta.addEventListener('keyup', () => { enterUsed = false; });
  let sending = false;
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const text = ta.value.trim();
    if (sending) return;
    if (!text) {
      errorEl.textContent = 'Write a message first.';
      return;
    }
    sending = true;
    sendBtn.disabled = true;
    errorEl.textContent = '';
    try {
      const res = await post(`${roomPath(id)}/messages`, { text, mentions: completion.mentions(text), account: room.account || undefined });
      ta.value = '';
      grow();
      completion.reset();
      if (!messages.has(res.id)) {
        const acct = me(room.account);
        upsert({ id: res.id, seq: 0, message_type: 'text', content: res.body, text, sender_id: acct ? acct.user_id : '', sender_type: 'User', mentions: res.mentions, inserted_at: new Date().toISOString(), pending: true });
        toBottom();
      }
      if (res.warnings && res.warnings.length) errorEl.textContent = res.warnings.join(' ');
    } catch (err) {
      errorEl.textContent = describe(err, 'Not sent');
    } finally {
      sending = false;
      sendBtn.disabled = false;
      ta.focus();
    }
  });

  load();
  loadLive();
  loadRoomUsage();
  renderAsks();
  loadApprovals().catch(() => {});
  const delegations = mountDelegations(delegationsEl, id);
  return {
    destroy() {
      destroyed = true;
      delegations.destroy();
      clearInterval(tick);
      resized.disconnect();
      offs.forEach((f) => f());
      document.removeEventListener('visibilitychange', onVisible);
      setViewing(null);
    },
    focus() {
      ta.focus();
    },
  };
}
