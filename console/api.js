// api.js — every call to cofferd's API. The key lives in sessionStorage (this
// tab only, gone when it closes) and travels only in the Authorization header:
// never in a URL, never in a cookie.

const KEY = 'coffer.key';

export const key = () => sessionStorage.getItem(KEY);
export const setKey = (k) => sessionStorage.setItem(KEY, k);
export const forgetKey = () => sessionStorage.removeItem(KEY);

// An error answer of the API: status, type and message as the server said.
export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || ('HTTP ' + status));
    this.status = status;
    this.type = e.type || 'http_' + status;
    this.body = e;
  }
}

// Encodes a volume path for a URL, segment by segment (slashes kept).
export const encPath = (p) => p.split('/').map(encodeURIComponent).join('/');

// Calls the API. opts: json (a body to send as JSON), body (raw), headers,
// query ({name: value}, undefined/'' left out), signal, raw (answer the
// Response itself, after the status check). Throws ApiError on 4xx/5xx.
export async function call(method, path, opts = {}) {
  // X-Coffer-Client: the changes it makes record `by.via` "console"
  const headers = { Authorization: 'Bearer ' + key(), 'X-Coffer-Client': 'console',
    ...(opts.headers || {}) };
  let body = opts.body;
  if (opts.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.json);
  }
  let url = path;
  if (opts.query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.query))
      if (v !== undefined && v !== null && v !== '') q.append(k, String(v));
    if ([...q].length) url += (url.includes('?') ? '&' : '?') + q;
  }
  const r = await fetch(url, { method, headers, body, signal: opts.signal,
    cache: 'no-store', credentials: 'omit', redirect: 'error' });
  if (!r.ok) {
    let b = null;
    try { b = await r.json(); } catch (_) { /* not JSON */ }
    throw new ApiError(r.status, b);
  }
  if (opts.raw) return r;
  if (r.status === 204) return null;
  return r.json();
}

export const get = (p, o) => call('GET', p, o);
export const post = (p, json, o) => call('POST', p, { ...(o || {}), json });
export const patch = (p, json, o) => call('PATCH', p, { ...(o || {}), json });
export const del = (p, o) => call('DELETE', p, o);

// Every page of a cursor listing: `field` of each answer concatenated, at most
// `max` items. Answers {items, last (the last answer), more (cut at max)}.
export async function all(path, field, query, max = 50000, signal) {
  let items = [], cursor, last;
  do {
    last = await get(path, { query: { ...query, cursor }, signal });
    items = items.concat(last[field] || []);
    cursor = last.cursor;
  } while (cursor && items.length < max);
  return { items, last, more: Boolean(cursor) };
}
