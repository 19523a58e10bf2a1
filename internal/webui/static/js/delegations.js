// Delegations: an agent's session (the parent) assigns work to a child
// session of another agent in a role (review, test, ...) under a result
// contract, and the child submits a validated result. The page keeps the
// workspace's newest delegations (GET /v1/delegations, at most LIMIT),
// read when a room or a delegation's page opens and after every stream
// loss, and kept current by delegation.created and delegation.updated
// events, whose data is the delegation. A delegation's result is read
// with the delegation (GET /v1/delegations/{id}) when its page shows it.
//
// A room shows the delegations whose parent or child session is in the
// room, as a tree: a delegation whose child delegates further has those
// delegations under it (a delegation's parent session is another's
// child), wherever their rooms are. Every state and verdict is said in
// words as well as in colour.

import { h, append, timeEl, announce, full } from './dom.js';
import { get, post, enc } from './api.js';
import { feed } from './events.js';
import { state, on, emit, roomTitle, loadAgents, loadRooms } from './state.js';
import { describe } from './errors.js';
import { sessionHref } from './sessions.js';
import { summary } from './changes.js';

// LIMIT is how many delegations the page reads: the daemon's largest
// page. Older ones show once an event names them.
export const LIMIT = 500;

// known: delegation id -> wire.Delegation, the newest state seen.
export const known = new Map();

const changed = (id) => emit('delegations', id);
export const onDelegations = (fn) => on('delegations', fn);

// ACTIVE are the states a person can still cancel.
export const ACTIVE = new Set(['pending', 'running']);

// STATE_TEXT and VERDICT_TEXT are what the badges say.
const STATE_TEXT = { pending: 'pending', running: 'running', submitted: 'submitted', failed: 'failed', cancelled: 'cancelled' };
const VERDICT_TEXT = { approve: 'approved', request_changes: 'changes requested', passed: 'passed', failed: 'failed' };
// GOOD verdicts are drawn green, the others red.
const GOOD = new Set(['approve', 'passed']);

// newer says whether a is a later state of a delegation than b.
const newer = (a, b) => !b || (Date.parse(a.updated_at) || 0) >= (Date.parse(b.updated_at) || 0);

function put(d) {
  if (!d || !d.id) return false;
  if (!newer(d, known.get(d.id))) return false;
  known.set(d.id, d);
  return true;
}

export async function loadDelegations() {
  const res = await get('/v1/delegations', { limit: LIMIT });
  for (const d of (res && res.delegations) || []) put(d);
  changed(null);
}

// loadDelegation reads one delegation with its contract and result.
export async function loadDelegation(id) {
  const res = await get(`/v1/delegations/${enc(id)}`);
  if (res && put(res.delegation)) changed(id);
  return res;
}

// cancel asks the daemon to cancel a pending or running delegation; the
// refusal (it ended meanwhile) is thrown for the caller to show.
export async function cancel(id) {
  const d = await post(`/v1/delegations/${enc(id)}/cancel`);
  if (put(d)) changed(id);
  return d;
}

feed.on('event', (ev) => {
  if ((ev.kind === 'delegation.created' || ev.kind === 'delegation.updated') && put(ev.data)) changed(ev.data.id);
});
feed.on('resync', () => { loadDelegations().catch(() => {}); });

// who names an agent by its peer key: its handle when the page knows it.
export function who(peer) {
  const a = state.agentsByPeer.get(peer);
  return a && a.handle ? `@${a.handle}` : peer || 'an agent';
}

const newestFirst = (a, b) => (b.created_at || '').localeCompare(a.created_at || '') || (a.id < b.id ? 1 : -1);

// treeOf returns the delegations of a room as a tree, newest first at
// each level: [{d, children: [...]}]. A delegation is in it when its
// parent or child session is in the room, or when its parent session is
// the child of one in it.
export function treeOf(room, all = [...known.values()]) {
  const byParent = new Map();
  for (const d of all) {
    if (!byParent.has(d.parent)) byParent.set(d.parent, []);
    byParent.get(d.parent).push(d);
  }
  const inRoom = new Set();
  const queue = all.filter((d) => d.parent_room === room || d.child_room === room);
  while (queue.length) {
    const d = queue.shift();
    if (inRoom.has(d.id)) continue;
    inRoom.add(d.id);
    if (d.child) queue.push(...(byParent.get(d.child) || []));
  }
  const childOf = new Map(); // child session -> delegation in the tree
  for (const d of all) if (inRoom.has(d.id) && d.child) childOf.set(d.child, d);
  const seen = new Set(); // a cycle (never made by jam) is drawn once
  const node = (d) => {
    seen.add(d.id);
    const kids = d.child ? (byParent.get(d.child) || []).filter((c) => inRoom.has(c.id) && !seen.has(c.id)).sort(newestFirst) : [];
    return { d, children: kids.map(node) };
  };
  const roots = all.filter((d) => inRoom.has(d.id) && !childOf.has(d.parent)).sort(newestFirst);
  const out = roots.map(node);
  for (const d of all.filter((x) => inRoom.has(x.id) && !seen.has(x.id)).sort(newestFirst)) out.push(node(d));
  return out;
}

// label is a delegation in a few words: "review by @reviewer for @coder".
export const label = (d) => `${d.role || 'work'} by ${who(d.agent)} for ${who(d.parent_agent)}`;

// attemptsText says how many invalid results the child submitted.
export const attemptsText = (d) => (d.attempts ? `${d.attempts} of ${d.max_attempts} invalid` : '');

export function stateBadge(d) {
  return h('span', { class: 'dlg-state', dataset: { state: d.state }, title: `State: ${STATE_TEXT[d.state] || d.state}` },
    h('span', { class: 'visually-hidden' }, 'state '), STATE_TEXT[d.state] || d.state);
}

export function verdictBadge(d) {
  if (!d.verdict) return null;
  return h('span', { class: 'dlg-verdict', dataset: { verdict: d.verdict, good: String(GOOD.has(d.verdict)) }, title: `Verdict: ${VERDICT_TEXT[d.verdict] || d.verdict}` },
    h('span', { class: 'visually-hidden' }, 'verdict '), VERDICT_TEXT[d.verdict] || d.verdict);
}

// cancelButton cancels d; onError shows a refusal.
// onDone runs once it is cancelled.
function cancelButton(d, onError, { small = true, onDone = null } = {}) {
  const b = h('button', { type: 'button', class: `btn btn--quiet btn--danger${small ? ' btn--small' : ''}`, dataset: { cancelDelegation: d.id }, 'aria-label': `Cancel the ${label(d)}` }, 'Cancel');
  b.addEventListener('click', async () => {
    b.disabled = true;
    onError('');
    try {
      await cancel(d.id);
      announce(`Cancelled the ${label(d)}.`);
      if (onDone) onDone();
    } catch (err) {
      onError(describe(err, `The ${label(d)} was not cancelled`));
      if (err.code === 'conflict' || err.code === 'not_found') loadDelegation(d.id).catch(() => {});
      else b.disabled = false;
    }
  });
  return b;
}

export const delegationHref = (id) => `#/delegations/${enc(id)}`;

// mountPanel keeps a room's Delegations panel in el: nothing while the
// room has none, else the tree, with a toggle to fold it.
let folded = false; // kept across rooms and visits while the page lives
export function mountPanel(el, room) {
  const count = h('span', { class: 'dlg-count' });
  const toggle = h('button', { type: 'button', class: 'dlg-toggle', 'aria-expanded': String(!folded), 'aria-controls': `dlg-tree` },
    h('span', { class: 'dlg-caret', 'aria-hidden': 'true' }), 'Delegations ', count);
  const tree = h('ul', { id: 'dlg-tree', class: 'dlg-tree', 'aria-label': 'Delegations; a delegation’s own delegations are listed under it', hidden: folded });
  const errorEl = h('p', { class: 'form-error', role: 'alert' });
  el.replaceChildren(h('h2', { class: 'dlg-head' }, toggle), errorEl, tree);
  toggle.addEventListener('click', () => {
    folded = !folded;
    toggle.setAttribute('aria-expanded', String(!folded));
    tree.hidden = folded;
  });
  const showError = (t) => { errorEl.textContent = t; };
  let refocus = ''; // the delegation whose link takes the focus at the next draw

  const row = (n) => {
    const d = n.d;
    const attempts = attemptsText(d);
    return h('li', { class: 'dlg-node', dataset: { delegation: d.id, state: d.state } },
      h('div', { class: 'dlg-row' },
        h('a', { class: 'dlg-link', href: delegationHref(d.id), 'aria-label': `${label(d)}: ${STATE_TEXT[d.state] || d.state}${d.verdict ? `, ${VERDICT_TEXT[d.verdict] || d.verdict}` : ''}. Details` },
          h('span', { class: 'dlg-who' }, who(d.parent_agent), h('span', { 'aria-hidden': 'true' }, ' → '), who(d.agent))),
        h('span', { class: 'dlg-role' }, d.role),
        stateBadge(d),
        verdictBadge(d),
        attempts ? h('span', { class: 'dlg-attempts' }, attempts) : null,
        d.parent_room && d.parent_room !== room ? h('a', { class: 'dlg-room', href: `#/rooms/${enc(d.parent_room)}`, dataset: { parentRoom: d.parent_room } }, `from ${roomTitle(d.parent_room)}`) : null,
        d.child_room && d.child_room !== room ? h('a', { class: 'dlg-room', href: `#/rooms/${enc(d.child_room)}`, dataset: { childRoom: d.child_room } }, `in ${roomTitle(d.child_room)}`) : null,
        ACTIVE.has(d.state) ? cancelButton(d, showError, { onDone: () => { refocus = d.id; draw(); } }) : null),
      n.children.length ? h('ul', { class: 'dlg-children', 'aria-label': `Delegated by ${who(d.agent)}` }, n.children.map(row)) : null);
  };
  const draw = () => {
    const roots = treeOf(room);
    el.hidden = !roots.length;
    if (!roots.length) {
      tree.replaceChildren();
      return;
    }
    let n = 0, active = 0;
    const walk = (ns) => ns.forEach((x) => { n++; if (ACTIVE.has(x.d.state)) active++; walk(x.children); });
    walk(roots);
    count.textContent = `(${n}${active ? `, ${active} active` : ''})`;
    // Focus stays on the delegation it was on, on the same control; a
    // cancelled one's goes to its link.
    const at = tree.contains(document.activeElement) ? document.activeElement : null;
    const was = refocus || (at && at.closest('.dlg-node')?.dataset.delegation);
    const sel = refocus || !at || !at.matches('[data-cancel-delegation]') ? 'a.dlg-link' : '[data-cancel-delegation]';
    refocus = '';
    tree.replaceChildren(...roots.map(row));
    if (was) {
      const li = [...tree.querySelectorAll('.dlg-node')].find((x) => x.dataset.delegation === was);
      const target = li && li.querySelector(`:scope > .dlg-row ${sel}`);
      if (target) target.focus({ preventScroll: true });
    }
  };
  const offs = [onDelegations(draw), on('agents', draw), on('rooms', draw)];
  draw();
  loadDelegations().then(() => showError(''), (e) => showError(describe(e, 'The delegations cannot be read')));
  return { destroy: () => offs.forEach((f) => f()) };
}

// renderResult draws a submitted result by its contract: a review's
// verdict and findings, a test's outcome, commands and failures, any
// other as its JSON.
export function renderResult(d, r) {
  const res = (r && r.result) || {};
  const out = [];
  if (d.contract === 'review' && Array.isArray(res.findings)) {
    if (res.summary) out.push(h('p', { class: 'dlg-summary' }, res.summary));
    out.push(res.findings.length
      ? h('ol', { class: 'dlg-findings', 'aria-label': `${res.findings.length} finding${res.findings.length === 1 ? '' : 's'}` }, res.findings.map((f) => h('li', { class: 'dlg-finding', dataset: { severity: f.severity || '' } },
        h('code', { class: 'dlg-where' }, `${f.path}:${f.line}`), ' ',
        h('span', { class: 'dlg-sev', dataset: { severity: f.severity || '' } }, f.severity), ' ',
        h('span', { class: 'dlg-msg' }, f.message))))
      : h('p', { class: 'sub', dataset: { role: 'no-findings' } }, 'No findings.'));
  } else if (d.contract === 'test' && typeof res.passed === 'boolean') {
    out.push(h('p', { class: 'dlg-summary' }, res.passed ? 'The tests passed.' : 'The tests failed.'));
    if ((res.commands || []).length) {
      out.push(h('h3', null, 'Commands'), h('ul', { class: 'dlg-commands' }, res.commands.map((c) => h('li', null, h('code', null, c)))));
    }
    if ((res.failures || []).length) {
      out.push(h('h3', null, 'Failures'), h('ol', { class: 'dlg-failures' }, res.failures.map((f) => h('li', null, h('code', null, f.name), f.message ? [' ', h('span', { class: 'dlg-msg' }, f.message)] : null))));
    }
  } else {
    out.push(h('pre', { class: 'dlg-json', tabindex: '0', 'aria-label': 'The result' }, JSON.stringify(res, null, 2)));
  }
  out.push(h('p', { class: 'sub dlg-digest' }, 'Submitted ', r.submitted_at ? timeEl(r.submitted_at, full) : null,
    r.digest ? [' · SHA-256 ', h('code', { title: r.digest }, r.digest.slice(0, 12))] : null));
  return out;
}

// mountDelegation is one delegation's page: who delegated what to whom,
// its instructions and inputs, its state and result, a Cancel button
// while it can be cancelled, and the delegations its child made.
export function mountDelegation(main, { id }) {
  const title = h('h1', { id: 'page-title', tabindex: '-1' }, 'Delegation');
  const back = h('a', { href: '#/', class: 'btn btn--quiet' }, h('span', { 'aria-hidden': 'true' }, '‹ '), 'Room');
  const badges = h('p', { class: 'dlg-badges' });
  const actionMsg = h('p', { class: 'form-note', role: 'status', 'data-role': 'delegation-action' });
  const actions = h('div', { class: 'turn-actions' }, actionMsg);
  const err = h('div', { role: 'alert' });
  const facts = h('dl', { class: 'kv' });
  const instructions = h('div', { class: 'dlg-instructions', dataset: { role: 'instructions' } });
  const inputs = h('dl', { class: 'kv', dataset: { role: 'inputs' } });
  const resultHead = h('h2', { id: 'result-title' }, 'Result');
  const result = h('div', { class: 'dlg-result', dataset: { role: 'result' } });
  const furtherSec = h('section', { 'aria-labelledby': 'further-title', hidden: true },
    h('h2', { id: 'further-title' }, 'Delegated further'));
  const further = h('ul', { class: 'dlg-tree dlg-further' });
  furtherSec.append(further);
  main.replaceChildren(h('div', { class: 'page delegation' },
    h('header', null, back, title, badges),
    err,
    actions,
    h('section', { class: 'card', 'aria-label': 'Delegation' }, facts),
    h('section', { 'aria-labelledby': 'instr-title' }, h('h2', { id: 'instr-title' }, 'Instructions'), instructions),
    h('section', { 'aria-labelledby': 'inputs-title' }, h('h2', { id: 'inputs-title' }, 'Inputs'), inputs),
    h('section', { 'aria-labelledby': 'result-title' }, resultHead, result),
    furtherSec));

  let destroyed = false;
  let detail = null; // wire.DelegationDetail
  let changeSet = null; // the input change set, once read

  const showAction = (t) => {
    actionMsg.textContent = t;
    actionMsg.classList.toggle('form-error', !!t);
  };
  const sessionLink = (sid, roomId, agent) => sid
    ? h('span', null, h('a', { href: sessionHref(sid) }, who(agent)), roomId ? [' in ', h('a', { href: `#/rooms/${enc(roomId)}` }, roomTitle(roomId))] : null)
    : h('span', { class: 'sub' }, 'not started yet');

  function draw() {
    if (!detail) return;
    const d = known.get(id) || detail.delegation;
    title.textContent = `${d.role ? d.role[0].toUpperCase() + d.role.slice(1) : 'Work'} by ${who(d.agent)}`;
    document.title = `${title.textContent} · jam`;
    const home = d.parent_room || d.child_room;
    if (home) {
      back.setAttribute('href', `#/rooms/${enc(home)}`);
      back.replaceChildren(h('span', { 'aria-hidden': 'true' }, '‹ '), roomTitle(home));
    }
    const attempts = attemptsText(d);
    badges.replaceChildren();
    append(badges, [h('span', { class: 'dlg-role' }, d.role), stateBadge(d), verdictBadge(d), attempts ? h('span', { class: 'dlg-attempts' }, attempts) : null]);
    const cancelBtn = actions.querySelector('[data-cancel-delegation]');
    if (ACTIVE.has(d.state) && !cancelBtn) actions.prepend(cancelButton(d, showAction, { small: false, onDone: () => title.focus() }));
    if (!ACTIVE.has(d.state) && cancelBtn) cancelBtn.remove();

    facts.replaceChildren(...[
      ['Delegation', h('code', null, d.id)],
      ['From', sessionLink(d.parent, d.parent_room, d.parent_agent)],
      ['To', sessionLink(d.child, d.child_room, d.agent)],
      ['Contract', d.contract],
      ['State', h('span', null, STATE_TEXT[d.state] || d.state, d.reason ? ` (${d.reason.replace(/_/g, ' ')})` : '')],
      ['Invalid results', `${d.attempts} of at most ${d.max_attempts}`],
      ['Created', timeEl(d.created_at, full)],
      ['Updated', timeEl(d.updated_at, full)],
      d.error ? ['Error', h('span', { class: 'bad' }, d.error)] : null,
    ].filter(Boolean).map(([k, v]) => [h('dt', null, k), h('dd', null, v)]).flat());

    instructions.textContent = d.instructions || '';
    const inp = d.inputs || {};
    const rows = [];
    if (inp.change_set_id) {
      const cs = changeSet && changeSet.id === inp.change_set_id ? changeSet : null;
      rows.push(['Change set', cs
        ? h('a', { href: sessionHref(cs.session, cs.turn), dataset: { changesetLink: cs.id } }, summary(cs), ' ', h('code', { class: 'sub' }, cs.id))
        : h('code', { dataset: { changeset: inp.change_set_id } }, inp.change_set_id)]);
    }
    if (inp.commit) rows.push(['Commit', h('code', { title: inp.commit }, inp.commit.slice(0, 12))]);
    inputs.replaceChildren(...(rows.length ? rows.map(([k, v]) => [h('dt', null, k), h('dd', null, v)]).flat() : [h('dt', null, 'None'), h('dd', { class: 'sub' }, 'This delegation pins no change set or commit.')]));

    if (detail.result) result.replaceChildren(...renderResult(d, detail.result));
    else result.replaceChildren(h('p', { class: 'sub', dataset: { role: 'no-result' } }, d.state === 'submitted' ? 'The result is being read…'
      : ACTIVE.has(d.state) ? `No result yet: ${who(d.agent)} ${d.state === 'pending' ? 'has not started' : 'is working on it'}.` : `No result: the delegation ${STATE_TEXT[d.state] || d.state}.`));

    const kids = d.child ? [...known.values()].filter((x) => x.parent === d.child).sort(newestFirst) : [];
    furtherSec.hidden = !kids.length;
    further.replaceChildren(...kids.map((k) => h('li', { class: 'dlg-node', dataset: { delegation: k.id, state: k.state } },
      h('div', { class: 'dlg-row' }, h('a', { class: 'dlg-link', href: delegationHref(k.id) }, label(k)), stateBadge(k), verdictBadge(k)))));
  }

  // stale says whether the delegation moved since its detail was read:
  // its result (or its end) is then read again.
  const stale = () => {
    const d = known.get(id);
    return !!(d && detail && (d.state !== detail.delegation.state || d.updated_at !== detail.delegation.updated_at));
  };
  let loading = null;
  function load() {
    if (!loading) {
      loading = read().finally(() => {
        loading = null;
        if (!destroyed && stale()) load();
      });
    }
    return loading;
  }
  async function read() {
    try {
      const res = await loadDelegation(id);
      if (destroyed) return;
      err.replaceChildren();
      detail = res;
      const cs = res.delegation.inputs && res.delegation.inputs.change_set_id;
      if (cs && (!changeSet || changeSet.id !== cs)) {
        get(`/v1/changesets/${enc(cs)}`).then((x) => {
          changeSet = x;
          if (!destroyed) draw();
        }, () => {});
      }
      draw();
    } catch (e) {
      if (destroyed) return;
      err.replaceChildren(h('p', { class: 'error-box' }, describe(e, 'This delegation cannot be shown')));
    }
  }
  const offs = [
    onDelegations(() => {
      if (destroyed || !detail) return;
      if (stale()) load();
      else draw();
    }),
    on('agents', draw),
    on('rooms', draw),
    feed.on('resync', load),
  ];
  load();
  if (!state.agents.length) loadAgents().catch(() => {});
  if (!state.rooms.size) loadRooms().catch(() => {});
  loadDelegations().catch(() => {});
  return {
    destroy() {
      destroyed = true;
      offs.forEach((f) => f());
    },
  };
}
