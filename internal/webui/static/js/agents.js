// The agents page: every peer with its socket state, bindings and queue
// depth, and the unrouted bucket (messages from rooms where the agent has
// no binding). Pipeline events refresh it.

import { h, timeEl, throttle, announce } from './dom.js';
import { get, post, enc } from './api.js';
import { describe } from './errors.js';
import { feed } from './events.js';
import { state, on, loadAgents, loadRooms, roomTitle, presenceOf, ownedStatus } from './state.js';
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

// ownedChip shows what an owned agent does (running, starting, idle,
// stopped) rather than its socket's state, which jam keeps up anyway.
function ownedChip(socketState, turnStates) {
  const o = ownedStatus(socketState, turnStates);
  return h('span', { class: 'chip', dataset: { status: o.presence, owned: o.status } }, o.status);
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
  const add = addAgentForm(() => load());
  main.replaceChildren(h('div', { class: 'page' },
    h('header', { class: 'page-head' }, h('div', null, h('h1', { id: 'page-title', tabindex: '-1' }, 'Agents'),
      h('p', { class: 'sub' }, 'Agents jam hosts, how their sockets are, and what waits for them.')), add.toggle),
    add.form,
    err,
    h('section', { 'aria-labelledby': 'agents-title' }, h('h2', { id: 'agents-title' }, 'Peers and bindings'), agentsBox),
    h('section', { 'aria-labelledby': 'unrouted-title' },
      h('h2', { id: 'unrouted-title' }, 'Unrouted'),
      unroutedSub,
      unroutedList)));

  let unrouted = [];
  const openSettings = new Set(); // peers whose settings form is open
  // settingsForms keeps each open form across renders (what the person
  // typed, and the answer to the last save).
  const settingsForms = new Map();
  const settingsFor = (a) => {
    if (!settingsForms.has(a.peer)) settingsForms.set(a.peer, settingsForm(a, () => load()));
    return settingsForms.get(a.peer);
  };
  // sessionCount: peer -> {n, working}, for owned agents.
  let sessionCount = new Map();
  // usage: peer -> its usage row (GET /v1/usage?by=agent).
  let usage = new Map();

  function render() {
    if (!state.agents.length) {
      tableBody.replaceChildren(h('tr', null, h('td', { colspan: '6', class: 'empty' }, 'No agents yet. Add one with Add agent.')));
    } else {
      tableBody.replaceChildren(...state.agents.flatMap((a) => [h('tr', { dataset: { peer: a.peer } },
        cell('Agent', h('div', { class: 'who' }, h('strong', null, a.name || a.handle)), h('div', { class: 'sub' }, `@${a.handle}`), h('div', { class: 'peer' }, a.peer),
          a.runtime ? h('div', { class: 'sub runtime' }, runtimeLine(a.runtime)) : null,
          a.runtime ? h('button', { type: 'button', class: 'btn btn--quiet btn--small', 'aria-expanded': String(openSettings.has(a.peer)), 'aria-controls': `settings-${a.peer}`, dataset: { settings: a.peer }, onclick: () => { if (openSettings.has(a.peer)) openSettings.delete(a.peer); else openSettings.add(a.peer); render(); document.querySelector(`[data-settings=${JSON.stringify(a.peer)}]`)?.focus(); } }, 'Settings') : null,
          sessionCount.has(a.peer) ? h('div', null, h('a', { href: `#/agents/${encodeURIComponent(a.peer)}`, dataset: { sessions: a.peer } },
            `${sessionCount.get(a.peer).n} session${sessionCount.get(a.peer).n === 1 ? '' : 's'}`,
            sessionCount.get(a.peer).working ? ` · ${sessionCount.get(a.peer).working} working` : '')) : null),
        cell('Socket', a.health === 'degraded'
          ? h('span', null, h('span', { class: 'chip', dataset: { status: 'degraded' } }, 'degraded'),
            h('div', { class: 'sub reason' }, a.health_reason || ''))
          : a.runtime ? ownedChip(state.presence.get(a.peer) || a.state, sessionCount.get(a.peer)?.turns || [])
            : presenceChip(state.presence.get(a.peer) || a.state)),
        num('Queued', a.queued || 0),
        num('Unrouted', a.unrouted || 0),
        cell('Usage', h('span', { class: usage.has(a.peer) ? 'usage' : 'usage sub', dataset: { usage: a.peer } }, usage.has(a.peer) ? sumLine(usage.get(a.peer)) : 'no turns yet')),
        cell('Bindings', (a.bindings || []).length
          ? h('ul', { class: 'bindings' }, a.bindings.map((b) => h('li', null,
            h('a', { href: `#/rooms/${encodeURIComponent(b.room)}` }, roomTitle(b.room)),
            b.alias ? h('span', { class: 'sub' }, ` as ${b.alias}`) : null)))
          : h('span', { class: 'sub' }, 'none: messages wait unrouted'))),
      a.runtime && openSettings.has(a.peer) ? h('tr', { class: 'settings-row', id: `settings-${a.peer}` }, h('td', { colspan: '6' }, settingsFor(a))) : null,
      ].filter(Boolean)));
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
        const c = sessionCount.get(s.agent) || { n: 0, working: 0, turns: [] };
        c.n++;
        if (ACTIVE.has(s.current_turn_state)) c.working++;
        if (s.current_turn_state) c.turns.push(s.current_turn_state);
        sessionCount.set(s.agent, c);
      }
      err.replaceChildren();
      render();
    } catch (e) {
      err.replaceChildren(h('p', { class: 'error-box' }, describe(e, 'Agents cannot be listed')));
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
  return { destroy() { offs.forEach((f) => f()); add.destroy(); } };
}

// splitCommand splits a command line into its words as a shell would for
// plain words and quotes ('…', "…" with \ escapes, and \ outside
// quotes); it runs nothing and expands nothing.
export function splitCommand(line) {
  const out = [];
  let cur = '', inWord = false, q = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (q === "'") {
      if (c === "'") q = null;
      else cur += c;
    } else if (q === '"') {
      if (c === '"') q = null;
      else if (c === '\\' && i + 1 < line.length && '"\\$`'.includes(line[i + 1])) cur += line[++i];
      else cur += c;
    } else if (c === "'" || c === '"') {
      q = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < line.length) {
      cur += line[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) out.push(cur);
      cur = '';
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (q) return null;
  if (inWord) out.push(cur);
  return out;
}

const HARNESSES = [
  ['demo', 'jam’s demo agent'],
  ['claude', 'Claude Code'],
  ['codex', 'Codex'],
  ['copilot', 'GitHub Copilot CLI'],
  ['opencode', 'OpenCode'],
  ['acp', 'Any ACP agent (give its command)'],
];

function runtimeLine(rt) {
  const d = rt.desired || {};
  const parts = [d.harness || 'acp'];
  if (d.model) parts.push(`model ${d.model}`);
  if (d.permission) parts.push(`permission ${d.permission}`);
  if (d.repo) parts.push(`repo ${d.repo}`);
  let text = parts.join(' · ');
  if (rt.pending_change) text += ' · new settings apply when its process next starts';
  return text;
}

const field = (id, label, input, hint) => h('div', { class: 'field' }, h('label', { for: id }, label), input, hint ? h('p', { class: 'hint', id: `${id}-hint` }, hint) : null);

// addAgentForm is the agents page's form that adds an agent (POST
// /v1/agents): an attached one (a program of the person's that waits and
// replies through jam), or an owned one that jam runs in every room it
// joins. done runs after it was added.
function addAgentForm(done) {
  const toggle = h('button', { type: 'button', class: 'btn', 'aria-expanded': 'false', 'aria-controls': 'add-agent-form', dataset: { action: 'add-agent' } }, 'Add agent');
  const name = h('input', { id: 'agent-name', name: 'name', type: 'text', required: true, maxlength: '64', autocomplete: 'off', placeholder: 'coder', 'aria-describedby': 'agent-name-hint' });
  const kindAttached = h('input', { type: 'radio', name: 'kind', value: 'attached', id: 'kind-attached' });
  const kindOwned = h('input', { type: 'radio', name: 'kind', value: 'owned', id: 'kind-owned', checked: true });
  const harness = h('select', { id: 'agent-harness', name: 'harness' }, HARNESSES.map(([v, t]) => h('option', { value: v }, t)));
  const command = h('input', { id: 'agent-command', name: 'command', type: 'text', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'agent-command-hint' });
  const model = h('input', { id: 'agent-model', name: 'model', type: 'text', autocomplete: 'off', spellcheck: 'false' });
  const repo = h('input', { id: 'agent-repo', name: 'repo', type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder: '/path/to/a/git/repository', 'aria-describedby': 'agent-repo-hint' });
  const permission = h('select', { id: 'agent-permission', name: 'permission' }, h('option', { value: 'allow' }, 'allow: answer its permission requests yes'), h('option', { value: 'reject' }, 'reject: answer them no'));
  const owned = h('div', { class: 'owned-fields' },
    field('agent-harness', 'Runs', harness),
    field('agent-command', 'Command', command, 'Optional for a named CLI (its own command from jamd’s PATH is used); needed for Any ACP agent.'),
    field('agent-model', 'Model', model),
    field('agent-repo', 'Repository', repo, 'Optional: each room gets a worktree of this git repository.'),
    field('agent-permission', 'Permission requests', permission));
  const msg = h('p', { class: 'form-error', role: 'alert', 'data-role': 'add-agent-error' });
  const submit = h('button', { type: 'submit', class: 'btn' }, 'Add agent');
  const cancel = h('button', { type: 'button', class: 'btn btn--quiet' }, 'Cancel');
  const form = h('form', { id: 'add-agent-form', class: 'card form', 'aria-label': 'Add an agent', hidden: true, novalidate: true },
    field('agent-name', 'Name', name, 'Its handle in rooms becomes @OWNER/NAME.'),
    h('fieldset', { class: 'kind' }, h('legend', null, 'Who runs it'),
      h('label', { class: 'pick', for: 'kind-owned' }, kindOwned, ' jam runs it (owned)'),
      h('label', { class: 'pick', for: 'kind-attached' }, kindAttached, ' I run it myself (attached: jam wait and jam reply)')),
    owned,
    h('div', { class: 'actions' }, submit, cancel),
    msg);
  const sync = () => { owned.hidden = !kindOwned.checked; };
  kindOwned.addEventListener('change', sync);
  kindAttached.addEventListener('change', sync);
  const show = (open) => {
    form.hidden = !open;
    toggle.setAttribute('aria-expanded', String(open));
    if (open) {
      msg.textContent = '';
      sync();
      name.focus();
    }
  };
  toggle.addEventListener('click', () => show(form.hidden));
  cancel.addEventListener('click', () => { show(false); toggle.focus(); });
  form.addEventListener('keydown', (e) => { if (e.key === 'Escape') { show(false); toggle.focus(); } });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    msg.textContent = '';
    const n = name.value.trim();
    if (!n) {
      msg.textContent = 'Give the agent a name.';
      name.focus();
      return;
    }
    const req = { name: n };
    if (kindOwned.checked) {
      const argv = command.value.trim() ? splitCommand(command.value.trim()) : [];
      if (argv === null) {
        msg.textContent = 'The command has a quote that is not closed.';
        command.focus();
        return;
      }
      if (harness.value === 'acp' && !argv.length) {
        msg.textContent = 'Any ACP agent needs its command.';
        command.focus();
        return;
      }
      req.runtime = { harness: harness.value, command: argv, permission: permission.value };
      if (model.value.trim()) req.runtime.model = model.value.trim();
      if (repo.value.trim()) req.runtime.repo = repo.value.trim();
    }
    submit.disabled = true;
    try {
      const a = await post('/v1/agents', req);
      announce(`Agent @${a.handle} added.`);
      form.reset();
      show(false);
      toggle.focus();
      done(a);
    } catch (err) {
      msg.textContent = describe(err, `${n} was not added`);
    } finally {
      submit.disabled = false;
    }
  });
  return { toggle, form, destroy() {} };
}

// settingsForm changes an owned agent's runtime configuration (POST
// /v1/agents/{agent}/config): only the fields the person changed are sent.
function settingsForm(a, done) {
  const d = (a.runtime && a.runtime.desired) || {};
  const key = a.peer.replace(/[^\w-]/g, '_');
  const id = (k) => `set-${key}-${k}`;
  const initial = {
    command: (d.command || []).map((w) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, "'\\''")}'`)).join(' '),
    model: d.model || '',
    repo: d.repo || '',
    permission: d.permission || 'allow',
    handshake_timeout: d.handshake_timeout || '',
  };
  const inputs = {
    command: h('input', { id: id('command'), type: 'text', value: initial.command, spellcheck: 'false', autocomplete: 'off' }),
    model: h('input', { id: id('model'), type: 'text', value: initial.model, spellcheck: 'false', autocomplete: 'off' }),
    repo: h('input', { id: id('repo'), type: 'text', value: initial.repo, spellcheck: 'false', autocomplete: 'off' }),
    permission: h('select', { id: id('permission') }, ['allow', 'reject'].map((v) => h('option', { value: v, selected: v === initial.permission || null }, v))),
    handshake_timeout: h('input', { id: id('handshake_timeout'), type: 'text', value: initial.handshake_timeout, placeholder: 'the harness’s default', spellcheck: 'false', autocomplete: 'off' }),
  };
  const labels = { command: 'Command', model: 'Model', repo: 'Repository', permission: 'Permission requests', handshake_timeout: 'Handshake timeout' };
  const msg = h('p', { class: 'form-note', role: 'status', 'data-role': 'settings-result' });
  const save = h('button', { type: 'submit', class: 'btn' }, 'Save settings');
  const form = h('form', { class: 'form settings', 'aria-label': `Settings of ${a.name || a.handle}`, dataset: { settingsFor: a.peer } },
    Object.keys(inputs).map((k) => field(id(k), labels[k], inputs[k])),
    h('div', { class: 'actions' }, save),
    msg);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const set = {};
    for (const [k, el] of Object.entries(inputs)) if (el.value.trim() !== initial[k]) set[k] = el.value.trim();
    msg.classList.remove('form-error');
    if (!Object.keys(set).length) {
      msg.textContent = 'Nothing changed.';
      return;
    }
    save.disabled = true;
    msg.textContent = 'Saving…';
    try {
      const st = await post(`/v1/agents/${enc(a.peer)}/config`, { set });
      for (const k of Object.keys(set)) initial[k] = set[k];
      msg.textContent = st.pending_change
        ? 'Saved. If the agent’s process is running, it keeps its old settings until it next starts.'
        : 'Saved.';
      announce(msg.textContent);
      done(st);
    } catch (err) {
      msg.textContent = describe(err, 'Not saved');
      msg.classList.add('form-error');
    } finally {
      save.disabled = false;
    }
  });
  return form;
}
