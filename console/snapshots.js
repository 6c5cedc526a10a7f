// snapshots.js — snapshots (labels, pins, restore), the diff between two
// snapshots or a snapshot and now, and the changes feed followed live.
import { h, put, bytes, when, table, link, button, paged } from './dom.js';
import * as api from './api.js';
import { volHead, fileRoute, asText, mediaType } from './volumes.js';
import { diffView } from './diff.js';
import { who, revert } from './history.js';

const vpath = (vid) => '/v1/volumes/' + encodeURIComponent(vid);
const DIFF_MAX = 256 * 1024; // text files larger than this are not diffed
const AUTO_DIFFS = 20;       // diffs shown at once on a page; the others on request
const DIFF_PAGE = 200;       // rows of a diff's list shown at once
const CHANGED_PAGE = 50;     // changed files (each with its diff) shown at once

// "k:v, k2:v2" -> {k: 'v', k2: 'v2'}; throws naming a bad pair.
function parseLabels(s) {
  const out = {};
  for (const part of s.split(',').map((x) => x.trim()).filter(Boolean)) {
    const i = part.indexOf(':');
    if (i <= 0) throw new Error("label '" + part + "' is not key:value");
    out[part.slice(0, i).trim()] = part.slice(i + 1).trim();
  }
  return out;
}

const labelText = (l) => Object.entries(l || {}).map(([k, v]) => k + ':' + v).join(', ');

// #/v/ID/snapshots
export async function list(ctx, vid, after) {
  const vol = await api.get(vpath(vid), { signal: ctx.signal });
  const snaps = (await api.get(vpath(vid) + '/snapshots', { signal: ctx.signal })).snapshots;
  snaps.sort((a, b) => b.seq - a.seq || (b.createdAt > a.createdAt ? 1 : -1));
  const reload = () => list(ctx, vid);
  const previewBox = h('div', { id: 'restorebox', class: 'noticebox', 'aria-live': 'polite' }, after || null);
  const rows = snaps.map((s) => [h('code', {}, s.id), String(s.seq), String(s.files), bytes(s.bytes),
    labelText(s.labels), s.pinned ? 'pinned' : '', when(s.createdAt),
    h('span', { class: 'actions' },
      button(s.pinned ? 'Unpin' : 'Pin', async () => {
        try { await api.patch(vpath(vid) + '/snapshots/' + s.id, { pinned: !s.pinned }); await reload(); }
        catch (e) { ctx.fail(e); }
      }, { 'aria-label': (s.pinned ? 'Unpin ' : 'Pin ') + s.id }),
      link('/v/' + vid + '/diff?from=' + s.id + '&to=now', 'Diff with now'),
      button('Restore', () => restorePreview(ctx, vid, vol, s, previewBox).catch(ctx.fail),
        { class: 'danger', 'aria-label': 'Restore ' + s.id, 'aria-controls': 'restorebox' }))]);
  const opt = (sel) => [h('option', { value: 'now', selected: sel === 'now' }, 'now')]
    .concat(snaps.map((s, i) => h('option', { value: s.id, selected: sel === i }, s.id + ' (seq ' + s.seq + ')')));
  const from = h('select', { id: 'difffrom' }, opt(snaps.length > 1 ? 1 : 0));
  const to = h('select', { id: 'diffto' }, opt(snaps.length > 1 ? 0 : 'now'));
  const pick = h('form', { class: 'row', 'aria-label': 'Compare' },
    h('label', { for: 'difffrom' }, 'Compare'), from, h('label', { for: 'diffto' }, 'with'), to,
    h('button', { type: 'submit' }, 'Show diff'));
  pick.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.go('/v/' + vid + '/diff?from=' + encodeURIComponent(from.value) + '&to=' + encodeURIComponent(to.value));
  });
  const labels = h('input', { id: 'snaplabels', type: 'text', placeholder: 'key:value, …', spellcheck: 'false' });
  const pinned = h('input', { id: 'snappin', type: 'checkbox' });
  const make = h('form', { class: 'row', 'aria-label': 'New snapshot' },
    h('label', { for: 'snaplabels' }, 'Labels'), labels,
    h('label', { for: 'snappin' }, pinned, ' pinned'),
    h('button', { type: 'submit' }, 'Take a snapshot'));
  make.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const s = await api.post(vpath(vid) + '/snapshots', { labels: parseLabels(labels.value), pinned: pinned.checked });
      await reload();
      ctx.say('Snapshot ' + s.id + ' taken at seq ' + s.seq + (s.dropped ? '; dropped the oldest unpinned, ' + s.dropped : '') + '.');
    } catch (e) { ctx.fail(e); }
  });
  put(ctx.main, volHead(vol, 'Snapshots'), h('h1', {}, 'Snapshots'), previewBox, make,
    snaps.length ? [pick, table(['Id', 'Seq', 'Files', 'Bytes', 'Labels', 'Pinned', 'Taken', ''], rows, 'Snapshots')]
      : h('p', {}, 'No snapshots yet.'));
}

// Every file of the volume at snapshot `side` ('now' = the volume as it is).
async function sideFiles(vid, side, signal) {
  const query = side === 'now' ? {} : { snapshot: side };
  const { items, last } = await api.all(vpath(vid) + '/files', 'files', query, 100000, signal);
  return { files: new Map(items.map((f) => [f.path, f])), seq: last.seq };
}

// The text of `path` at `side`, or null when it is not text or too large.
async function sideText(vid, side, f, signal) {
  if (!f || f.size > DIFF_MAX || /^(image|audio|video|font)\//.test(mediaType(f.contentType))) return null;
  const r = await api.call('GET', vpath(vid) + '/files/' + api.encPath(f.path),
    { query: side === 'now' ? {} : { snapshot: side }, raw: true, signal });
  return asText(await r.arrayBuffer());
}

// What restoring snapshot `snap` would do now: the files it writes (absent now
// or different) and the files it removes (absent from it), from both listings.
async function restoreCounts(vid, snap, signal) {
  const [S, N] = await Promise.all([sideFiles(vid, snap, signal), sideFiles(vid, 'now', signal)]);
  let write = 0, remove = 0;
  for (const [p, f] of S.files) {
    const o = N.files.get(p);
    if (!o || o.sha256 !== f.sha256 || o.contentType !== f.contentType) write++;
  }
  for (const p of N.files.keys()) if (!S.files.has(p)) remove++;
  return { write, remove, seq: N.seq };
}

// The preview of a restore in `box`: the counts, then Restore (a pinned
// snapshot labelled before-restore first) or Cancel.
async function restorePreview(ctx, vid, vol, s, box) {
  put(box, h('p', { class: 'hint' }, 'Working out what restoring ' + s.id + ' would change…'));
  const c = await restoreCounts(vid, s.id, ctx.signal);
  const go = button('Restore now', async () => {
    try {
      const before = await api.post(vpath(vid) + '/snapshots',
        { pinned: true, labels: { 'before-restore': s.id } });
      const r = await api.post(vpath(vid) + '/restore', { snapshot: s.id });
      await list(ctx, vid, undoNotice(ctx, vid, s, r, before));
      ctx.say('Restored ' + r.snapshot + ' as seq ' + r.seq + ': ' + r.written + ' written, ' + r.removed + ' removed.');
    } catch (e) { ctx.fail(e); }
  }, { class: 'danger', id: 'restorego' });
  put(box, h('section', { class: 'notice preview', 'aria-labelledby': 'restoreh' },
    h('h2', { id: 'restoreh' }, 'Restore ' + (vol.name || vid) + ' to snapshot ' + s.id + ' (seq ' + s.seq + ')?'),
    h('p', {}, 'As of seq ' + c.seq + ' this writes ', h('strong', { class: 'towrite' }, String(c.write)),
      c.write === 1 ? ' file' : ' files', ' and removes ', h('strong', { class: 'toremove' }, String(c.remove)),
      c.remove === 1 ? ' file' : ' files', ', as one new change. ',
      link('/v/' + vid + '/diff?from=' + s.id + '&to=now', 'See the diff')),
    h('p', { class: 'hint' }, 'A pinned snapshot labelled before-restore is taken first, so the restore can be undone.'),
    h('p', { class: 'actions' }, go, button('Cancel', () => { put(box); }))));
  go.focus();
}

// After a restore: what it did, and Undo (restores the before-restore snapshot).
function undoNotice(ctx, vid, s, r, before) {
  const box = h('div', { class: 'notice undo', role: 'status' });
  put(box, h('p', {}, 'Restored ' + s.id + ' as seq ' + r.seq + ': ' + r.written + ' written, ' + r.removed +
    ' removed. The volume as it was is snapshot ' + before.id + ' (pinned, before-restore). '),
  button('Undo', async () => {
    try {
      const u = await api.post(vpath(vid) + '/restore', { snapshot: before.id });
      const done = h('div', { class: 'notice', role: 'status' }, h('p', { class: 'undone' },
        'Undone: restored ' + before.id + ' as seq ' + u.seq + ': ' + u.written + ' written, ' + u.removed + ' removed.'));
      await list(ctx, vid, done);
    } catch (e) { ctx.fail(e); }
  }, { id: 'undo' }));
  return box;
}

// #/v/ID/diff?from=S&to=S|now&filter=F: added, removed and changed files (each
// list paged, filtered by a part of the path), and text diffs.
export async function diff(ctx, vid, from, to) {
  if (!from) throw new Error('choose a snapshot to compare (from=)');
  const filter = (ctx.q && ctx.q.get('filter')) || '';
  const vol = await api.get(vpath(vid), { signal: ctx.signal });
  const [A, B] = await Promise.all([sideFiles(vid, from, ctx.signal), sideFiles(vid, to, ctx.signal)]);
  const keep = (p) => !filter || p.includes(filter);
  const added = [], removed = [], changed = [];
  for (const [p, f] of B.files) {
    if (!keep(p)) continue;
    const o = A.files.get(p);
    if (!o) added.push(f); else if (o.sha256 !== f.sha256) changed.push([o, f]);
  }
  for (const [p, f] of A.files) if (keep(p) && !B.files.has(p)) removed.push(f);
  const name = (s, seq) => (s === 'now' ? 'now' : s) + ' (seq ' + seq + ')';
  const fileLink = (f, side) => link(fileRoute(vid, f.path, side === 'now' ? null : side), f.path);
  const section = (title, id, items, cells) => h('section', { 'aria-labelledby': id },
    h('h2', { id }, title + ' (' + items.length + ')'),
    items.length ? paged(items, DIFF_PAGE, (rows) => table(['Path', 'Size', 'Version'], rows.map(cells), title), title)
      : h('p', { class: 'hint' }, 'None.'));
  const show = async (o, f, box) => {
    const [ta, tb] = await Promise.all([sideText(vid, from, o, ctx.signal), sideText(vid, to, f, ctx.signal)]);
    put(box, ta === null || tb === null ? h('p', { class: 'hint' }, 'Not text (or over ' + bytes(DIFF_MAX) + '): ' +
      bytes(o.size) + ' → ' + bytes(f.size) + '.') : diffView(ta, tb, 'Diff of ' + f.path));
  };
  // a page of changed files: the first AUTO_DIFFS diffed at once, the others on request
  const changedPage = (slice) => {
    const list = h('div', { class: 'changed' });
    slice.forEach(([o, f], k) => {
      const box = h('div', { class: 'diffbox' });
      list.append(h('article', { class: 'filediff' },
        h('h3', {}, fileLink(f, to), ' ', h('span', { class: 'facts' }, 'v' + o.version + ' → v' + f.version)), box));
      if (k < AUTO_DIFFS) show(o, f, box).catch(ctx.fail);
      else box.append(button('Show the diff', () => show(o, f, box).catch(ctx.fail)));
    });
    return list;
  };
  const fin = h('input', { type: 'search', id: 'difffilter', value: filter, placeholder: 'part of a path',
    spellcheck: 'false' });
  const route = (f) => '/v/' + vid + '/diff?from=' + encodeURIComponent(from) + '&to=' + encodeURIComponent(to) +
    (f ? '&filter=' + encodeURIComponent(f) : '');
  const fform = h('form', { class: 'row', role: 'search', 'aria-label': 'Filter' },
    h('label', { for: 'difffilter' }, 'Paths containing'), fin, h('button', { type: 'submit' }, 'Filter'),
    filter ? link(route(''), 'Clear') : null);
  fform.addEventListener('submit', (ev) => { ev.preventDefault(); ctx.go(route(fin.value)); });
  put(ctx.main, volHead(vol, 'Snapshots'),
    h('h1', {}, 'Diff: ' + name(from, A.seq) + ' → ' + name(to, B.seq)), fform,
    filter ? h('p', { class: 'facts' }, "Only paths containing '" + filter + "'.") : null,
    section('Added', 'added', added, (f) => [fileLink(f, to), bytes(f.size), 'v' + f.version]),
    section('Removed', 'removed', removed, (f) => [fileLink(f, from), bytes(f.size), 'v' + f.version]),
    h('section', { 'aria-labelledby': 'changedh' }, h('h2', { id: 'changedh' }, 'Changed (' + changed.length + ')'),
      changed.length ? paged(changed, CHANGED_PAGE, changedPage, 'Changed') : h('p', { class: 'hint' }, 'None.')));
}

// The changes feed's filters on `by` (its query parameters): [param, label].
const FILTERS = [['runId', 'Run id'], ['callId', 'Call id'], ['agent', 'Agent'], ['keyId', 'Key id']];

// One change as a table row: who made it, and its reverts (of its run, of its seq).
const changeRow = (ctx, vid, c, box) => {
  const rev = (target, text, label) => button(text, () => {
    box.scrollIntoView({ block: 'nearest' });
    return revert(ctx, vid, target, box).catch(ctx.fail);
  }, { class: 'danger', 'aria-label': label, 'aria-controls': 'revertbox' });
  return [String(c.seq), c.op, c.op === 'remove' ? c.path : link(fileRoute(vid, c.path), c.path),
    c.version === undefined ? '' : 'v' + c.version, bytes(c.size), who(c.by),
    h('span', { class: 'actions' },
      c.by && c.by.runId ? rev({ runId: c.by.runId }, 'Revert run', 'Revert run ' + c.by.runId) : null,
      rev({ seq: c.seq }, 'Revert seq', 'Revert seq ' + c.seq))];
};

// #/v/ID/changes[?runId=&callId=&agent=&keyId=]: the last changes (filtered: every
// kept change that matches), then new ones as they land (long-poll).
export async function changes(ctx, vid) {
  const vol = await api.get(vpath(vid), { signal: ctx.signal });
  const filter = Object.fromEntries(FILTERS.map(([k]) => [k, (ctx.q && ctx.q.get(k)) || '']).filter(([, v]) => v));
  const filtered = Object.keys(filter).length > 0;
  const tbody = h('tbody', {});
  const box = h('div', { id: 'revertbox', class: 'noticebox', 'aria-live': 'polite' });
  const state = h('p', { class: 'facts live', 'aria-live': 'polite' }, 'Following live from seq ' + vol.seq + '.');
  const inputs = FILTERS.map(([k, label]) => h('span', { class: 'pair' }, h('label', { for: 'f-' + k }, label),
    h('input', { type: 'search', id: 'f-' + k, name: k, value: filter[k] || '', spellcheck: 'false', class: 'narrow' })));
  const route = (f) => '/v/' + encodeURIComponent(vid) + '/changes' +
    (Object.keys(f).length ? '?' + new URLSearchParams(f) : '');
  const fform = h('form', { class: 'row', role: 'search', 'aria-label': 'Filter changes' }, inputs,
    h('button', { type: 'submit' }, 'Filter'), filtered ? link(route({}), 'Clear') : null);
  fform.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.go(route(Object.fromEntries(FILTERS.map(([k]) => [k, fform.elements[k].value.trim()]).filter(([, v]) => v))));
  });
  put(ctx.main, volHead(vol, 'Changes'), h('h1', {}, 'Changes'), fform,
    filtered ? h('p', { class: 'facts filtered' }, 'Only changes whose who has ' +
      Object.entries(filter).map(([k, v]) => k + ' ' + v).join(', ') + '.') : null,
    box, state,
    h('div', { class: 'scroll' }, h('table', { 'aria-label': 'Changes', class: 'changes' },
      h('thead', {}, h('tr', {}, ['Seq', 'Op', 'Path', 'Version', 'Size', 'Who', ''].map((c) => h('th', { scope: 'col' }, c)))),
      tbody)));
  const addRows = (list) => {
    for (const c of list) tbody.prepend(h('tr', {}, changeRow(ctx, vid, c, box).map((x) => h('td', {}, x))));
    while (tbody.rows.length > 1000) tbody.lastChild.remove();
  };
  // filtered: from the oldest kept change (a 410 moves to it), so a whole run shows
  const since = filtered ? 0 : Math.max(0, vol.seq - 50);
  follow(ctx, vid, since, addRows, state, filter); // runs until the page goes
}

// The long-poll loop: `wait=25` until the page's signal aborts; errors retry.
async function follow(ctx, vid, since, addRows, state, filter) {
  let wait = 0; // the first call takes the recent history at once
  while (!ctx.signal.aborted) {
    try {
      const r = await api.get(vpath(vid) + '/changes', { query: { ...filter, since, wait }, signal: ctx.signal });
      addRows(r.changes);
      since = r.seq;
      wait = r.more ? 0 : 25;
      state.textContent = 'Following live: up to seq ' + since + ' (' + new Date().toLocaleTimeString() + ').';
    } catch (e) {
      if (ctx.signal.aborted) return;
      if (e.status === 410 && e.body && e.body.oldest !== undefined) { since = e.body.oldest; continue; }
      state.textContent = 'The feed stopped: ' + e.message + '; retrying in 5 s.';
      await new Promise((res) => setTimeout(res, 5000));
    }
  }
}
