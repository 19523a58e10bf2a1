// A session's worktree on the session page: its state, branch, path and
// uncommitted changes, and the operations the control API offers on it
// (POST /v1/worktrees/{session}/archive, /remove, /restore), each behind a
// confirmation step in the page that says what will happen. The answer
// is shown at once: the new state, or the daemon's message when it
// refuses (a turn is running, uncommitted changes, …).

import { h, append, announce } from './dom.js';
import { get, post, enc } from './api.js';
import { describe } from './errors.js';

// STATE_STATUS maps worktree states to chip colours.
const STATE_STATUS = { active: 'settled', archived: 'queued', removed: 'failed' };

const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const code = (text) => h('code', null, text);

// ACTIONS are the operations: when each is offered, what its confirmation
// says, and the words for its progress and its result (given the
// worktree the daemon answered with).
const ACTIONS = {
  archive: {
    label: 'Archive',
    confirm: 'Archive worktree',
    doing: 'Archiving…',
    done: (w) => `Worktree archived; its work is kept on branch ${w.branch}.`,
    offered: (w) => w.state === 'active' && !!w.repo,
    ask: (w) => [
      w.changes
        ? ['Its ', plural(w.changes, 'uncommitted change'), ' will be committed to branch ', code(w.branch), ', then its directory is deleted; the branch stays.']
        : ['Its directory is deleted; branch ', code(w.branch), ' stays.'],
      ' The session\'s turns wait until the worktree is restored.',
    ],
  },
  remove: {
    label: 'Remove',
    confirm: 'Remove worktree',
    doing: 'Removing…',
    done: () => 'Worktree removed.',
    danger: true,
    offered: (w) => w.state === 'active' || w.state === 'archived',
    ask: (w) => {
      if (!w.repo) return ['Its directory and everything in it are deleted. The session\'s turns wait until it is restored.'];
      const what = w.state === 'archived'
        ? ['Branch ', code(w.branch), ', which holds the work kept at archive, is deleted.']
        : ['Its directory and branch ', code(w.branch), ' are deleted.'];
      return [what, ' The session\'s turns wait until it is restored, on a new branch from the repository\'s HEAD.'];
    },
    // force is offered when the removal would lose uncommitted changes.
    force: (w) => w.state === 'active' && w.changes > 0,
  },
  restore: {
    label: 'Restore',
    confirm: 'Restore worktree',
    doing: 'Restoring…',
    done: (w) => `Worktree restored at ${w.path}.`,
    offered: (w) => w.state === 'archived' || w.state === 'removed',
    ask: (w) => {
      if (!w.repo) return ['Its directory is made again, empty. The session\'s waiting turns then run.'];
      const what = w.state === 'archived'
        ? ['Branch ', code(w.branch), ' is checked out again at ', code(w.path), '.']
        : ['A new branch ', code(w.branch), ' is made from the repository\'s HEAD and checked out at ', code(w.path), '.'];
      return [what, ' The session\'s waiting turns then run.'];
    },
  },
};

// mountWorktree builds the worktree section of session id's page. load
// reads the worktree again; onChange runs after an operation succeeded,
// so the page can read the session again.
export function mountWorktree(id, { onChange } = {}) {
  const chip = h('span', { class: 'chip', hidden: true });
  const facts = h('dl', { class: 'kv' });
  const note = h('p', { class: 'sub wt-note' });
  const buttons = {};
  const actions = h('div', { class: 'wt-actions' }, Object.entries(ACTIONS).map(([name, a]) => {
    buttons[name] = h('button', { type: 'button', class: `btn btn--quiet${a.danger ? ' btn--danger' : ''}`, dataset: { action: name }, hidden: true, onclick: () => ask(name) }, a.label);
    return buttons[name];
  }));
  const question = h('p', { class: 'wt-question', id: 'wt-question', tabindex: '-1' });
  const force = h('input', { type: 'checkbox', id: 'wt-force', dataset: { force: '' } });
  const forceLabel = h('label', { class: 'wt-force', for: 'wt-force', hidden: true }, force, h('span', { class: 'wt-force-text' }));
  const yes = h('button', { type: 'button', class: 'btn', dataset: { confirm: '' }, onclick: () => run() });
  const no = h('button', { type: 'button', class: 'btn btn--quiet', dataset: { cancel: '' }, onclick: () => close(true) }, 'Cancel');
  const confirm = h('div', { class: 'wt-confirm', role: 'group', 'aria-labelledby': 'wt-question', hidden: true,
    onkeydown: (e) => { if (e.key === 'Escape') close(true); } },
  question, forceLabel, h('div', { class: 'wt-actions' }, yes, no));
  const result = h('p', { class: 'wt-result', role: 'status' });
  const error = h('div', { class: 'wt-error', role: 'alert' });
  const el = h('section', { class: 'card worktree', 'aria-labelledby': 'worktree-title', dataset: { worktreeState: '' } },
    h('h2', { id: 'worktree-title' }, 'Worktree', chip),
    facts, note, actions, confirm, result, error);

  let wt = null; // the worktree as last read, or null when there is none
  let pending = null; // the action whose confirmation is open
  let busy = false;

  function render() {
    el.dataset.worktreeState = wt ? wt.state : 'none';
    if (!wt) {
      chip.hidden = true;
      facts.replaceChildren();
      note.textContent = 'This session has no worktree yet: one is made when its first turn starts.';
      for (const b of Object.values(buttons)) b.hidden = true;
      close(false);
      return;
    }
    chip.hidden = false;
    chip.textContent = wt.state;
    chip.dataset.status = STATE_STATUS[wt.state] || 'queued';
    chip.dataset.worktreeState = wt.state;
    facts.replaceChildren(...[
      ['State', wt.state],
      ['Branch', wt.branch ? code(wt.branch) : h('span', { class: 'sub' }, 'none (a plain directory)')],
      ['Path', h('code', { class: 'path' }, wt.path)],
      ['Repository', wt.repo ? h('code', { class: 'path' }, wt.repo) : h('span', { class: 'sub' }, 'none')],
      ['Uncommitted', wt.state === 'active' ? plural(wt.changes || 0, 'change') : h('span', { class: 'sub' }, '—')],
    ].map(([k, v]) => [h('dt', null, k), h('dd', { dataset: { fact: k.toLowerCase() } }, v)]).flat());
    note.textContent = wt.state === 'active' ? '' : `The worktree is ${wt.state}: the session's turns wait until it is restored.`;
    note.classList.toggle('wt-note--waiting', wt.state !== 'active');
    for (const [name, a] of Object.entries(ACTIONS)) {
      buttons[name].hidden = !a.offered(wt);
      buttons[name].disabled = busy;
    }
    if (pending && !ACTIONS[pending].offered(wt)) close(false);
  }

  function ask(name) {
    if (busy || !wt) return;
    const a = ACTIONS[name];
    pending = name;
    error.replaceChildren();
    result.textContent = '';
    question.replaceChildren();
    append(question, [h('strong', null, `${a.confirm}?`), ' ', a.ask(wt)]);
    const canForce = !!(a.force && a.force(wt));
    forceLabel.hidden = !canForce;
    force.checked = false;
    if (canForce) forceLabel.querySelector('.wt-force-text').textContent = ` Discard ${plural(wt.changes, 'uncommitted change')} (otherwise the daemon refuses)`;
    yes.textContent = a.confirm;
    yes.className = `btn${a.danger ? ' btn--danger-solid' : ''}`;
    yes.disabled = false;
    confirm.hidden = false;
    confirm.dataset.action = name;
    for (const [n, b] of Object.entries(buttons)) b.setAttribute('aria-expanded', String(n === name));
    question.focus();
  }

  function close(refocus) {
    const was = pending;
    pending = null;
    confirm.hidden = true;
    delete confirm.dataset.action;
    for (const b of Object.values(buttons)) b.removeAttribute('aria-expanded');
    if (refocus && was && !buttons[was].hidden) buttons[was].focus();
  }

  async function run() {
    if (!pending || busy) return;
    const name = pending;
    const a = ACTIONS[name];
    let refresh = false;
    busy = true;
    yes.disabled = true;
    no.disabled = true;
    result.textContent = a.doing;
    render();
    try {
      const body = name === 'remove' && !forceLabel.hidden && force.checked ? { force: true } : undefined;
      wt = await post(`/v1/worktrees/${enc(id)}/${name}`, body);
      result.textContent = a.done(wt);
      announce(result.textContent);
      close(false);
      if (onChange) onChange();
    } catch (e) {
      result.textContent = '';
      error.replaceChildren(h('p', { class: 'error-box', dataset: { code: e.code || '' } }, describe(e, `${a.label} refused`)));
      close(false);
      refresh = true; // the refusal may be news: read the worktree again
    } finally {
      busy = false;
      yes.disabled = false;
      no.disabled = false;
      render();
      if (!pending && buttons[name] && !buttons[name].hidden) buttons[name].focus();
      else if (!pending) el.querySelector('.wt-actions button:not([hidden])')?.focus();
    }
    if (refresh) load();
  }

  // load reads the worktree again; an open confirmation stays open.
  async function load() {
    try {
      const res = await get('/v1/worktrees');
      if (busy) return; // the operation's answer is newer
      wt = (res.worktrees || []).find((w) => w.session === id) || null;
      render();
    } catch (e) {
      error.replaceChildren(h('p', { class: 'error-box' }, describe(e, 'The worktree cannot be read')));
    }
  }

  render();
  return { el, load };
}
