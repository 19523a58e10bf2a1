// The approvals owned agents wait for: an agent whose permission policy is
// ask asks the person before it runs a command or edits a file. The list
// is read when the page starts and after every stream loss, and kept
// current by approval.pending and approval.resolved events. Whoever
// answers (this page, another one, the CLI, or the timeout), the
// approval leaves the list and every view showing it redraws.

import { h, duration } from './dom.js';
import { get, post, enc } from './api.js';
import { feed } from './events.js';
import { state, on, emit } from './state.js';

// pending: approval id -> wire.Approval, while it waits.
export const pending = new Map();
// answered: ids answered or resolved since the page started, so a late
// list read cannot bring one back.
const answered = new Set();

const changed = () => emit('approvals');

export const onApprovals = (fn) => on('approvals', fn);

// forRoom lists a room's pending approvals, oldest first.
export function forRoom(room) {
  return [...pending.values()].filter((a) => a.room === room).sort((a, b) => (a.created_at || '').localeCompare(b.created_at || ''));
}

export async function loadApprovals() {
  const res = await get('/v1/approvals');
  pending.clear();
  for (const a of (res && res.approvals) || []) if (!answered.has(a.id)) pending.set(a.id, a);
  changed();
}

// answer sends the person's decision (allow, always or deny). The
// approval leaves the list at once; a refusal (answered meanwhile, or no
// longer waiting) is thrown for the caller to show.
export async function answer(id, decision) {
  const res = await post(`/v1/approvals/${enc(id)}`, { decision });
  resolved(id);
  return res;
}

function resolved(id) {
  answered.add(id);
  if (pending.delete(id)) changed();
}

// timeLeft says how long until the approval is denied by itself.
export function timeLeft(a, now = Date.now()) {
  const ms = Date.parse(a.deadline) - now;
  if (!(ms > 0)) return 'denied any moment now';
  return `${duration(Math.ceil(ms / 1000))} left`;
}

feed.on('event', (ev) => {
  const d = ev.data || {};
  if (ev.kind === 'approval.pending' && d.id && !answered.has(d.id)) {
    pending.set(d.id, d);
    changed();
  } else if (ev.kind === 'approval.resolved' && d.approval && d.approval.id) {
    resolved(d.approval.id);
  }
});
feed.on('resync', () => { loadApprovals().catch(() => {}); });

// mountIndicator keeps the header's link to the pending approvals: their
// number, leading to the room of the oldest; hidden while none wait.
export function mountIndicator(el) {
  const draw = () => {
    const list = [...pending.values()].sort((a, b) => (a.created_at || '').localeCompare(b.created_at || ''));
    el.hidden = !list.length;
    if (!list.length) {
      el.replaceChildren();
      return;
    }
    const first = list[0];
    const title = state.rooms.get(first.room)?.title;
    const text = `${list.length} approval${list.length === 1 ? '' : 's'}`;
    el.replaceChildren(h('a', {
      href: `#/rooms/${enc(first.room)}`,
      dataset: { approvalsLink: first.room },
      'aria-label': `${text} waiting${title ? `, the first in ${title}` : ''}`,
      title: `${first.agent} asks to ${first.title}`,
    }, h('span', { class: 'count' }, String(list.length)), h('span', { class: 'label' }, list.length === 1 ? ' approval' : ' approvals')));
  };
  onApprovals(draw);
  on('rooms', draw);
  draw();
}
