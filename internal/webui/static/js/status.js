// The status page: the daemon, its link to Band or the embedded hub, the
// store, and this page's event stream.

import { h, full, duration } from './dom.js';
import { get } from './api.js';
import { feed } from './events.js';
import { describe } from './errors.js';

const kv = (pairs) => h('dl', { class: 'kv' }, pairs.filter(Boolean).map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));

export function mountStatus(main) {
  const cards = h('div', { class: 'cards' });
  const err = h('div', { role: 'alert' });
  main.replaceChildren(h('div', { class: 'page' },
    h('header', null, h('h1', { id: 'page-title', tabindex: '-1' }, 'Status')),
    err, cards));

  let st = null;
  function render() {
    if (!st) return;
    const band = st.band || {};
    const prev = st.previous_run;
    const check = st.store.check || {};
    const storeBad = check.state === 'failed' || !!st.store.error;
    const streamState = { live: 'live', reconnecting: 'reconnecting…', connecting: 'connecting…' }[feed.state] || feed.state;
    cards.replaceChildren(
      h('section', { class: 'card', 'aria-labelledby': 'st-daemon' },
        h('h2', { id: 'st-daemon' }, h('span', { class: 'chip', dataset: { status: st.state === 'running' ? 'online' : 'failed' } }, st.state), 'Daemon'),
        kv([
          ['Version', st.version],
          ['PID', String(st.pid)],
          ['Up for', duration(st.uptime_seconds)],
          ['Started', full(st.started_at)],
          ['Data directory', h('code', null, st.data_dir)],
          ['Control socket', h('code', null, st.socket)],
          st.http_addr && ['HTTP', h('code', null, `http://${st.http_addr}`)],
          st.workspace && ['Workspace', `${st.workspace.name} (${st.workspace.id})`],
          prev && ['Previous run', prev.clean ? `stopped cleanly ${full(prev.stopped_at)}` : h('span', { class: 'bad' }, `pid ${prev.pid} ended without a clean stop`)],
        ])),
      h('section', { class: 'card', 'aria-labelledby': 'st-band' },
        h('h2', { id: 'st-band' }, h('span', { class: 'chip', dataset: { status: band.error ? 'failed' : 'online' } }, band.error ? 'error' : 'ok'), band.mode === 'embedded' ? 'Hub (embedded)' : 'Band'),
        kv([
          ['Mode', band.mode],
          ['URL', h('code', null, band.url || '')],
          band.handle && ['Signed in as', `@${band.handle}`],
          band.user_id && ['User id', h('code', null, band.user_id)],
          band.owner_key_file && ['Owner key', h('code', null, band.owner_key_file)],
          band.error && ['Last error', h('span', { class: 'bad' }, band.error)],
        ])),
      h('section', { class: 'card', 'aria-labelledby': 'st-store' },
        h('h2', { id: 'st-store' }, h('span', { class: 'chip', dataset: { status: storeBad ? 'failed' : 'online' } }, storeBad ? 'error' : 'ok'), 'Store'),
        kv([
          ['Driver', st.store.driver],
          ['Location', h('code', null, st.store.location)],
          ['Schema version', String(st.store.schema_version)],
          ['Check at start', check.state === 'failed' ? h('span', { class: 'bad', dataset: { check: 'failed' } }, `failed: ${check.detail}`)
            : h('span', { dataset: { check: check.state || '' } }, check.state === 'ok' ? `ok (${(check.seconds || 0).toFixed(1)} s)` : (check.state || '—'))],
          st.store.error && ['Last error', h('span', { class: 'bad' }, st.store.error)],
        ])),
      h('section', { class: 'card', 'aria-labelledby': 'st-stream' },
        h('h2', { id: 'st-stream' }, h('span', { class: 'chip', dataset: { status: feed.state === 'live' ? 'online' : 'connecting' } }, streamState), 'Event stream'),
        kv([
          ['Last event', feed.last == null ? '—' : `#${feed.last}`],
          ['Transport', 'Server-Sent Events, resumed from the last event after a loss'],
        ])));
  }

  async function load() {
    try {
      st = await get('/v1/status');
      err.replaceChildren();
      render();
    } catch (e) {
      err.replaceChildren(h('p', { class: 'error-box' }, describe(e, 'The status cannot be read')));
    }
  }
  const tick = setInterval(load, 5000);
  const offs = [feed.on('state', () => { render(); if (feed.state === 'live') load(); })];
  load();
  return { destroy() { clearInterval(tick); offs.forEach((f) => f()); } };
}
