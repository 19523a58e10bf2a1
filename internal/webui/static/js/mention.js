// Mentions: rendering Band's @[[uuid]] tokens as @handles, and the
// composer's @ completion over the room's participants (an ARIA combobox
// on the textarea with a listbox of suggestions).

import { h, announce } from './dom.js';

const TOKEN = /@\[\[([0-9a-fA-F-]{36})\]\]/g;

// renderContent returns the nodes of a message's text: plain text with
// each mention token as a highlighted @handle. names maps a lower-case id
// to a handle (without @); selfId marks mentions of the person.
export function renderContent(content, names, selfId) {
  const nodes = [];
  let last = 0;
  const text = String(content || '');
  for (const m of text.matchAll(TOKEN)) {
    if (m.index > last) nodes.push(text.slice(last, m.index));
    const id = m[1].toLowerCase();
    const name = names.get(id);
    const label = `@${name || `${id.slice(0, 8)}…`}`;
    const self = selfId && id === selfId.toLowerCase();
    nodes.push(h('span', { class: self ? 'mention mention--me' : 'mention', title: name ? id : `unknown participant ${id}` }, label));
    last = m.index + m[0].length;
  }
  if (last < text.length) nodes.push(text.slice(last));
  return nodes;
}

// plainContent is the same text with tokens as @handles, for announcements.
export function plainContent(content, names) {
  return String(content || '').replace(TOKEN, (_, id) => `@${names.get(id.toLowerCase()) || 'someone'}`);
}

const WORD = /(^|[\s(])@([\w./-]*)$/;

// Completion wires @ completion to a textarea. candidates() returns
// [{id, handle, name, type}]; chosen mentions are collected in picked
// (handle -> id) so the post can name them explicitly.
export class Completion {
  constructor(textarea, list, candidates) {
    this.ta = textarea;
    this.list = list;
    this.candidates = candidates;
    this.items = [];
    this.active = -1;
    this.picked = new Map();
    // A textarea cannot be a combobox; as a textbox it still names the
    // list it completes from and its active option.
    this.ta.setAttribute('aria-autocomplete', 'list');
    this.ta.setAttribute('aria-controls', list.id);
    this.list.setAttribute('role', 'listbox');
    this.list.hidden = true;
    this.ta.addEventListener('input', () => this.update());
    this.ta.addEventListener('click', () => this.update());
    this.ta.addEventListener('blur', () => setTimeout(() => this.close(), 150));
    this.list.addEventListener('mousedown', (e) => e.preventDefault()); // keep focus in the textarea
  }

  get open() {
    return !this.list.hidden;
  }

  query() {
    const before = this.ta.value.slice(0, this.ta.selectionStart);
    const m = WORD.exec(before);
    return m ? { text: m[2], start: before.length - m[2].length - 1 } : null;
  }

  update() {
    const q = this.query();
    if (!q) return this.close();
    const needle = q.text.toLowerCase();
    const all = this.candidates().filter((c) => c.handle);
    const starts = all.filter((c) => c.handle.toLowerCase().startsWith(needle) || (c.name || '').toLowerCase().startsWith(needle));
    const contains = all.filter((c) => !starts.includes(c) && (c.handle.toLowerCase().includes(needle) || (c.name || '').toLowerCase().includes(needle)));
    this.items = [...starts, ...contains].slice(0, 8);
    if (!this.items.length) return this.close();
    this.active = 0;
    this.render();
  }

  render() {
    const opening = this.list.hidden;
    this.list.replaceChildren(...this.items.map((c, i) => h('li', {
      id: `${this.list.id}-${i}`,
      role: 'option',
      'aria-selected': i === this.active ? 'true' : 'false',
      onclick: () => this.choose(i),
    }, h('span', { class: 'h' }, `@${c.handle}`), h('span', { class: 'n' }, c.name && c.name !== c.handle ? `${c.name}${c.type ? ` · ${c.type}` : ''}` : c.type || ''))));
    this.list.hidden = false;
    this.ta.setAttribute('aria-activedescendant', `${this.list.id}-${this.active}`);
    if (opening) announce(`${this.items.length} participant${this.items.length === 1 ? '' : 's'} to mention; arrow keys choose, Enter inserts.`);
    this.list.children[this.active]?.scrollIntoView({ block: 'nearest' });
  }

  close() {
    if (this.list.hidden) return;
    this.list.hidden = true;
    this.items = [];
    this.ta.removeAttribute('aria-activedescendant');
  }

  choose(i) {
    const c = this.items[i];
    const q = this.query();
    if (!c || !q) return this.close();
    const v = this.ta.value;
    const insert = `@${c.handle} `;
    const end = this.ta.selectionStart;
    this.ta.value = v.slice(0, q.start) + insert + v.slice(end);
    const caret = q.start + insert.length;
    this.ta.setSelectionRange(caret, caret);
    this.picked.set(c.handle, c.id);
    this.close();
    this.ta.dispatchEvent(new Event('input'));
    this.ta.focus();
  }

  // keydown handles the keys of an open list; it returns true when it
  // used the key.
  keydown(e) {
    if (!this.open) return false;
    switch (e.key) {
      case 'ArrowDown':
        this.active = (this.active + 1) % this.items.length;
        this.render();
        return true;
      case 'ArrowUp':
        this.active = (this.active - 1 + this.items.length) % this.items.length;
        this.render();
        return true;
      case 'Enter':
      case 'Tab':
        this.choose(this.active);
        return true;
      case 'Escape':
        this.close();
        return true;
    }
    return false;
  }

  // mentions lists the ids picked whose @handle is still in the text.
  mentions(text) {
    const out = [];
    for (const [handle, id] of this.picked) if (text.includes(`@${handle}`)) out.push(id);
    return out;
  }

  reset() {
    this.picked.clear();
    this.close();
  }
}
