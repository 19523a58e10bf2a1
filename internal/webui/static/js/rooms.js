// The rooms list: the rooms page (and the whole screen on a phone), and
// the same list in the sidebar on wide screens.

import { h, ago, announce } from './dom.js';
import { post } from './api.js';
import { state, on, loadRooms, loadAgents } from './state.js';
import { describe } from './errors.js';
import { unread } from './unread.js';

function sorted() {
  return [...state.rooms.values()].sort((a, b) => {
    const x = a.last_message_at || '', y = b.last_message_at || '';
    if (x !== y) return x < y ? 1 : -1;
    return (a.title || '').localeCompare(b.title || '');
  });
}

function roomLink(r, current) {
  const n = unread(r.id);
  const multi = state.accounts.length > 1;
  const label = n ? `${n} unread` : '';
  return h('li', null, h('a', {
    href: `#/rooms/${encodeURIComponent(r.id)}`,
    class: n ? 'unread' : null,
    'aria-current': r.id === current ? 'page' : null,
    dataset: { room: r.id },
  },
  h('span', { class: 'title' }, r.title || 'Untitled room'),
  h('span', { class: 'when' }, [multi ? `${r.account} · ` : '', r.last_message_at ? ago(r.last_message_at) : 'no messages yet']),
  n ? h('span', { class: 'badge', 'aria-label': label, title: label }, String(n)) : null));
}

export function renderRoomList(ul, current) {
  const rooms = sorted();
  if (!rooms.length) {
    ul.replaceChildren(h('li', { class: 'empty' }, state.roomsError ? `Rooms cannot be listed: ${state.roomsError.message}` : 'No rooms yet. Create one with New room.'));
    return;
  }
  ul.replaceChildren(...rooms.map((r) => roomLink(r, current)));
}

// Sidebar keeps the sidebar's list current.
export function mountSidebar(el) {
  let current = null;
  const ul = h('ul', { class: 'rooms' });
  el.replaceChildren(h('h2', { id: 'sidebar-title' }, 'Rooms'), ul);
  el.setAttribute('aria-labelledby', 'sidebar-title');
  const render = () => renderRoomList(ul, current);
  on('rooms', render);
  on('unread', render);
  on('accounts', render);
  render();
  return {
    setCurrent(id) {
      current = id;
      render();
    },
  };
}

// newRoomForm is the rooms page's form that creates a room (POST
// /v1/rooms) with the agents ticked, then opens it.
function newRoomForm() {
  const toggle = h('button', { type: 'button', class: 'btn', 'aria-expanded': 'false', 'aria-controls': 'new-room', dataset: { action: 'new-room' } }, 'New room');
  const titleIn = h('input', { id: 'room-title', name: 'title', type: 'text', required: true, maxlength: '200', autocomplete: 'off', placeholder: 'What the room is for' });
  const agentsBox = h('fieldset', { class: 'agent-picks' });
  const account = h('select', { id: 'room-account', name: 'account' });
  const accountRow = h('div', { class: 'field', hidden: true }, h('label', { for: 'room-account' }, 'Account'), account);
  const msg = h('p', { class: 'form-error', role: 'alert', 'data-role': 'new-room-error' });
  const create = h('button', { type: 'submit', class: 'btn' }, 'Create room');
  const cancel = h('button', { type: 'button', class: 'btn btn--quiet' }, 'Cancel');
  const form = h('form', { id: 'new-room', class: 'card form', 'aria-label': 'New room', hidden: true, novalidate: true },
    h('div', { class: 'field' }, h('label', { for: 'room-title' }, 'Title'), titleIn),
    accountRow,
    agentsBox,
    h('div', { class: 'actions' }, create, cancel),
    msg);
  const renderAgents = () => {
    const ticked = new Set([...agentsBox.querySelectorAll('input:checked')].map((i) => i.value));
    const acct = account.value;
    const list = state.agents.filter((a) => !acct || !a.account || a.account === acct);
    agentsBox.replaceChildren(h('legend', null, 'Agents in the room'),
      ...list.length
        ? list.map((a) => h('label', { class: 'pick' },
          h('input', { type: 'checkbox', name: 'agents', value: a.peer, checked: ticked.has(a.peer) || null }),
          h('span', null, a.name || a.handle), h('span', { class: 'sub' }, ` @${a.handle}${a.runtime ? ' · owned' : ''}`)))
        : [h('p', { class: 'sub' }, 'No agents yet: add one on the Agents page, or create the room now and add agents later.')]);
  };
  const renderAccounts = () => {
    accountRow.hidden = state.accounts.length < 2;
    const keep = account.value;
    account.replaceChildren(...state.accounts.map((a) => h('option', { value: a.profile }, a.profile)));
    if (keep) account.value = keep;
  };
  const show = (open) => {
    form.hidden = !open;
    toggle.setAttribute('aria-expanded', String(open));
    if (open) {
      renderAccounts();
      renderAgents();
      msg.textContent = '';
      titleIn.focus();
      // Agents added elsewhere since the page loaded show once read.
      loadAgents().catch(() => {});
    }
  };
  toggle.addEventListener('click', () => show(form.hidden));
  cancel.addEventListener('click', () => { show(false); toggle.focus(); });
  form.addEventListener('keydown', (e) => { if (e.key === 'Escape') { show(false); toggle.focus(); } });
  account.addEventListener('change', renderAgents);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const title = titleIn.value.trim();
    if (!title) {
      msg.textContent = 'Give the room a title.';
      titleIn.focus();
      return;
    }
    const agents = [...agentsBox.querySelectorAll('input:checked')].map((i) => i.value);
    create.disabled = true;
    msg.textContent = '';
    try {
      const room = await post('/v1/rooms', { title, agents, account: account.value || undefined });
      announce(`Room ${title} created.`);
      state.rooms.set(room.id, room);
      loadRooms().catch(() => {});
      loadAgents().catch(() => {});
      location.hash = `#/rooms/${encodeURIComponent(room.id)}`;
    } catch (err) {
      msg.textContent = describe(err, 'The room was not created');
    } finally {
      create.disabled = false;
    }
  });
  const offs = [on('agents', () => { if (!form.hidden) renderAgents(); }), on('accounts', () => { if (!form.hidden) renderAccounts(); })];
  return { toggle, form, destroy: () => offs.forEach((f) => f()) };
}

// mountRooms is the rooms page.
export function mountRooms(main) {
  const ul = h('ul', { class: 'rooms', 'aria-labelledby': 'page-title' });
  const sub = h('p', { class: 'sub' });
  const nr = newRoomForm();
  main.replaceChildren(h('div', { class: 'page' },
    h('header', { class: 'page-head' }, h('div', null, h('h1', { id: 'page-title', tabindex: '-1' }, 'Rooms'), sub), nr.toggle),
    nr.form,
    ul));
  if (!state.agents.length) loadAgents().catch(() => {});
  const render = () => {
    renderRoomList(ul, null);
    const total = [...state.rooms.keys()].reduce((n, id) => n + unread(id), 0);
    sub.textContent = `${state.rooms.size} room${state.rooms.size === 1 ? '' : 's'}${total ? `, ${total} unread message${total === 1 ? '' : 's'}` : ''}`;
  };
  const offs = [on('rooms', render), on('unread', render)];
  render();
  loadRooms().catch(() => {});
  const tick = setInterval(render, 60000); // keep "5 min ago" honest
  return { destroy() { offs.forEach((f) => f()); nr.destroy(); clearInterval(tick); } };
}
