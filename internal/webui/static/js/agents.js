// The agents page: every peer with its socket state, bindings and queue
// depth, and the unrouted bucket (messages from rooms where the agent has
// no binding). Pipeline events refresh it.

import { h, timeEl, throttle } from './dom.js';
import { get } from './api.js';
import { feed } from './events.js';
import { state, on, loadAgents, loadRooms, roomTitle, presenceOf } from './state.js';
import { renderContent } from './mention.js';
import { loadSessions, ACTIVE } from './sessions.js';
import { loadUsage, sumLine } from './usage.js';

// cell holds its content in one element: on a phone a row becomes a
// grid of label and content.
const cell = (label, ...children) => h('td', { 'data-label': label }, h('div', null, ...children));
const num = (label, n) => h('td', { 'data-label': label, class: n ? 'num' : 'num count-zero' }, String(n));

function presenceChip(socketState) {
  const p = presenceOf(socketState);
  return h('span', { class: 'chip', dataset: { status: p } }, socketState ? `${p} (${socketState})` : p);
}

export function mountAgents(main) {
  const tableBody = h('tbody');
  const agentsBox = h('div', { class: 'table-wrap' },
    h('table', { class: 'stack', 'aria-labelledby': 'agents-title' },
      h('thead', null, h('tr', null,
        h('th', { scope: 'col' }, 'Agent'),
        h('th', { scope: 'col' }, 'Socket'),
        h('th', { scope: 'col', class: 'num' }, 'Queued'),
        h('th', { scope: 'col', class: 'num' }, 'Unrouted'),
        h('th', { scope: 'col' }, 'Usage'),
        h('th', { scope: 'col' }, 'Bindings'))),
      tableBody));
  const unroutedList = h('ul', { class: 'unrouted', 'aria-labelledby': 'unrouted-title' });
  const unroutedSub = h('p', { class: 'sub' });
  const err = h('div', { role: 'alert' });
  main.replaceChildren(h('div', { class: 'page' },
    h('header', null, h('h1', { id: 'page-title', tabindex: '-1' }, 'Agents'),
      h('p', { class: 'sub' }, 'Agents jam hosts, how their sockets are, and what waits for them.')),
    err,
    h('section', { 'aria-labelledby': 'agents-title' }, h('h2', { id: 'agents-title' }, 'Peers and bindings'), agentsBox),
    h('section', { 'aria-labelledby': 'unrouted-title' },
      h('h2', { id: 'unrouted-title' }, 'Unrouted'),
      unroutedSub,
      unroutedList)));

  let unrouted = [];
  // sessionCount: peer -> {n, working}, for owned agents.
  let sessionCount = new Map();
  // usage: peer -> its usage row (GET /v1/usage?by=agent).
  let usage = new Map();

  function render() {
    if (!state.agents.length) {
      tableBody.replaceChildren(h('tr', null, h('td', { colspan: '6', class: 'empty' }, 'No agents yet. Add one with jam agent add NAME.')));
    } else {
      tableBody.replaceChildren(...state.agents.map((a) => h('tr', { dataset: { peer: a.peer } },
        cell('Agent', h('div', { class: 'who' }, h('strong', null, a.name || a.handle)), h('div', { class: 'sub' }, `@${a.handle}`), h('div', { class: 'peer' }, a.peer),
          sessionCount.has(a.peer) ? h('div', null, h('a', { href: `#/agents/${encodeURIComponent(a.peer)}`, dataset: { sessions: a.peer } },
            `${sessionCount.get(a.peer).n} session${sessionCount.get(a.peer).n === 1 ? '' : 's'}`,
            sessionCount.get(a.peer).working ? ` · ${sessionCount.get(a.peer).working} working` : '')) : null),
        cell('Socket', a.health === 'degraded'
          ? h('span', null, h('span', { class: 'chip', dataset: { status: 'degraded' } }, 'degraded'),
            h('div', { class: 'sub reason' }, a.health_reason || ''))
          : presenceChip(state.presence.get(a.peer) || a.state)),
        num('Queued', a.queued || 0),
        num('Unrouted', a.unrouted || 0),
        cell('Usage', h('span', { class: usage.has(a.peer) ? 'usage' : 'usage sub', dataset: { usage: a.peer } }, usage.has(a.peer) ? sumLine(usage.get(a.peer)) : 'no turns yet')),
        cell('Bindings', (a.bindings || []).length
          ? h('ul', { class: 'bindings' }, a.bindings.map((b) => h('li', null,
            h('a', { href: `#/rooms/${encodeURIComponent(b.room)}` }, roomTitle(b.room)),
            b.alias ? h('span', { class: 'sub' }, ` as ${b.alias}`) : null)))
          : h('span', { class: 'sub' }, 'none: messages wait unrouted')))));
    }
    const names = new Map(state.agents.map((a) => [a.agent_id.toLowerCase(), a.handle]));
    unroutedSub.textContent = unrouted.length
      ? `${unrouted.length} message${unrouted.length === 1 ? '' : 's'} from rooms where the agent has no binding. Bind the agent to the room (jam bind ROOM --agent A) to deliver them.`
      : 'Nothing waits unrouted.';
    unroutedList.replaceChildren(...unrouted.map((m) => {
      const agent = state.agentsByPeer.get(m.peer);
      return h('li', { dataset: { id: m.id } },
        h('div', { class: 'msg-head' },
          h('span', { class: 'who' }, m.sender_name || 'Unknown'),
          h('span', { class: 'sub' }, `for @${agent ? agent.handle : m.peer} in `),
          h('a', { href: `#/rooms/${encodeURIComponent(m.room)}` }, roomTitle(m.room)),
          timeEl(m.received_at)),
        h('div', { class: 'msg-body' }, renderContent(m.content, names)));
    }));
  }

  async function load() {
    try {
      const [, inbox, sessions, byAgent] = await Promise.all([
        loadAgents(),
        get('/v1/inbox', { unrouted: 'true' }),
        loadSessions().catch(() => []),
        loadUsage('agent').catch(() => new Map()),
        state.rooms.size ? null : loadRooms().catch(() => {}),
      ]);
      unrouted = (inbox && inbox.messages) || [];
      usage = byAgent;
      sessionCount = new Map();
      for (const s of sessions) {
        const c = sessionCount.get(s.agent) || { n: 0, working: 0 };
        c.n++;
        if (ACTIVE.has(s.current_turn_state)) c.working++;
        sessionCount.set(s.agent, c);
      }
      err.replaceChildren();
      render();
    } catch (e) {
      err.replaceChildren(h('p', { class: 'error-box' }, `Agents cannot be listed: ${e.message}`));
    }
  }
  const reload = throttle(load, 500);
  const offs = [
    on('agents', render),
    on('presence', render),
    on('rooms', render),
    feed.on('event', (ev) => {
      if (ev.kind.startsWith('message.') || ev.kind.startsWith('room.retired') || ev.kind.startsWith('room.restored')) reload();
      else if (ev.kind.startsWith('turn.') && ev.kind !== 'turn.update') reload();
    }),
    feed.on('resync', load),
  ];
  render();
  load();
  return { destroy() { offs.forEach((f) => f()); } };
}
