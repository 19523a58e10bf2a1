// Small DOM helpers. Text always goes in as text nodes, never as HTML, so
// nothing a message contains can become markup.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false || c === '') continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

const sameDay = (a, b) => a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate();

// when formats a timestamp for a message: the time today, else the date too.
export function when(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const now = new Date();
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  if (sameDay(d, now)) return time;
  const y = new Date(now);
  y.setDate(now.getDate() - 1);
  if (sameDay(d, y)) return `Yesterday ${time}`;
  const opts = { day: 'numeric', month: 'short' };
  if (d.getFullYear() !== now.getFullYear()) opts.year = 'numeric';
  return `${d.toLocaleDateString([], opts)} ${time}`;
}

// full formats a timestamp with everything, for titles and tables.
export function full(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : d.toLocaleString();
}

// ago is a coarse relative time ("3 min ago").
export function ago(iso) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const s = Math.max(0, (Date.now() - t) / 1000);
  if (s < 45) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return when(iso);
}

export function duration(seconds) {
  const s = Math.floor(seconds);
  const d = Math.floor(s / 86400), hh = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
  if (d) return `${d} d ${hh} h`;
  if (hh) return `${hh} h ${m} min`;
  if (m) return `${m} min ${s % 60} s`;
  return `${s} s`;
}

export function timeEl(iso, fmt = when) {
  return h('time', { datetime: iso, title: full(iso) }, fmt(iso));
}

// announce reads a short text to screen readers through the live region.
export function announce(text) {
  const region = document.getElementById('announcer');
  if (!region) return;
  const p = h('p', null, text);
  region.append(p);
  while (region.childElementCount > 5) region.firstElementChild.remove();
}

export function initials(name) {
  const parts = String(name || '?').replace(/^@/, '').split(/[\s/._-]+/).filter(Boolean);
  return ((parts[0]?.[0] || '?') + (parts[1]?.[0] || '')).toUpperCase();
}

// throttle runs fn at most once every ms: a call schedules one run ms
// later unless one is scheduled already, so a steady stream of calls
// still runs it (a debounce would wait for a pause that may never come).
export function throttle(fn, ms) {
  let t = 0;
  return () => {
    if (t) return;
    t = setTimeout(() => {
      t = 0;
      fn();
    }, ms);
  };
}
