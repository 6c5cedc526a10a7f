// agents.js — agents: mounts, settings, runs with their files and presented
// files. The API lists neither agents nor runs, so the console opens them by
// id: agents seen in relay sessions and those opened in this tab are offered.
import { h, put, bytes, when, table, link, jsonBlock } from './dom.js';
import * as api from './api.js';
import { folderRoute } from './volumes.js';

const RECENT = 'coffer.recent';

// The ids opened in this tab, per kind ('agents', 'runs:ID'), newest first.
function recent(kind, add) {
  const all = JSON.parse(sessionStorage.getItem(RECENT) || '{}');
  let l = all[kind] || [];
  if (add) { l = [add].concat(l.filter((x) => x !== add)).slice(0, 20); all[kind] = l; }
  sessionStorage.setItem(RECENT, JSON.stringify(all));
  return l;
}

// A form asking for an id; `go(id)` opens it.
function openForm(id, label, go) {
  const input = h('input', { id, type: 'text', required: true, spellcheck: 'false' });
  const f = h('form', { class: 'row', 'aria-label': label }, h('label', { for: id }, label), input,
    h('button', { type: 'submit' }, 'Open'));
  f.addEventListener('submit', (ev) => { ev.preventDefault(); if (input.value.trim()) go(input.value.trim()); });
  return f;
}

// #/agents
export async function list(ctx) {
  let seen = [];
  try {
    const s = await api.get('/v1/relay/sessions', { query: { all: 'true' }, signal: ctx.signal });
    seen = s.sessions.map((x) => x.agent);
  } catch (e) { if (e.name === 'AbortError') throw e; }
  const ids = [...new Set(recent('agents').concat(seen))];
  put(ctx.main, h('h1', {}, 'Agents'),
    openForm('agentid', 'Agent id', (id) => ctx.go('/agents/' + encodeURIComponent(id))),
    ids.length ? [h('h2', {}, 'Known in this tab and from relay sessions'),
      h('ul', { class: 'plain' }, ids.map((id) => h('li', {}, link('/agents/' + encodeURIComponent(id), id))))]
      : h('p', { class: 'hint' }, 'The API has no list of agents: open one by its id.'));
}

// The mounts of an agent as a table.
function mountsTable(mounts) {
  return table(['Path', 'What', 'Mode', 'Subpath', 'Notify'], (mounts || []).map((m) => [
    h('code', {}, m.path || '/workspace'),
    m.volumeId ? link(folderRoute(m.volumeId, ''), m.volumeId) : m.workspace === false ? 'no workspace' : 'workspace',
    m.mode || (m.volumeId ? 'rw' : ''), m.subpath || '', m.notify ? 'yes' : '']), 'Mounts');
}

// One run: the files it wrote and those it presented.
async function showRun(ctx, aid, runId, box) {
  const r = await api.get('/v1/agents/' + encodeURIComponent(aid) + '/runs/' + encodeURIComponent(runId), { signal: ctx.signal });
  recent('runs:' + aid, runId);
  const presented = (r.presented || []).map((p) => {
    let a = p.url;
    try {
      const u = new URL(p.url, location.href);
      // a signed link of this server: served sandboxed, safe to open
      a = u.pathname.startsWith('/l/') ? h('a', { href: u.pathname + u.search, target: '_blank', rel: 'noopener noreferrer' }, 'open') : p.url;
    } catch (_) { /* shown as text */ }
    return [h('code', {}, p.path), p.caption || '', a];
  });
  put(box, h('h3', {}, 'Run ', h('code', {}, runId)),
    h('h4', {}, 'Files written (' + (r.files || []).length + ')'),
    (r.files || []).length ? table(['Path', 'Version', 'Size', 'Type'], r.files.map((f) =>
      [h('code', {}, f.path), 'v' + f.version, bytes(f.size), f.contentType || '']), 'Files written')
      : h('p', { class: 'hint' }, 'None (an unknown run is empty).'),
    h('h4', {}, 'Presented (' + presented.length + ')'),
    presented.length ? table(['Path', 'Caption', 'Link'], presented, 'Presented files') : h('p', { class: 'hint' }, 'None.'));
}

// #/agents/ID
export async function one(ctx, aid) {
  const a = await api.get('/v1/agents/' + encodeURIComponent(aid), { signal: ctx.signal });
  recent('agents', aid);
  const settings = {};
  for (const k of ['fileTools', 'exclude', 'defaultExclusions', 'sandbox', 'output', 'relay'])
    if (a[k] !== undefined) settings[k] = a[k];
  const runBox = h('div', { class: 'run' });
  const runs = recent('runs:' + aid);
  put(ctx.main, h('p', { class: 'crumbs' }, link('/agents', 'Agents'), ' / ', aid),
    h('h1', {}, 'Agent ' + aid),
    h('p', { class: 'facts' }, 'Created ' + when(a.createdAt)),
    a.workspaceVolumeId ? h('p', {}, 'Workspace: ', link(folderRoute(a.workspaceVolumeId, ''), a.workspaceVolumeId)) : null,
    h('h2', {}, 'Mounts'), mountsTable(a.mounts),
    h('h2', {}, 'Settings'), jsonBlock(settings),
    h('h2', {}, 'Runs'),
    openForm('runid', 'Run id (X-Run-Id)', (id) => showRun(ctx, aid, id, runBox).catch(ctx.fail)),
    runs.length ? h('ul', { class: 'plain' }, runs.map((id) => h('li', {},
      h('button', { type: 'button', class: 'linklike', on: { click: () => showRun(ctx, aid, id, runBox).catch(ctx.fail) } }, id))))
      : null,
    runBox);
}
