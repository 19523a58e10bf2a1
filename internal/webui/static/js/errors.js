// Errors in words: the control API answers a failure with a stable code
// and a message written for logs and terminals (it names the operation,
// the ids involved, and the sentinel it wraps). The page shows a sentence
// for the code, and, where the daemon's reason helps the person act, that
// reason alone: without the chain of operations before it, with ids
// replaced by names the page knows. Nothing of the envelope (JSON, HTTP
// status) is ever shown.

import { state } from './state.js';

// SENTENCES are what each code means to a person.
const SENTENCES = {
  invalid_argument: 'That was not accepted.',
  unauthenticated: 'This browser is no longer signed in.',
  permission_denied: 'This browser may not do that.',
  not_found: 'It no longer exists, or never did.',
  method_not_allowed: 'The daemon does not offer that here; the page may be older than the daemon.',
  already_exists: 'That already exists.',
  conflict: 'That cannot be done in the state it is in now.',
  lease_lost: 'Another part of jam took over this work; try again.',
  payload_too_large: 'That is too large: messages are limited to 1 MiB.',
  internal: 'Something went wrong inside jam; the daemon’s log says what.',
  not_implemented: 'This jam cannot do that yet.',
  unavailable: 'The daemon or Band does not answer right now; try again in a moment.',
  stopping: 'The daemon is stopping; try again once it is back.',
  storage_full: 'The daemon cannot write its data: the disk is full or not writable.',
  placement_incompatible: 'The agent’s process cannot serve this room with these settings.',
};

// LABELS are the sentinel texts the daemon's messages wrap; the reason is
// what follows the last of them.
const LABELS = ['invalid argument: ', 'not found: ', 'already exists: ', 'conflict: ', 'incompatible with the placement: ', 'unavailable: ', 'not implemented: '];

// KNOWN rewrites reasons the person meets often into advice.
const KNOWN = [
  [/mentions nobody/i, 'Mention someone with @ (an agent, or a person in the room): a message that mentions nobody reaches no one.'],
  [/is not queued for any agent/i, 'That message was already answered or settled.'],
  [/has already been taken/i, 'That name is taken: choose another.'],
  [/is busy: a turn is running/i, 'A turn is running, or another worktree operation is under way: cancel the turn (Cancel turn, on this page) or wait for it to end, then try again.'],
];

const UUID = /\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b/g;

// reason extracts the daemon's reason from message, or ''.
function reason(message) {
  let msg = String(message || '');
  if (!msg || msg.length > 600 || /^\s*[{[]/.test(msg)) return '';
  let at = -1, len = 0;
  for (const l of LABELS) {
    const k = msg.lastIndexOf(l);
    if (k > at) {
      at = k;
      len = l.length;
    }
  }
  if (at >= 0) msg = msg.slice(at + len);
  // Band's request details mean nothing to a person.
  msg = msg.replace(/\s*\(request [0-9a-f]+\)/g, '').replace(/\b(GET|POST|PUT|PATCH|DELETE) \/\S+: /g, '').replace(/\bband \d{3} [a-z_]+: /g, '');
  msg = msg.replace(UUID, (id) => {
    const r = state.rooms.get(id.toLowerCase()) || state.rooms.get(id);
    if (r && r.title) return `“${r.title}”`;
    const a = state.agentsById.get(id);
    if (a) return `@${a.handle}`;
    return `${id.slice(0, 8)}…`;
  });
  msg = msg.trim();
  return msg ? msg[0].toUpperCase() + msg.slice(1) : '';
}

// describe returns the sentence to show for an error: what failed (what,
// such as "The room was not created"), what the code means, and the
// daemon's reason when it adds something.
export function describe(err, what = '') {
  const code = (err && err.code) || 'internal';
  const raw = (err && err.message) || '';
  for (const [re, advice] of KNOWN) if (re.test(raw)) return join(what, advice);
  const sentence = SENTENCES[code] || SENTENCES.internal;
  // The reason says more than the sentence for the codes a person can act on.
  const why = ['invalid_argument', 'not_found', 'already_exists', 'conflict', 'placement_incompatible', 'not_implemented'].includes(code) ? reason(raw) : '';
  return join(what, why ? `${sentence} ${why.endsWith('.') ? why : `${why}.`}` : sentence);
}

function join(what, text) {
  if (!what) return text;
  return `${what.endsWith('.') ? what : `${what}:`} ${text}`;
}
