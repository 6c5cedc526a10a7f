// app.js — the console's shell: sign-in, the hash router, the status line.
// Routes (the key is never part of one):
//   #/volumes                        volumes
//   #/v/ID/files?prefix=P            a folder       #/v/ID/file?path=P&snapshot=S  a file
//   #/v/ID/snapshots                 snapshots      #/v/ID/diff?from=S&to=S|now    a diff
//   #/v/ID/changes?runId=&callId=&agent=&keyId=   the changes feed (filtered), followed live
//   #/v/ID/file?path=P&seq=N         a file as it was at seq N (a version of its history)
//   #/v/ID/history?path=P            every version of a file
//   #/v/ID/merge?from=V              merge another volume (a fork, a parent) into this one
//   #/agents  #/agents/ID            agents         #/relay  #/relay/UID  relay sessions
import { h, put } from './dom.js';
import * as api from './api.js';
import * as volumes from './volumes.js';
import * as snapshots from './snapshots.js';
import * as agents from './agents.js';
import * as relay from './relay.js';
import * as history from './history.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const statusEl = document.getElementById('status');
let current = null; // AbortController of the page shown: long-polls stop when it goes

// Shows a message in the status line; kind 'error' or 'ok'.
export function say(text, kind) {
  put(statusEl, text ? h('p', { class: kind || 'ok' }, text) : null);
}

// Shows an API error (or any error) as the server worded it.
export function fail(e) {
  if (e && e.name === 'AbortError') return;
  if (e instanceof api.ApiError && e.status === 401) {
    api.forgetKey();
    say('The key was refused: 401 ' + e.type + ': ' + e.message, 'error');
    route();
    return;
  }
  const what = e instanceof api.ApiError ? e.status + ' ' + e.type + ': ' : '';
  say(what + (e && e.message ? e.message : String(e)), 'error');
}

function signIn() {
  nav.hidden = true;
  const input = h('input', { id: 'key', type: 'password', autocomplete: 'off',
    spellcheck: 'false', required: true, 'aria-describedby': 'keyhelp' });
  const form = h('form', { class: 'signin' },
    h('h1', {}, 'Sign in'),
    h('label', { for: 'key' }, 'API key'), input,
    h('p', { id: 'keyhelp', class: 'hint' },
      'The admin key is in DATA/admin.key. It is kept in this tab only (sessionStorage) ' +
      'and sent to cofferd as the Authorization header.'),
    h('button', { type: 'submit' }, 'Sign in'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    api.setKey(input.value.trim());
    try {
      await api.get('/v1/relay/sessions'); // any valid key may call it
      say('');
      if (!location.hash || location.hash === '#/') location.hash = '#/volumes';
      else route();
    } catch (e) {
      api.forgetKey();
      fail(e);
    }
  });
  put(main, form);
  input.focus();
}

// Parses location.hash into {parts, q}.
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const qi = raw.indexOf('?');
  const path = qi < 0 ? raw : raw.slice(0, qi);
  const q = new URLSearchParams(qi < 0 ? '' : raw.slice(qi + 1));
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), q };
}

// Renders the page the hash names.
export async function route() {
  if (current) current.abort();
  current = new AbortController();
  if (!api.key()) return signIn();
  nav.hidden = false;
  const { parts, q } = parseHash();
  const ctx = { main, signal: current.signal, q, say, fail, go: (r) => { location.hash = r; } };
  for (const a of nav.querySelectorAll('a'))
    a.classList.toggle('here', location.hash.startsWith(a.getAttribute('href')) ||
      (a.getAttribute('href') === '#/volumes' && parts[0] === 'v'));
  put(main, h('p', { class: 'hint' }, 'Loading…'));
  try {
    const [a, b, c] = parts;
    if (a === 'v' && b && c === 'files') await volumes.folder(ctx, b, q.get('prefix') || '');
    else if (a === 'v' && b && c === 'file') await volumes.file(ctx, b, q.get('path') || '', q.get('snapshot'), q.get('seq'));
    else if (a === 'v' && b && c === 'snapshots') await snapshots.list(ctx, b);
    else if (a === 'v' && b && c === 'diff') await snapshots.diff(ctx, b, q.get('from'), q.get('to') || 'now');
    else if (a === 'v' && b && c === 'changes') await snapshots.changes(ctx, b);
    else if (a === 'v' && b && c === 'history') await history.file(ctx, b, q.get('path') || '');
    else if (a === 'v' && b && c === 'merge') await history.merge(ctx, b, q.get('from') || '');
    else if (a === 'agents' && b) await agents.one(ctx, b);
    else if (a === 'agents') await agents.list(ctx);
    else if (a === 'relay' && b) await relay.one(ctx, b);
    else if (a === 'relay') await relay.list(ctx);
    else await volumes.list(ctx);
  } catch (e) {
    if (e && e.name === 'AbortError') return;
    put(main, h('h1', {}, 'Could not load this page'));
    fail(e);
  }
  const h1 = main.querySelector('h1');
  if (h1 && document.activeElement === document.body) main.focus({ preventScroll: true });
}

document.getElementById('signout').addEventListener('click', () => {
  api.forgetKey();
  say('Signed out.');
  route();
});
window.addEventListener('hashchange', () => { say(''); route(); });
route();
