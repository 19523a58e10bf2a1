// The control API, as the signed-in page reaches it: the session cookie
// goes along by itself, and every state-changing request carries the
// X-Jam-UI header the daemon requires of it.

export class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export async function api(method, path, { query, body } = {}) {
  let url = path;
  if (query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v != null && v !== '') q.set(k, String(v));
    const s = q.toString();
    if (s) url += `?${s}`;
  }
  const init = { method, headers: { Accept: 'application/json' }, credentials: 'same-origin', cache: 'no-store' };
  if (method !== 'GET' && method !== 'HEAD') init.headers['X-Jam-UI'] = '1';
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(url, init);
  } catch {
    throw new APIError(0, 'unavailable', 'The daemon does not answer; it may be stopped or restarting.');
  }
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    if (res.status === 401) window.dispatchEvent(new CustomEvent('jam:signedout'));
    const e = data && data.error;
    throw new APIError(res.status, (e && e.code) || 'internal', (e && e.message) || `${res.status} ${res.statusText}`);
  }
  return data;
}

export const get = (path, query) => api('GET', path, { query });
export const post = (path, body, query) => api('POST', path, { body, query });
export const enc = encodeURIComponent;
