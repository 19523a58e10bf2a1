// Change sets: what a turn changed in its session's worktree. The
// manifest (GET /v1/changesets…) names the files with their kind and
// figures; the patch (GET /v1/changesets/{cs}/patch, git diff --binary
// --full-index -M with quoted paths) is parsed here into one unified diff
// per file. Everything from the patch and the manifest goes into the page
// as text nodes: a file name or a line of a diff never becomes markup.

import { h } from './dom.js';
import { APIError } from './api.js';

// MAX_LINES is how many lines of one file's diff are drawn; the rest is
// behind the raw patch link. OPEN_FILES files are expanded at first.
export const MAX_LINES = 400;
export const OPEN_FILES = 3;
// MAX_PATCH_BYTES bounds the patch the page reads; a larger one shows the
// manifest and the raw patch link.
export const MAX_PATCH_BYTES = 4 << 20;

// summary is the change set's one line: "3 files changed, +12 −4".
export function summary(cs) {
  const n = (cs.files || []).length;
  if (!n) return 'no changes';
  return `${n} ${n === 1 ? 'file' : 'files'} changed, +${cs.additions || 0} \u2212${cs.deletions || 0}`;
}

export const patchHref = (cs) => `/v1/changesets/${encodeURIComponent(cs.id)}/patch`;

// unquote reads a path as git writes it: plain, or in double quotes with
// C escapes (octal for each byte outside printable ASCII, so a UTF-8 name
// comes back from its bytes). It returns [path, rest of s] or null.
export function unquote(s) {
  if (!s.startsWith('"')) return null;
  const bytes = [];
  const esc = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, '\\': 92 };
  let i = 1;
  for (; i < s.length; i++) {
    const c = s[i];
    if (c === '"') {
      return [new TextDecoder().decode(new Uint8Array(bytes)), s.slice(i + 1)];
    }
    if (c !== '\\') {
      for (const b of new TextEncoder().encode(c)) bytes.push(b);
      continue;
    }
    i++;
    if (i >= s.length) return null;
    const e = s[i];
    if (e in esc) {
      bytes.push(esc[e]);
    } else if (/[0-7]/.test(e)) {
      const oct = s.slice(i, i + 3);
      if (!/^[0-7]{3}$/.test(oct)) return null;
      bytes.push(parseInt(oct, 8) & 0xff);
      i += 2;
    } else {
      return null;
    }
  }
  return null;
}

// side reads the path of a "--- " or "+++ " line (or a "rename from"
// one, prefix ''): /dev/null is null; git ends a name holding a space
// with a tab, which is not part of it.
function side(text, prefix) {
  if (text === '/dev/null') return null;
  const q = unquote(text);
  let p = q ? q[0] : text.replace(/\t$/, '');
  if (prefix && p.startsWith(prefix)) p = p.slice(prefix.length);
  return p;
}

// gitHeader reads the two paths of "diff --git a/X b/Y"; unquoted paths
// with spaces are ambiguous there, so a rename's or a text file's later
// lines name them again and win.
function gitHeader(rest) {
  const qa = unquote(rest);
  if (qa) {
    const b = rest.slice(rest.length - qa[1].length).replace(/^ /, '');
    const qb = unquote(b);
    return [qa[0].replace(/^a\//, ''), (qb ? qb[0] : b).replace(/^b\//, '')];
  }
  // "a/P b/P": the same path twice splits in the middle.
  if ((rest.length - 5) % 2 === 0) {
    const n = (rest.length - 5) / 2;
    const a = rest.slice(2, 2 + n);
    if (rest.startsWith('a/') && rest.slice(2 + n, 5 + n) === ' b/' && rest.slice(5 + n) === a) return [a, a];
  }
  const at = rest.indexOf(' b/');
  if (rest.startsWith('a/') && at > 0) {
    const tail = rest.slice(at + 1);
    const qb = unquote(tail);
    return [rest.slice(2, at), (qb ? qb[0] : tail).replace(/^b\//, '')];
  }
  return [rest, rest];
}

const HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$/;

// parsePatch splits a git patch into files: {oldPath, newPath (null for
// the absent side), binary, meta (the extended header lines), lines
// [{kind: 'hunk'|'add'|'del'|'ctx'|'note', text, old, new}], additions,
// deletions}. It never throws: what it cannot read it keeps as meta.
export function parsePatch(text) {
  const files = [];
  let f = null;
  let oldLeft = 0;
  let newLeft = 0;
  let oldNo = 0;
  let newNo = 0;
  const lines = String(text || '').split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  for (const raw of lines) {
    const line = raw;
    if (f && (oldLeft > 0 || newLeft > 0)) {
      // Inside a hunk: the counts say which lines belong to it, so a
      // deleted line reading "-- x" is never taken for a header.
      const c = line[0];
      if (c === '+' && newLeft > 0) {
        f.lines.push({ kind: 'add', text: line.slice(1), new: newNo++ });
        f.additions++;
        newLeft--;
        continue;
      }
      if (c === '-' && oldLeft > 0) {
        f.lines.push({ kind: 'del', text: line.slice(1), old: oldNo++ });
        f.deletions++;
        oldLeft--;
        continue;
      }
      if ((c === ' ' || line === '') && oldLeft > 0 && newLeft > 0) {
        f.lines.push({ kind: 'ctx', text: line.slice(1), old: oldNo++, new: newNo++ });
        oldLeft--;
        newLeft--;
        continue;
      }
      if (c === '\\') {
        f.lines.push({ kind: 'note', text: line });
        continue;
      }
      oldLeft = newLeft = 0; // a short hunk: read on as headers
    }
    if (line.startsWith('diff --git ')) {
      const [a, b] = gitHeader(line.slice('diff --git '.length));
      f = { oldPath: a, newPath: b, binary: false, meta: [], lines: [], additions: 0, deletions: 0 };
      files.push(f);
      continue;
    }
    if (!f) continue; // anything before the first file
    if (line.startsWith('\\') && f.lines.length) {
      f.lines.push({ kind: 'note', text: line });
      continue;
    }
    const m = HUNK.exec(line);
    if (m && !f.binary) {
      oldNo = Number(m[1]);
      newNo = Number(m[3]);
      oldLeft = m[2] === undefined ? 1 : Number(m[2]);
      newLeft = m[4] === undefined ? 1 : Number(m[4]);
      f.lines.push({ kind: 'hunk', text: line });
      continue;
    }
    if (f.lines.length || f.binary) {
      if (!f.binary) f.meta.push(line);
      continue; // binary data, or a stray line after the hunks
    }
    if (line.startsWith('--- ')) f.oldPath = side(line.slice(4), 'a/');
    else if (line.startsWith('+++ ')) f.newPath = side(line.slice(4), 'b/');
    else if (line.startsWith('rename from ')) f.oldPath = side(line.slice(12), '');
    else if (line.startsWith('rename to ')) f.newPath = side(line.slice(10), '');
    else if (line.startsWith('new file mode ')) { f.oldPath = null; f.meta.push(line); }
    else if (line.startsWith('deleted file mode ')) { f.newPath = null; f.meta.push(line); }
    else if (line === 'GIT binary patch' || line.startsWith('Binary files ')) f.binary = true;
    else f.meta.push(line);
  }
  return files;
}

// readPatch reads a change set's patch as text, bounded.
export async function readPatch(cs) {
  let res;
  const abort = new AbortController();
  try {
    res = await fetch(patchHref(cs), { headers: { Accept: 'text/x-diff' }, credentials: 'same-origin', cache: 'default', signal: abort.signal });
  } catch {
    throw new APIError(0, 'unavailable', 'The daemon does not answer; it may be stopped or restarting.');
  }
  if (!res.ok) {
    let e = null;
    try { e = (await res.json()).error; } catch { e = null; }
    throw new APIError(res.status, (e && e.code) || 'internal', (e && e.message) || `${res.status} ${res.statusText}`);
  }
  const len = Number(res.headers.get('Content-Length') || 0);
  if (!len || len > MAX_PATCH_BYTES) {
    // The daemon always says how long a patch is; without that bound the
    // page does not read it.
    abort.abort();
    if (!len && res.headers.get('Content-Length') === '0') return '';
    throw new APIError(413, 'too_large', 'The patch is too large to show here.');
  }
  return res.text();
}

// patchCache keeps parsed patches: a change set never changes.
const patchCache = new Map();
export function loadPatch(cs) {
  if (!patchCache.has(cs.id)) {
    const p = readPatch(cs).then(parsePatch);
    p.catch(() => patchCache.delete(cs.id));
    patchCache.set(cs.id, p);
  }
  return patchCache.get(cs.id);
}

const KIND = { added: 'added', modified: 'modified', deleted: 'deleted', renamed: 'renamed' };
const size = (n) => (n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MB` : n >= 1024 ? `${Math.round(n / 1024)} KB` : `${n} bytes`);

// keyOf names a parsed file by its path in the manifest.
const keyOf = (p) => p.newPath ?? p.oldPath ?? '';

function diffBody(cs, file, parsed) {
  if (file.binary || (parsed && parsed.binary)) return h('p', { class: 'sub cs-note' }, `Binary file (${size(file.size || 0)}); the raw patch holds its bytes.`);
  if (!parsed) return h('p', { class: 'sub cs-note' }, 'No diff for this file in the patch.');
  const shown = parsed.lines.slice(0, MAX_LINES);
  const num = (n) => h('span', { class: 'dl-no', 'aria-hidden': 'true' }, n == null ? '' : String(n));
  const pre = h('pre', { class: 'cs-diff', tabindex: '0', 'aria-label': `Diff of ${file.path}` },
    shown.map((l) => h('span', { class: `dl dl--${l.kind}` },
      l.kind === 'hunk' || l.kind === 'note' ? null : [num(l.old), num(l.new)],
      h('span', { class: 'dl-text' }, l.kind === 'add' ? `+${l.text}` : l.kind === 'del' ? `-${l.text}` : l.kind === 'ctx' ? ` ${l.text}` : l.text),
      '\n')));
  const meta = parsed.meta.filter((m) => /^(old|new) mode /.test(m));
  const out = [meta.length ? h('p', { class: 'sub cs-note' }, meta.join(', ')) : null, parsed.lines.length ? pre : h('p', { class: 'sub cs-note' }, 'Only the mode or the name changed.')];
  if (parsed.lines.length > MAX_LINES) {
    out.push(h('p', { class: 'cs-note cs-truncated' }, `${parsed.lines.length - MAX_LINES} more lines not shown. `,
      h('a', { href: patchHref(cs), target: '_blank', rel: 'noopener noreferrer' }, 'Open the raw patch')));
  }
  return out;
}

// renderChangeSet draws a change set: its figures, its origin, and each
// file with its diff (parsed: the parsed patch, or null while it loads
// or when it is not kept; patchError: why it could not be read).
export function renderChangeSet(cs, { parsed = null, patchError = '', loading = false } = {}) {
  const files = cs.files || [];
  const byPath = new Map((parsed || []).map((p) => [keyOf(p), p]));
  const head = h('div', { class: 'cs-head' },
    h('strong', { class: 'cs-summary' }, summary(cs)),
    cs.origin === 'salvage' ? h('span', { class: 'chip cs-salvage', dataset: { status: 'failed' } }, 'salvage') : null,
    cs.origin === 'request' ? h('span', { class: 'chip', dataset: { status: 'queued' } }, 'captured on request') : null,
    files.length && !cs.patch_omitted ? h('a', { href: patchHref(cs), class: 'cs-raw', target: '_blank', rel: 'noopener noreferrer' }, 'Raw patch') : null);
  const notes = [];
  if (cs.origin === 'salvage') notes.push(h('p', { class: 'cs-note cs-salvage-note' }, 'The turn did not succeed (it failed, was cancelled or was interrupted): these are the changes it left in the worktree.'));
  if (!files.length) notes.push(h('p', { class: 'sub cs-note', dataset: { role: 'no-changes' } }, 'This turn made no changes to the worktree.'));
  if (files.length && cs.patch_omitted) notes.push(h('p', { class: 'cs-note cs-omitted' }, `The patch was too large to keep (${size(cs.patch_bytes || 0)}); the files below are what changed, and the checkpoints’ commits hold the rest.`));
  if (patchError) notes.push(h('p', { class: 'cs-note form-error' }, patchError, ' ', h('a', { href: patchHref(cs), target: '_blank', rel: 'noopener noreferrer' }, 'Open the raw patch')));
  if (loading && !cs.patch_omitted && files.length) notes.push(h('p', { class: 'sub cs-note' }, 'Loading the diff…'));
  const list = files.length ? h('ul', { class: 'cs-files', 'aria-label': 'Files changed' }, files.map((f, i) => {
    const p = byPath.get(f.path);
    const name = f.kind === 'renamed' && f.old_path ? [h('span', { class: 'cs-old' }, f.old_path), ' \u2192 ', h('span', null, f.path)] : f.path;
    const figures = f.binary ? h('span', { class: 'cs-bin' }, 'binary')
      : h('span', { class: 'cs-figs' }, h('span', { class: 'cs-add' }, `+${f.additions}`), ' ', h('span', { class: 'cs-del' }, `\u2212${f.deletions}`));
    const row = (tag) => h(tag, { class: tag === 'summary' ? null : 'cs-row' },
      h('span', { class: 'cs-kind', dataset: { kind: KIND[f.kind] || 'modified' } }, f.kind),
      h('code', { class: 'cs-path', title: f.old_path ? `${f.old_path} \u2192 ${f.path}` : f.path }, name),
      figures);
    // Without a diff to show (the patch was not kept, or is too large to
    // read here) a file is one line, with nothing to expand.
    if (!parsed && !loading) return h('li', { class: 'cs-file', dataset: { path: f.path, kind: f.kind } }, row('div'));
    return h('li', { class: 'cs-file', dataset: { path: f.path, kind: f.kind } },
      h('details', { open: parsed && i < OPEN_FILES ? true : null },
        row('summary'),
        parsed ? diffBody(cs, f, p) : h('p', { class: 'sub cs-note' }, 'Loading…')));
  })) : null;
  return h('div', { class: 'changeset', dataset: { changeset: cs.id, origin: cs.origin, files: String(files.length) } }, head, notes, list);
}

// showChangeSets draws the change sets of one turn into el, reading
// each patch (when kept and not too large) once.
export function showChangeSets(el, list, isCurrent) {
  if (!list.length) {
    el.replaceChildren(h('p', { class: 'sub', dataset: { role: 'no-changeset' } }, 'No change set recorded for this turn.'));
    return;
  }
  const draw = (states) => el.replaceChildren(...list.map((cs, i) => renderChangeSet(cs, states[i])));
  const states = list.map((cs) => {
    const wants = (cs.files || []).length && !cs.patch_omitted;
    if (wants && (cs.patch_bytes || 0) > MAX_PATCH_BYTES) return { patchError: `The patch is ${size(cs.patch_bytes)}, too large to show here.` };
    return { loading: Boolean(wants) };
  });
  draw(states);
  list.forEach((cs, i) => {
    if (!states[i].loading) return;
    loadPatch(cs).then((parsed) => { states[i] = { parsed }; }, (e) => { states[i] = { patchError: `The diff cannot be read: ${e.message}` }; })
      .then(() => { if (isCurrent()) draw(states); });
  });
}
