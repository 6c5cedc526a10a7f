// snapshots.js — snapshots (labels, pins, restore), the diff between two
// snapshots or a snapshot and now, and the changes feed followed live.
import { h, put, bytes, when, table, link, button } from './dom.js';
import * as api from './api.js';
import { volHead, fileRoute, asText, mediaType } from './volumes.js';
import { diffView } from './diff.js';

const vpath = (vid) => '/v1/volumes/' + encodeURIComponent(vid);
const DIFF_MAX = 256 * 1024; // text files larger than this are not diffed
const AUTO_DIFFS = 20;       // diffs shown at once; the others on request

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
export async function list(ctx, vid) {
  const vol = await api.get(vpath(vid), { signal: ctx.signal });
  const snaps = (await api.get(vpath(vid) + '/snapshots', { signal: ctx.signal })).snapshots;
  snaps.sort((a, b) => b.seq - a.seq || (b.createdAt > a.createdAt ? 1 : -1));
  const reload = () => list(ctx, vid);
  const rows = snaps.map((s) => [h('code', {}, s.id), String(s.seq), String(s.files), bytes(s.bytes),
    labelText(s.labels), s.pinned ? 'pinned' : '', when(s.createdAt),
    h('span', { class: 'actions' },
      button(s.pinned ? 'Unpin' : 'Pin', async () => {
        try { await api.patch(vpath(vid) + '/snapshots/' + s.id, { pinned: !s.pinned }); await reload(); }
        catch (e) { ctx.fail(e); }
      }, { 'aria-label': (s.pinned ? 'Unpin ' : 'Pin ') + s.id }),
      link('/v/' + vid + '/diff?from=' + s.id + '&to=now', 'Diff with now'),
      button('Restore', async () => {
        if (!window.confirm('Make volume ' + (vol.name || vid) + ' as snapshot ' + s.id + ' (seq ' + s.seq +
          ') had it? This is one new change; files written since are replaced or removed.')) return;
        try {
          const r = await api.post(vpath(vid) + '/restore', { snapshot: s.id });
          await reload();
          ctx.say('Restored ' + r.snapshot + ' as seq ' + r.seq + ': ' + r.written + ' written, ' + r.removed + ' removed.');
        } catch (e) { ctx.fail(e); }
      }, { class: 'danger', 'aria-label': 'Restore ' + s.id }))]);
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
  put(ctx.main, volHead(vol, 'Snapshots'), h('h1', {}, 'Snapshots'), make,
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

// #/v/ID/diff?from=S&to=S|now: added, removed and changed files, and text diffs.
export async function diff(ctx, vid, from, to) {
  if (!from) throw new Error('choose a snapshot to compare (from=)');
  const vol = await api.get(vpath(vid), { signal: ctx.signal });
  const [A, B] = await Promise.all([sideFiles(vid, from, ctx.signal), sideFiles(vid, to, ctx.signal)]);
  const added = [], removed = [], changed = [];
  for (const [p, f] of B.files) {
    const o = A.files.get(p);
    if (!o) added.push(f); else if (o.sha256 !== f.sha256) changed.push([o, f]);
  }
  for (const [p, f] of A.files) if (!B.files.has(p)) removed.push(f);
  const name = (s, seq) => (s === 'now' ? 'now' : s) + ' (seq ' + seq + ')';
  const fileLink = (f, side) => link(fileRoute(vid, f.path, side === 'now' ? null : side), f.path);
  const section = (title, id, items, cells) => h('section', { 'aria-labelledby': id },
    h('h2', { id }, title + ' (' + items.length + ')'),
    items.length ? table(['Path', 'Size', 'Version'], items.map(cells), title) : h('p', { class: 'hint' }, 'None.'));
  const changedList = h('div', { class: 'changed' });
  put(ctx.main, volHead(vol, 'Snapshots'),
    h('h1', {}, 'Diff: ' + name(from, A.seq) + ' → ' + name(to, B.seq)),
    section('Added', 'added', added, (f) => [fileLink(f, to), bytes(f.size), 'v' + f.version]),
    section('Removed', 'removed', removed, (f) => [fileLink(f, from), bytes(f.size), 'v' + f.version]),
    h('section', { 'aria-labelledby': 'changedh' }, h('h2', { id: 'changedh' }, 'Changed (' + changed.length + ')'),
      changed.length ? changedList : h('p', { class: 'hint' }, 'None.')));
  const show = async (o, f, box) => {
    const [ta, tb] = await Promise.all([sideText(vid, from, o, ctx.signal), sideText(vid, to, f, ctx.signal)]);
    put(box, ta === null || tb === null ? h('p', { class: 'hint' }, 'Not text (or over ' + bytes(DIFF_MAX) + '): ' +
      bytes(o.size) + ' → ' + bytes(f.size) + '.') : diffView(ta, tb, 'Diff of ' + f.path));
  };
  for (const [k, [o, f]] of changed.entries()) {
    const box = h('div', { class: 'diffbox' });
    changedList.append(h('article', { class: 'filediff' },
      h('h3', {}, fileLink(f, to), ' ', h('span', { class: 'facts' }, 'v' + o.version + ' → v' + f.version)), box));
    if (k < AUTO_DIFFS) await show(o, f, box);
    else box.append(button('Show the diff', () => show(o, f, box).catch(ctx.fail)));
  }
}

// One change as a table row.
const changeRow = (vid, c) => [String(c.seq), c.op, c.op === 'remove' ? c.path : link(fileRoute(vid, c.path), c.path),
  c.version === undefined ? '' : 'v' + c.version, bytes(c.size)];

// #/v/ID/changes: the last changes, then new ones as they land (long-poll).
export async function changes(ctx, vid) {
  const vol = await api.get(vpath(vid), { signal: ctx.signal });
  const tbody = h('tbody', {});
  const state = h('p', { class: 'facts live', 'aria-live': 'polite' }, 'Following live from seq ' + vol.seq + '.');
  put(ctx.main, volHead(vol, 'Changes'), h('h1', {}, 'Changes'), state,
    h('div', { class: 'scroll' }, h('table', { 'aria-label': 'Changes' },
      h('thead', {}, h('tr', {}, ['Seq', 'Op', 'Path', 'Version', 'Size'].map((c) => h('th', { scope: 'col' }, c)))),
      tbody)));
  const addRows = (list) => {
    for (const c of list) tbody.prepend(h('tr', {}, changeRow(vid, c).map((x) => h('td', {}, x))));
    while (tbody.rows.length > 1000) tbody.lastChild.remove();
  };
  let since = Math.max(0, vol.seq - 50);
  follow(ctx, vid, since, addRows, state); // runs until the page goes
}

// The long-poll loop: `wait=25` until the page's signal aborts; errors retry.
async function follow(ctx, vid, since, addRows, state) {
  let wait = 0; // the first call takes the recent history at once
  while (!ctx.signal.aborted) {
    try {
      const r = await api.get(vpath(vid) + '/changes', { query: { since, wait }, signal: ctx.signal });
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
