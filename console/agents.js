// agents.js — agents: the organization's list (GET /v1/agents, paged), and
// each agent's mounts, settings, runs with their files and presented files.
// The API does not list runs, so runs are opened by id (those opened in this
// tab are offered).
import { h, put, bytes, when, table, link, jsonBlock, button } from './dom.js';
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

const AGENT_PAGE = 200;

// #/agents: the organization's agents from GET /v1/agents, a page of
// AGENT_PAGE at a time (Next follows the API's cursor; Previous walks back
// the cursors followed), filtered by id prefix. A key bound to an agent may
// not list (403): it opens agents by id, as do the ids seen in this tab.
export async function list(ctx) {
  const box = h('div', { id: 'agentlist' });
  const filter = h('input', { id: 'agentprefix', type: 'search', spellcheck: 'false', placeholder: 'id starts with' });
  const trail = [];
  let prefix = '';
  async function show(cursor) {
    let page;
    try {
      const query = { limit: String(AGENT_PAGE) };
      if (prefix) query.prefix = prefix;
      if (cursor) query.cursor = cursor;
      page = await api.get('/v1/agents', { query, signal: ctx.signal });
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      if (e.status !== 403) throw e;
      const ids = recent('agents');
      put(box, h('p', { class: 'hint' }, 'This key may not list agents (' + e.message + '): open one by its id.'),
        ids.length ? h('ul', { class: 'plain' }, ids.map((id) => h('li', {}, link('/agents/' + encodeURIComponent(id), id)))) : null);
      return;
    }
    const rows = page.agents.map((a) => [link('/agents/' + encodeURIComponent(a.id), a.id),
      a.workspaceVolumeId ? link(folderRoute(a.workspaceVolumeId, ''), a.workspaceVolumeId) : '', when(a.createdAt)]);
    const nav = (cursor || page.cursor) ? h('nav', { class: 'pager', 'aria-label': 'Agent pages' },
      button('Previous', () => show(trail.pop()), { disabled: !cursor }),
      h('span', { class: 'facts' }, 'Page ' + (trail.length + 1)),
      button('Next', () => { trail.push(cursor); return show(page.cursor); }, { disabled: !page.cursor })) : null;
    put(box, rows.length ? table(['Agent', 'Workspace', 'Created'], rows, 'Agents')
      : h('p', {}, prefix ? 'No agent id starts with ' + JSON.stringify(prefix) + '.' : 'No agents yet. Make one with `coffer agent put` or PUT /v1/agents/{id}.'), nav);
  }
  const ff = h('form', { class: 'row', role: 'search', 'aria-label': 'Filter agents' },
    h('label', { for: 'agentprefix' }, 'Filter'), filter, h('button', { type: 'submit' }, 'Filter'));
  ff.addEventListener('submit', (ev) => { ev.preventDefault(); prefix = filter.value.trim(); trail.length = 0; show(''); });
  put(ctx.main, h('h1', {}, 'Agents'),
    openForm('agentid', 'Agent id', (id) => ctx.go('/agents/' + encodeURIComponent(id))), ff, box);
  await show('');
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
