// Owned agents' sessions: an agent's sessions (one per room) with their
// worktree and current turn, and a session's page with its turns and the
// output of the turn shown, streaming in from turn.update events.
//
// A turn's output is read once from GET /v1/turns/{turn}/output, which
// says how many turn.update batches it covers; events with a higher batch
// number are appended after it, and events that arrive while the read is
// under way wait for it, so nothing is shown twice or lost.

import { h, timeEl, announce, throttle } from './dom.js';
import { get, post, enc } from './api.js';
import { describe } from './errors.js';
import { renderMarkdown } from './markdown.js';
import { feed } from './events.js';
import { state, on, loadAgents, loadRooms, roomTitle } from './state.js';
import { mountWorktree } from './worktree.js';
import { turnLine } from './usage.js';
import { summary, showChangeSets } from './changes.js';

// TURN_STATUS maps turn states to the chip colours the delivery chips use.
const TURN_STATUS = {
  queued: 'queued', preparing: 'delivered', running: 'processing', cancelling: 'processing',
  succeeded: 'settled', failed: 'failed', cancelled: 'failed', interrupted: 'failed',
};

export const ACTIVE = new Set(['preparing', 'running', 'cancelling']);
// RETRYABLE are the states a turn may be retried from.
export const RETRYABLE = new Set(['failed', 'cancelled', 'interrupted']);

const cell = (label, ...children) => h('td', { 'data-label': label }, h('div', null, ...children));

export function turnChip(st) {
  return h('span', { class: 'chip', dataset: { status: TURN_STATUS[st] || 'queued', turnState: st } }, st);
}

export const sessionHref = (id, turn) => `#/sessions/${encodeURIComponent(id)}${turn ? `/turns/${encodeURIComponent(turn)}` : ''}`;

// loadSessions reads every session; views filter them.
export async function loadSessions() {
  const res = await get('/v1/sessions');
  return res.sessions || [];
}

function worktreeText(s) {
  if (!s.worktree) return h('span', { class: 'sub' }, 'none');
  return h('div', null,
    h('code', { class: 'path' }, s.worktree),
    s.branch ? h('div', { class: 'sub' }, 'branch ', h('code', null, s.branch)) : null,
    s.worktree_state && s.worktree_state !== 'active' ? h('div', { class: 'bad' }, `${s.worktree_state}: turns wait until it is restored (jam worktree restore)`) : null);
}

// mountAgentSessions is the page of one agent's sessions.
export function mountAgentSessions(main, { peer }) {
  const title = h('h1', { id: 'page-title', tabindex: '-1' }, 'Sessions');
  const sub = h('p', { class: 'sub' }, peer);
  const body = h('tbody');
  const err = h('div', { role: 'alert' });
  main.replaceChildren(h('div', { class: 'page' },
    h('header', null, h('a', { href: '#/agents', class: 'btn btn--quiet' }, h('span', { 'aria-hidden': 'true' }, '‹ '), 'Agents'), title, sub),
    err,
    h('section', { 'aria-labelledby': 'sessions-title' },
      h('h2', { id: 'sessions-title' }, 'One session per room'),
      h('div', { class: 'table-wrap' }, h('table', { class: 'stack', 'aria-labelledby': 'sessions-title' },
        h('thead', null, h('tr', null,
          h('th', { scope: 'col' }, 'Room'),
          h('th', { scope: 'col' }, 'State'),
          h('th', { scope: 'col' }, 'Current turn'),
          h('th', { scope: 'col' }, 'Worktree'),
          h('th', { scope: 'col' }, 'Provider thread'))),
        body)))));

  let sessions = [];
  function render() {
    const a = state.agentsByPeer.get(peer);
    title.textContent = a ? `Sessions of ${a.name || a.handle}` : 'Sessions';
    if (a) document.title = `${title.textContent} · jam`;
    const mine = sessions.filter((s) => s.agent === peer);
    if (!mine.length) {
      body.replaceChildren(h('tr', null, h('td', { colspan: '5', class: 'empty' }, 'No sessions. An owned agent gets one in each room it is in.')));
      return;
    }
    body.replaceChildren(...mine.map((s) => h('tr', { dataset: { session: s.id } },
      cell('Room', h('a', { href: sessionHref(s.id), class: 'strong' }, roomTitle(s.room)), h('div', { class: 'peer' }, s.id)),
      cell('State', s.lifecycle),
      cell('Current turn', s.current_turn
        ? h('a', { href: sessionHref(s.id, s.current_turn) }, turnChip(s.current_turn_state))
        : h('span', { class: 'sub' }, 'idle')),
      cell('Worktree', worktreeText(s)),
      cell('Provider thread', s.provider_thread ? h('code', null, s.provider_thread) : h('span', { class: 'sub' }, 'not started')))));
  }
  async function load() {
    try {
      const [ss] = await Promise.all([loadSessions(), state.agents.length ? null : loadAgents(), state.rooms.size ? null : loadRooms().catch(() => {})]);
      sessions = ss;
      err.replaceChildren();
      render();
    } catch (e) {
      err.replaceChildren(h('p', { class: 'error-box' }, describe(e, 'Sessions cannot be listed')));
    }
  }
  const reload = throttle(load, 300);
  const offs = [
    feed.on('event', (ev) => { if (ev.kind.startsWith('turn.') && ev.kind !== 'turn.update' && ev.peer === peer) reload(); }),
    feed.on('resync', load),
    on('agents', render),
    on('rooms', render),
  ];
  load();
  return { destroy() { offs.forEach((f) => f()); } };
}

// mountSession is a session's page: what it is, its turns, and the
// output of one turn (the one in the route, else the current or latest).
export function mountSession(main, { id, turn: pinned }) {
  const title = h('h1', { id: 'page-title', tabindex: '-1' }, 'Session');
  const back = h('a', { href: '#/agents', class: 'btn btn--quiet' }, h('span', { 'aria-hidden': 'true' }, '‹ '), 'Sessions');
  const facts = h('dl', { class: 'kv' });
  const err = h('div', { role: 'alert' });
  const outHead = h('h2', { id: 'output-title' }, 'Turn output');
  const outState = h('p', { class: 'sub', role: 'status' });
  // why: the shown turn's detail (why it ended as it did); execs: its
  // attempts (GET /v1/turns/{turn}).
  const why = h('p', { class: 'error-box', hidden: true, 'data-role': 'why' });
  const execs = h('div', { class: 'table-wrap', hidden: true });
  // usage: what the shown turn used and cost.
  const usage = h('p', { class: 'sub turn-usage', hidden: true, 'data-role': 'turn-usage' });
  // actions: Cancel while the shown turn is queued or runs, Retry once it
  // failed, was cancelled or was interrupted.
  const cancelBtn = h('button', { type: 'button', class: 'btn btn--quiet btn--danger', dataset: { action: 'cancel-turn' }, hidden: true }, 'Cancel turn');
  const retryBtn = h('button', { type: 'button', class: 'btn', dataset: { action: 'retry-turn' }, hidden: true }, 'Retry');
  const actionMsg = h('p', { class: 'form-note', role: 'status', 'data-role': 'turn-action' });
  const actions = h('div', { class: 'turn-actions' }, cancelBtn, retryBtn, actionMsg);
  const output = h('div', { class: 'output', dataset: { empty: 'Nothing streamed yet.' }, role: 'log', 'aria-labelledby': 'output-title', 'aria-live': 'off', tabindex: '0' });
  const turnsBody = h('tbody');
  // changes: the change set(s) of the shown turn (GET
  // /v1/sessions/{session}/changesets, newest first).
  const changesHead = h('h2', { id: 'changes-title' }, 'Changes');
  const changes = h('div', { class: 'changes', 'data-role': 'changes' });
  const worktree = mountWorktree(id, { onChange: () => reload() });
  main.replaceChildren(h('div', { class: 'page' },
    h('header', null, back, title),
    err,
    h('section', { class: 'card', 'aria-label': 'Session' }, facts),
    worktree.el,
    h('section', { 'aria-labelledby': 'output-title' }, outHead, outState, actions, why, output, usage, execs),
    h('section', { 'aria-labelledby': 'changes-title', class: 'changes-section' }, changesHead, changes),
    h('section', { 'aria-labelledby': 'turns-title' },
      h('h2', { id: 'turns-title' }, 'Turns'),
      h('div', { class: 'table-wrap' }, h('table', { class: 'stack', 'aria-labelledby': 'turns-title' },
        h('thead', null, h('tr', null,
          h('th', { scope: 'col', class: 'num' }, '#'),
          h('th', { scope: 'col' }, 'State'),
          h('th', { scope: 'col' }, 'Reason'),
          h('th', { scope: 'col' }, 'Started'),
          h('th', { scope: 'col' }, 'Ended'),
          h('th', { scope: 'col' }, 'Changes'),
          h('th', { scope: 'col' }, 'Message'))),
        turnsBody)))));

  let session = null;
  let turns = [];
  // changeSets: the session's change sets by turn, newest first.
  let changeSets = new Map();
  let changesDrawn = '';
  let destroyed = false;
  // shown: the turn whose output is on the page.
  let shown = null; // {turn, batches, loading, waiting: [events]}
  let lastNode = null; // the output's last text or thought node, to extend

  function renderFacts() {
    if (!session) return;
    const agent = state.agentsByPeer.get(session.agent);
    title.textContent = `${agent ? (agent.name || agent.handle) : session.agent} in ${roomTitle(session.room)}`;
    document.title = `${title.textContent} · jam`;
    back.setAttribute('href', `#/agents/${encodeURIComponent(session.agent)}`);
    const cur = turns.find((t) => t.id === session.current_turn);
    facts.replaceChildren(...[
      ['Session', h('code', null, session.id)],
      ['Room', h('a', { href: `#/rooms/${encodeURIComponent(session.room)}` }, roomTitle(session.room))],
      ['State', session.lifecycle],
      ['Current turn', cur ? h('span', null, turnChip(cur.state), ` #${cur.seq}`) : h('span', { class: 'sub' }, 'idle')],
      ['Provider thread', session.provider_thread ? h('code', null, session.provider_thread) : h('span', { class: 'sub' }, 'not started')],
    ].map(([k, v]) => [h('dt', null, k), h('dd', null, v)]).flat());
  }

  function renderTurns() {
    if (!turns.length) {
      turnsBody.replaceChildren(h('tr', null, h('td', { colspan: '7', class: 'empty' }, 'No turns yet. Mention the agent in the room to give it work.')));
      return;
    }
    turnsBody.replaceChildren(...turns.slice().reverse().map((t) => h('tr', { dataset: { turn: t.id, state: t.state }, 'aria-current': shown && shown.turn === t.id ? 'true' : null },
      h('td', { 'data-label': '#', class: 'num' }, h('a', { href: sessionHref(id, t.id), 'aria-label': `Show the output of turn ${t.seq}` }, String(t.seq))),
      cell('State', turnChip(t.state)),
      cell('Reason', t.reason || h('span', { class: 'sub' }, '—')),
      cell('Started', t.started_at ? timeEl(t.started_at) : h('span', { class: 'sub' }, '—')),
      cell('Ended', t.ended_at ? timeEl(t.ended_at) : h('span', { class: 'sub' }, ACTIVE.has(t.state) ? 'running…' : '—')),
      cell('Changes', changeCell(t)),
      cell('Message', t.message && session
        ? h('a', { href: `#/rooms/${encodeURIComponent(session.room)}/messages/${encodeURIComponent(t.message)}`, title: t.message }, 'source message')
        : h('span', { class: 'sub' }, '—')))));
  }

  function changeCell(t) {
    const list = changeSets.get(t.id) || [];
    if (!list.length) return h('span', { class: 'sub' }, '—');
    // One line each (a turn has one change set; a store holding more
    // shows them all, newest first).
    return list.map((cs) => h('div', {}, h('a', { href: sessionHref(id, t.id), dataset: { changesetLink: cs.id }, class: (cs.files || []).length ? null : 'sub' },
      summary(cs), cs.origin === 'salvage' ? ' (salvage)' : '')));
  }

  // renderChanges shows the shown turn's change sets, drawing again only
  // when they are another turn's or new ones came (they never change).
  function renderChanges() {
    const turnId = shown && shown.turn;
    const t = turnId && turns.find((x) => x.id === turnId);
    changesHead.textContent = t ? `Turn ${t.seq} changes` : 'Changes';
    const list = (turnId && changeSets.get(turnId)) || [];
    const key = JSON.stringify([turnId, list.map((cs) => cs.id)]);
    if (key === changesDrawn) return;
    changesDrawn = key;
    if (!turnId) {
      changes.replaceChildren();
      return;
    }
    if (!list.length && t && (ACTIVE.has(t.state) || t.state === 'queued')) {
      changes.replaceChildren(h('p', { class: 'sub', dataset: { role: 'no-changeset' } }, 'The change set is recorded when the turn ends.'));
      changesDrawn = '';
      return;
    }
    showChangeSets(changes, list, () => changesDrawn === key && !destroyed);
  }

  // cancelling: the turn this page asked to cancel, until it ended.
  let cancelling = null;
  function renderActions() {
    const t = shown && turns.find((x) => x.id === shown.turn);
    if (t && cancelling === t.id && !ACTIVE.has(t.state) && t.state !== 'queued') {
      cancelling = null;
      actionMsg.textContent = `Turn ${t.seq} ${t.state === 'cancelled' ? 'was cancelled' : `ended: ${t.state}`}.`;
    }
    cancelBtn.hidden = !t || !(t.state === 'queued' || t.state === 'preparing' || t.state === 'running');
    retryBtn.hidden = !t || !RETRYABLE.has(t.state);
    if (t) {
      cancelBtn.setAttribute('aria-label', `Cancel turn ${t.seq}`);
      retryBtn.setAttribute('aria-label', `Retry turn ${t.seq}`);
    }
  }
  async function act(kind) {
    const t = shown && turns.find((x) => x.id === shown.turn);
    if (!t) return;
    const btn = kind === 'cancel' ? cancelBtn : retryBtn;
    btn.disabled = true;
    actionMsg.classList.remove('form-error');
    actionMsg.textContent = kind === 'cancel' ? `Cancelling turn ${t.seq}…` : `Retrying turn ${t.seq}…`;
    try {
      if (kind === 'cancel') {
        await post(`/v1/turns/${enc(t.id)}/cancel`);
        actionMsg.textContent = `Turn ${t.seq} is being cancelled…`;
        cancelling = t.id;
      } else {
        const nt = await post(`/v1/turns/${enc(t.id)}/retry`);
        actionMsg.textContent = `Turn ${t.seq}’s message runs again as turn ${nt.seq}.`;
        if (!turns.some((x) => x.id === nt.id)) turns.push(nt);
        location.hash = sessionHref(id, nt.id);
      }
      announce(actionMsg.textContent);
    } catch (e) {
      actionMsg.textContent = describe(e, kind === 'cancel' ? `Turn ${t.seq} was not cancelled` : `Turn ${t.seq} was not retried`);
      actionMsg.classList.add('form-error');
    } finally {
      btn.disabled = false;
    }
    renderActions();
    reload();
  }
  cancelBtn.addEventListener('click', () => act('cancel'));
  retryBtn.addEventListener('click', () => act('retry'));

  function renderOutState() {
    renderActions();
    if (!shown) {
      outHead.textContent = 'Turn output';
      outState.textContent = 'No turn yet.';
      return;
    }
    const t = turns.find((x) => x.id === shown.turn);
    outHead.textContent = t ? `Turn ${t.seq} output` : 'Turn output';
    // The detail shows once, in the Why box.
    let text = t ? `${t.state}${t.reason ? ` (${t.reason})` : ''}` : '';
    if (shown.loading) text = 'Loading…';
    else if (shown.truncated) text += ' · later output was not kept';
    outState.textContent = text;
    output.dataset.state = t ? t.state : '';
    const ended = t && !ACTIVE.has(t.state) && t.state !== 'queued';
    output.dataset.empty = shown.loading ? 'Loading…'
      : ended ? (shown.kept ? 'This turn streamed nothing.' : 'No output is kept for this turn: it streamed nothing, or ran before the daemon kept output.')
        : t && t.state === 'queued' ? 'The turn waits to start.' : 'Nothing streamed yet.';
  }

  // draw renders an answer node's Markdown; drawSoon batches the redraws
  // of a streaming answer.
  const draw = (node) => node.replaceChildren(...renderMarkdown(node.raw));
  const dirty = new Set();
  let drawTimer = 0;
  function drawSoon(node) {
    dirty.add(node);
    if (drawTimer) return;
    drawTimer = setTimeout(() => {
      drawTimer = 0;
      const stick = nearBottom();
      for (const n of dirty) draw(n);
      dirty.clear();
      if (stick) output.scrollTop = output.scrollHeight;
    }, 60);
  }

  const nearBottom = () => output.scrollHeight - output.scrollTop - output.clientHeight < 80;

  function appendUpdates(updates) {
    const stick = nearBottom();
    for (const u of updates) {
      if (u.kind === 'text' && lastNode && lastNode.dataset.kind === 'text') {
        lastNode.raw += u.text || '';
        drawSoon(lastNode);
        continue;
      }
      if (u.kind === 'thought' && lastNode && lastNode.dataset.kind === u.kind) {
        lastNode.append(u.text || '');
        continue;
      }
      let node;
      switch (u.kind) {
        case 'text':
          // The answer is Markdown, drawn again as it streams in.
          node = h('div', { class: 'out-text md', dataset: { kind: 'text' } });
          node.raw = u.text || '';
          draw(node);
          lastNode = node;
          break;
        case 'thought':
          node = h('div', { class: `out-${u.kind}`, dataset: { kind: u.kind } }, u.text || '');
          lastNode = node;
          break;
        case 'tool_call':
        case 'tool_call_update':
        case 'tool_call_end': {
          lastNode = null;
          const existing = u.tool_call_id && output.querySelector(`[data-tool=${JSON.stringify(u.tool_call_id)}]`);
          if (existing) {
            if (u.status) existing.querySelector('.tool-status').textContent = u.status;
            if (u.title) existing.querySelector('.tool-title').textContent = u.title;
            existing.dataset.status = u.status || existing.dataset.status;
            continue;
          }
          node = h('div', { class: 'out-tool', dataset: { kind: 'tool', tool: u.tool_call_id || '', status: u.status || '' } },
            h('span', { class: 'tool-title' }, u.title || u.tool_kind || 'tool call'), ' ',
            h('span', { class: 'tool-status' }, u.status || ''));
          break;
        }
        case 'approval': {
          // The person's answer to the agent's request: the title ends
          // with "(DECISION by WHO)", shown as words of its own.
          lastNode = null;
          const m = /^(.*) \((\S+) by (.+)\)$/.exec(u.title || '');
          const what = m ? m[1] : u.title || u.tool_kind || 'a tool call';
          const decision = u.status || (m && m[2]) || '';
          node = h('div', { class: 'out-approval', dataset: { kind: 'approval', decision, tool: u.tool_call_id || '' } },
            h('strong', null, 'Approval: '), h('span', { class: 'approval-title' }, what),
            decision ? [' — ', h('span', { class: 'approval-decision' }, decision), m ? ` (by ${m[3]})` : ''] : null);
          break;
        }
        case 'plan':
          lastNode = null;
          output.querySelector('.out-plan')?.remove();
          node = h('ol', { class: 'out-plan', dataset: { kind: 'plan' }, 'aria-label': 'Plan' },
            (u.plan || []).map((p) => h('li', { dataset: { status: p.status || '' } }, p.content, p.status ? h('span', { class: 'sub' }, ` · ${p.status}`) : null)));
          break;
        default:
          continue;
      }
      output.append(node);
    }
    if (stick) output.scrollTop = output.scrollHeight;
  }

  // renderTurnFacts shows why the shown turn ended (its detail) and its
  // executions: the lease, process and outcome of each attempt.
  function renderTurnFacts(t) {
    why.hidden = !t.detail;
    why.replaceChildren(...(t.detail ? [h('strong', null, 'Why: '), t.detail] : []));
    usage.hidden = !t.usage;
    usage.replaceChildren(...(t.usage ? [h('strong', null, 'Usage: '), turnLine(t.usage)] : []));
    const es = t.executions || [];
    execs.hidden = !es.length;
    const dash = () => h('span', { class: 'sub' }, '—');
    execs.replaceChildren(...(es.length ? [h('table', { class: 'stack', 'aria-label': 'Executions', 'data-role': 'executions' },
      h('thead', null, h('tr', null, ['Execution', 'Lease', 'Generation', 'PID', 'Started', 'Ended', 'Outcome', 'Reason'].map((k) => h('th', { scope: 'col' }, k)))),
      h('tbody', null, es.map((e) => h('tr', { dataset: { execution: e.id, state: e.state } },
        cell('Execution', h('code', { title: e.id }, e.id)),
        cell('Lease', h('code', { title: e.lease }, e.lease)),
        cell('Generation', String(e.lease_generation)),
        cell('PID', String(e.pid)),
        cell('Started', e.started_at ? timeEl(e.started_at) : dash()),
        cell('Ended', e.ended_at ? timeEl(e.ended_at) : dash()),
        cell('Outcome', e.outcome || e.state),
        cell('Reason', e.reason || dash())))))] : []));
  }

  async function loadTurnFacts(turnId) {
    try {
      const t = await get(`/v1/turns/${enc(turnId)}`);
      if (destroyed || !shown || shown.turn !== turnId) return;
      renderTurnFacts(t);
    } catch (e) {
      // The output still shows; the facts come with the next transition.
    }
  }

  async function showTurn(turnId) {
    if (shown && shown.turn === turnId) return;
    why.hidden = execs.hidden = usage.hidden = true;
    loadTurnFacts(turnId);
    shown = { turn: turnId, batches: 0, loading: true, waiting: [], kept: false, truncated: false };
    const mine = shown;
    output.replaceChildren();
    lastNode = null;
    renderOutState();
    renderTurns();
    renderChanges();
    try {
      const out = await get(`/v1/turns/${enc(turnId)}/output`);
      if (destroyed || shown !== mine) return;
      mine.loading = false;
      mine.batches = out.batches || 0;
      mine.kept = out.kept;
      mine.truncated = out.truncated;
      appendUpdates(out.updates || []);
      for (const ev of mine.waiting) applyUpdate(ev);
      mine.waiting = [];
    } catch (e) {
      if (shown !== mine) return;
      mine.loading = false;
      err.replaceChildren(h('p', { class: 'error-box' }, describe(e, 'The turn’s output cannot be read')));
    }
    renderOutState();
  }

  function applyUpdate(d) {
    if (!shown || d.turn !== shown.turn) return;
    if (shown.loading) {
      shown.waiting.push(d);
      return;
    }
    if (d.batch <= shown.batches) return; // covered by the read
    shown.batches = d.batch;
    shown.kept = true;
    appendUpdates(d.updates || []);
    renderOutState();
  }

  // pick chooses the turn to show: the route's, else the current one,
  // else the latest.
  function pick() {
    if (pinned) return pinned;
    if (session && session.current_turn) return session.current_turn;
    const started = turns.filter((t) => t.state !== 'queued');
    return started.length ? started[started.length - 1].id : null;
  }

  async function load() {
    try {
      const [ss, ts, css] = await Promise.all([
        loadSessions(),
        get(`/v1/sessions/${enc(id)}/turns`),
        // The page works without them (an older daemon, a store error).
        get(`/v1/sessions/${enc(id)}/changesets`, { limit: 500 }).catch(() => null),
        worktree.load(),
        state.agents.length ? null : loadAgents().catch(() => {}),
        state.rooms.size ? null : loadRooms().catch(() => {}),
      ]);
      if (destroyed) return;
      session = ss.find((s) => s.id === id) || null;
      if (!session) {
        err.replaceChildren(h('p', { class: 'error-box' }, 'There is no such session. ', h('a', { href: '#/agents' }, 'See the agents.')));
        return;
      }
      turns = ts.turns || [];
      changeSets = new Map();
      for (const cs of (css && css.changesets) || []) {
        if (!cs.turn) continue;
        if (!changeSets.has(cs.turn)) changeSets.set(cs.turn, []);
        changeSets.get(cs.turn).push(cs);
      }
      err.replaceChildren();
      renderFacts();
      renderTurns();
      const want = pick();
      if (want) await showTurn(want);
      else renderOutState();
      renderChanges();
    } catch (e) {
      if (destroyed) return;
      err.replaceChildren(h('p', { class: 'error-box' }, describe(e, 'This session cannot be shown')));
    }
  }
  const reload = throttle(load, 250);

  const offs = [
    feed.on('event', (ev) => {
      if (!ev.kind.startsWith('turn.')) return;
      const d = ev.data || {};
      if (d.session !== id) return;
      if (ev.kind === 'turn.update') {
        // A new turn's output: follow it (unless a turn is pinned). The
        // read starts at once, so this event waits for it.
        if (!pinned && (!shown || d.turn !== shown.turn)) showTurn(d.turn);
        applyUpdate(d);
        return;
      }
      // A transition: update the turn in place, follow a newly running
      // turn, and read the session again for its facts.
      const t = turns.find((x) => x.id === d.turn);
      if (t) {
        t.state = d.state;
        t.reason = d.reason || '';
        t.detail = d.detail || '';
        if (d.state === 'running' && !t.started_at) t.started_at = ev.at;
        if (!ACTIVE.has(d.state) && d.state !== 'queued') t.ended_at = ev.at;
      }
      if (session) {
        if (ACTIVE.has(d.state) || (d.state === 'queued' && !session.current_turn)) {
          session.current_turn = d.turn;
          session.current_turn_state = d.state;
        } else if (session.current_turn === d.turn) {
          session.current_turn = '';
          session.current_turn_state = '';
        }
      }
      if (!t && d.state === 'queued') turns.push({ id: d.turn, seq: d.turn_seq, state: d.state, reason: '' });
      if (shown && d.turn === shown.turn) loadTurnFacts(d.turn);
      if (shown && d.turn === shown.turn && !ACTIVE.has(d.state) && d.state !== 'queued') announce(`Turn ${d.turn_seq} ${d.state}`);
      if (!pinned && d.state === 'running') showTurn(d.turn);
      renderFacts();
      renderTurns();
      renderOutState();
      reload();
    }),
    feed.on('resync', () => { shown = null; load(); }),
    on('agents', renderFacts),
    on('rooms', renderFacts),
  ];
  load();
  return { destroy() { destroyed = true; offs.forEach((f) => f()); } };
}
