// The rooms list: the rooms page (and the whole screen on a phone), and
// the same list in the sidebar on wide screens.

import { h, ago } from './dom.js';
import { state, on, loadRooms } from './state.js';
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
    ul.replaceChildren(h('li', { class: 'empty' }, state.roomsError ? `Rooms cannot be listed: ${state.roomsError.message}` : 'No rooms yet. Create one with jam room create TITLE --agent NAME.'));
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

// mountRooms is the rooms page.
export function mountRooms(main) {
  const ul = h('ul', { class: 'rooms', 'aria-labelledby': 'page-title' });
  const sub = h('p', { class: 'sub' });
  main.replaceChildren(h('div', { class: 'page' },
    h('header', null, h('h1', { id: 'page-title', tabindex: '-1' }, 'Rooms'), sub),
    ul));
  const render = () => {
    renderRoomList(ul, null);
    const total = [...state.rooms.keys()].reduce((n, id) => n + unread(id), 0);
    sub.textContent = `${state.rooms.size} room${state.rooms.size === 1 ? '' : 's'}${total ? `, ${total} unread message${total === 1 ? '' : 's'}` : ''}`;
  };
  const offs = [on('rooms', render), on('unread', render)];
  render();
  loadRooms().catch(() => {});
  const tick = setInterval(render, 60000); // keep "5 min ago" honest
  return { destroy() { offs.forEach((f) => f()); clearInterval(tick); } };
}
