// Markdown for messages, rendered to DOM nodes (never to an HTML string):
// every piece of the source goes in as a text node or as an element this
// module creates, so raw HTML in a message shows as text, and no source
// can add an attribute, an event handler or a script. The only attribute
// taken from the source is a link's address, and only an absolute http,
// https or mailto URL (as the browser's URL parser reads it) becomes one;
// anything else (javascript:, data:, a relative path) renders as its
// label alone. Links open in a new tab with rel="noopener noreferrer".
// Images render as links (the page's policy loads no outside image).
//
// The subset: paragraphs (line breaks kept), headings, fenced code with a
// small highlighter (highlight.js), inline code, bold, italic,
// strikethrough, links and bare URLs, block quotes, lists, tables and
// rules. Work is linear in the source: searches for closing delimiters
// are bounded and remember failures, and nesting is capped.

import { h } from './dom.js';
import { highlight } from './highlight.js';

const MAX_DEPTH = 6; // block quotes and lists nested deeper render as text
const WINDOW = 2000; // how far an inline search for a closer looks

const FENCE = /^ {0,3}(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?/;
const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)/;
const TABLE_SEP = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;

// safeURL returns the address a link may carry, or null.
export function safeURL(raw) {
  const s = String(raw || '').trim();
  if (!s || /[\u0000-\u001f\u007f\s]/.test(s)) return null;
  let u;
  try {
    u = new URL(s);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:' && u.protocol !== 'mailto:') return null;
  return u.href;
}

function link(href, children, title) {
  return h('a', { href, target: '_blank', rel: 'noopener noreferrer', class: 'md-link', title: title || null }, children);
}

// renderMarkdown returns the nodes of src. text(s) renders a run of plain
// text (mention tokens) and returns nodes or strings.
export function renderMarkdown(src, text = (s) => [s]) {
  const lines = String(src || '').replace(/\r\n?/g, '\n').split('\n');
  return blocks(lines, text, 0);
}

function isBlockStart(line) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line);
}

function blocks(lines, text, depth) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i++;
      continue;
    }
    let m = FENCE.exec(line);
    if (m) {
      const fence = m[1];
      const lang = m[2].toLowerCase();
      const body = [];
      i++;
      while (i < lines.length) {
        const close = lines[i].trim();
        if (close.length >= fence.length && close[0] === fence[0] && close === close[0].repeat(close.length)) {
          i++;
          break;
        }
        body.push(lines[i]);
        i++;
      }
      const code = body.join('\n');
      out.push(h('div', { class: 'md-code' },
        lang ? h('span', { class: 'md-lang', 'aria-hidden': 'true' }, lang) : null,
        h('pre', { tabindex: '0' }, h('code', { class: lang ? `lang-${lang.replace(/[^a-z0-9+#-]/g, '')}` : null }, highlight(lang, code)))));
      continue;
    }
    m = HEADING.exec(line);
    if (m) {
      const level = Math.min(m[1].length + 2, 6);
      out.push(h(`h${level}`, { class: 'md-h' }, inline(m[2] || '', text)));
      i++;
      continue;
    }
    if (RULE.test(line)) {
      out.push(h('hr'));
      i++;
      continue;
    }
    if (QUOTE.test(line) && depth < MAX_DEPTH) {
      const inner = [];
      while (i < lines.length && lines[i].trim() && (QUOTE.test(lines[i]) || !isBlockStart(lines[i]))) {
        inner.push(lines[i].replace(QUOTE, ''));
        i++;
      }
      out.push(h('blockquote', null, blocks(inner, text, depth + 1)));
      continue;
    }
    m = ITEM.exec(line);
    if (m && depth < MAX_DEPTH) {
      const ordered = /\d/.test(m[2]);
      const items = [];
      let tight = true;
      while (i < lines.length) {
        const im = ITEM.exec(lines[i]);
        if (!im || /\d/.test(im[2]) !== ordered) break;
        const indent = im[0].length || im[1].length + im[2].length + 1;
        const item = [lines[i].slice(im[0].length)];
        i++;
        while (i < lines.length) {
          const l = lines[i];
          if (!l.trim()) {
            // A blank line continues the item only if indented text follows.
            let j = i + 1;
            while (j < lines.length && !lines[j].trim()) j++;
            if (j < lines.length && /^\s+/.test(lines[j]) && lines[j].match(/^\s*/)[0].length >= Math.min(indent, 2)) {
              tight = false;
              for (; i < j; i++) item.push('');
              continue;
            }
            break;
          }
          const lead = l.match(/^\s*/)[0].length;
          if (lead >= Math.min(indent, 2)) item.push(l.slice(Math.min(lead, indent)));
          else if (ITEM.test(l) || isBlockStart(l)) break;
          else item.push(l); // a lazy continuation
          i++;
        }
        items.push(item);
        // Blank lines between items make the list loose.
        let j = i;
        while (j < lines.length && !lines[j].trim()) j++;
        if (j > i && j < lines.length && ITEM.test(lines[j])) {
          const nm = ITEM.exec(lines[j]);
          if (/\d/.test(nm[2]) === ordered) {
            tight = false;
            i = j;
          }
        }
      }
      const start = ordered ? parseInt(m[2], 10) : 1;
      out.push(h(ordered ? 'ol' : 'ul', { start: ordered && start !== 1 ? String(start) : null },
        items.map((item) => {
          const content = blocks(item, text, depth + 1);
          // A tight item's single paragraph shows without its margins.
          if (tight && content.length && content[0].tagName === 'P') content[0].classList.add('md-tight');
          return h('li', null, content);
        })));
      continue;
    }
    if (line.includes('|') && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes('-')) {
      const head = cells(line);
      const align = cells(lines[i + 1]).map((c) => (c.startsWith(':') && c.endsWith(':') ? 'center' : c.endsWith(':') ? 'right' : null));
      i += 2;
      const rows = [];
      while (i < lines.length && lines[i].trim() && lines[i].includes('|')) {
        rows.push(cells(lines[i]));
        i++;
      }
      const cell = (tag, c, k) => h(tag, { class: align[k] ? `md-${align[k]}` : null }, inline(c, text));
      out.push(h('div', { class: 'md-table', tabindex: '0' }, h('table', null,
        h('thead', null, h('tr', null, head.map((c, k) => cell('th', c, k)))),
        h('tbody', null, rows.map((r) => h('tr', null, head.map((_, k) => cell('td', r[k] || '', k))))))));
      continue;
    }
    // A paragraph: up to a blank line or the start of another block.
    const para = [line];
    i++;
    while (i < lines.length && lines[i].trim() && !isBlockStart(lines[i])) {
      para.push(lines[i]);
      i++;
    }
    const nodes = [];
    para.forEach((l, k) => {
      if (k) nodes.push(h('br'));
      nodes.push(...inline(l.replace(/^[ \t]+/, ''), text));
    });
    out.push(h('p', null, nodes));
  }
  return out;
}

function cells(row) {
  let s = row.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const out = [];
  let cur = '';
  for (let k = 0; k < s.length; k++) {
    if (s[k] === '\\' && s[k + 1] === '|') {
      cur += '|';
      k++;
    } else if (s[k] === '|') {
      out.push(cur.trim());
      cur = '';
    } else cur += s[k];
  }
  out.push(cur.trim());
  return out;
}

const PUNCT = /[!-/:-@[-`{-~]/;
const MENTION = /@\[\[[0-9a-fA-F-]{36}\]\]/y;
const AUTOLINK = /<((?:https?|mailto):[^\s<>]+)>/y;
const BARE = /(?:https?:\/\/|www\.)[^\s<>]+/y;
const LINK_TAIL = /\(\s*<?((?:[^\s()<>\\]|\\.|\((?:[^\s()<>\\]|\\.)*\))*)>?(?:\s+"([^"]*)")?\s*\)/y;
const WORDCHAR = /[\p{L}\p{N}]/u;

// inline renders a line's inline markup. inLink stops links nesting.
function inline(src, text, inLink = false, depth = 0) {
  const out = [];
  let buf = '';
  const flush = () => {
    if (buf) out.push(...text(buf));
    buf = '';
  };
  // none[key] is a position after which no closer of key exists: a
  // search that failed once is not repeated (that keeps it linear).
  const none = {};
  const find = (closer, from, key) => {
    if (none[key] != null && from >= none[key]) return -1;
    const limit = Math.min(src.length, from + WINDOW);
    let k = from;
    for (;;) {
      k = src.indexOf(closer, k);
      if (k < 0 || k >= limit) {
        if (limit === src.length) none[key] = from;
        return -1;
      }
      if (!key.startsWith('code') && /\s/.test(src[k - 1] || ' ')) {
        k++;
        continue;
      }
      return k;
    }
  };
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === '\\' && i + 1 < src.length && PUNCT.test(src[i + 1])) {
      buf += src[i + 1];
      i += 2;
      continue;
    }
    if (c === '@') {
      MENTION.lastIndex = i;
      const m = MENTION.exec(src);
      if (m) {
        buf += m[0];
        i += m[0].length;
        continue;
      }
    }
    if (c === '`') {
      let n = 1;
      while (src[i + n] === '`') n++;
      const ticks = '`'.repeat(n);
      let k = find(ticks, i + n, `code${n}`);
      // The closing run must be exactly as long.
      while (k >= 0 && src[k + n] === '`') k = find(ticks, k + n + 1, `code${n}`);
      if (k >= 0) {
        flush();
        let code = src.slice(i + n, k);
        if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ')) code = code.slice(1, -1);
        out.push(h('code', null, code));
        i = k + n;
        continue;
      }
      buf += ticks;
      i += n;
      continue;
    }
    if (!inLink && (c === '[' || (c === '!' && src[i + 1] === '['))) {
      const image = c === '!';
      const open = i + (image ? 1 : 0);
      const close = labelEnd(src, open);
      if (close > 0 && src[close + 1] === '(') {
        LINK_TAIL.lastIndex = close + 1;
        const m = LINK_TAIL.exec(src);
        if (m) {
          flush();
          const label = src.slice(open + 1, close);
          const href = safeURL(m[1].replace(/\\(.)/g, '$1'));
          const kids = depth < MAX_DEPTH ? inline(label, text, true, depth + 1) : text(label);
          if (image) {
            out.push(href ? link(href, [`image: ${label || href}`], m[2]) : h('span', { class: 'md-alt' }, label));
          } else {
            out.push(href ? link(href, kids, m[2]) : h('span', { class: 'md-unsafe', title: 'This link’s address is not a web address; it is not linked' }, kids));
          }
          i = LINK_TAIL.lastIndex;
          continue;
        }
      }
    }
    if (!inLink && c === '<') {
      AUTOLINK.lastIndex = i;
      const m = AUTOLINK.exec(src);
      const href = m && safeURL(m[1]);
      if (href) {
        flush();
        out.push(link(href, [m[1]]));
        i += m[0].length;
        continue;
      }
    }
    if (!inLink && (c === 'h' || c === 'w') && !WORDCHAR.test(src[i - 1] || ' ')) {
      BARE.lastIndex = i;
      const m = BARE.exec(src);
      if (m) {
        let url = m[0];
        // Trailing punctuation ends the sentence, not the URL; so does a
        // closing parenthesis the URL did not open.
        for (;;) {
          const last = url[url.length - 1];
          if (/[.,;:!?'"*_~]/.test(last)) url = url.slice(0, -1);
          else if (last === ')' && (url.match(/\(/g) || []).length < (url.match(/\)/g) || []).length) url = url.slice(0, -1);
          else break;
        }
        const href = safeURL(url.startsWith('www.') ? `https://${url}` : url);
        if (href && url.length > 8) {
          flush();
          out.push(link(href, [url]));
          i += url.length;
          continue;
        }
      }
    }
    if ((c === '*' || c === '_' || c === '~') && depth < MAX_DEPTH) {
      let n = 1;
      while (src[i + n] === c) n++;
      const prev = src[i - 1] || ' ';
      const next = src[i + n] || ' ';
      // _ inside a word (snake_case) is no emphasis; nor is a run
      // followed by a space; ~ needs two.
      const ok = !/\s/.test(next) && !(c === '_' && WORDCHAR.test(prev)) && (c !== '~' || n === 2);
      if (ok && n <= 3) {
        const run = c.repeat(n);
        let k = find(run, i + n, `${c}${n}`);
        while (k >= 0 && (src[k + n] === c || src[k - 1] === c || (c === '_' && WORDCHAR.test(src[k + n] || ' ')))) k = find(run, k + 1, `${c}${n}`);
        if (k > i + n) {
          flush();
          const kids = inline(src.slice(i + n, k), text, inLink, depth + 1);
          if (c === '~') out.push(h('del', null, kids));
          else if (n === 1) out.push(h('em', null, kids));
          else if (n === 2) out.push(h('strong', null, kids));
          else out.push(h('strong', null, h('em', null, kids)));
          i = k + n;
          continue;
        }
      }
      buf += c.repeat(n);
      i += n;
      continue;
    }
    buf += c;
    i++;
  }
  flush();
  return out;
}

// labelEnd returns the index of the ] that closes the [ at open, or -1.
function labelEnd(src, open) {
  let level = 0;
  const limit = Math.min(src.length, open + WINDOW);
  for (let k = open; k < limit; k++) {
    const c = src[k];
    if (c === '\\') k++;
    else if (c === '[') level++;
    else if (c === ']' && --level === 0) return k;
    else if (c === '`') return -1; // a code span inside a label: keep it simple
  }
  return -1;
}

// plainLength is how much text a message holds, for collapsing.
export function measure(src) {
  const s = String(src || '');
  let lines = 1;
  for (let k = s.indexOf('\n'); k >= 0 && lines <= 1000; k = s.indexOf('\n', k + 1)) lines++;
  return { chars: s.length, lines };
}

// preview cuts src to its first lines (at most maxLines and about
// maxChars), closing a code fence it cuts through.
export function preview(src, maxLines, maxChars) {
  const lines = String(src || '').split('\n');
  const out = [];
  let chars = 0;
  let fence = null;
  for (const l of lines) {
    if (out.length >= maxLines || chars + l.length > maxChars) {
      if (!out.length) out.push(l.slice(0, maxChars));
      break;
    }
    out.push(l);
    chars += l.length + 1;
    const m = FENCE.exec(l);
    if (m && !fence) fence = m[1][0].repeat(m[1].length);
    else if (fence && l.trim().startsWith(fence[0]) && l.trim() === fence[0].repeat(l.trim().length) && l.trim().length >= fence.length) fence = null;
  }
  if (fence) out.push(fence);
  return out.join('\n');
}
