// volumes.js — the volumes list, a folder, a file; upload and delete with the
// API's preconditions (a stale page gets the 412 and an offer to reload).
import { h, put, bytes, when, table, link, button } from './dom.js';
import * as api from './api.js';

const vpath = (vid) => '/v1/volumes/' + encodeURIComponent(vid);
export const filesUrl = (vid, path) => vpath(vid) + '/files/' + api.encPath(path);
const q = (o) => { const s = new URLSearchParams(o).toString(); return s ? '?' + s : ''; };
const defined = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v));
export const folderRoute = (vid, prefix, more) => '/v/' + encodeURIComponent(vid) + '/files' +
  q(defined({ prefix, ...(more || {}) }));
// `at`: a snapshot id, or {seq: N} (the file as it was at seq N: a version from its history)
export const fileRoute = (vid, path, at) => '/v/' + encodeURIComponent(vid) + '/file' +
  q(at && at.seq ? { path, seq: at.seq } : at ? { path, snapshot: at } : { path });
export const historyRoute = (vid, path) => '/v/' + encodeURIComponent(vid) + '/history' + q({ path });

// Shown inline as <img> (raster only: an SVG is a document that can hold script).
const RASTER = /^image\/(png|jpeg|gif|webp|avif|bmp)$/;
// Shown as text (with line numbers) without looking at the bytes first.
const TEXTISH = /^(text\/|application\/(json|xml|javascript|x-sh|x-yaml|yaml|toml|sql|x-python)|image\/svg\+xml)|\+(json|xml)$/;
// Never fetched to be shown as text.
const BINARY = /^(image|audio|video|font)\/|^application\/(pdf|zip|gzip|x-tar|x-7z-compressed|wasm)$/;
const TEXT_MAX = 1 << 20; // larger text files show their head only
const HEAD_BYTES = 64 * 1024; // the head of a larger text file (one Range request)

export const mediaType = (ct) => (ct || '').split(';')[0].trim().toLowerCase();

// The volume's heading and tabs (Files, Snapshots, Changes); the Files views
// show the path's own breadcrumbs instead.
export function volHead(vol, which) {
  const id = encodeURIComponent(vol.id);
  const tab = (r, t) => link(r, t, { class: which === t ? 'tab here' : 'tab', 'aria-current': which === t ? 'page' : null });
  return h('div', { class: 'volhead' },
    which === 'Files' ? null : h('p', { class: 'crumbs' }, link('/volumes', 'Volumes'), ' / ', vol.name || vol.id),
    h('p', { class: 'facts' }, (vol.files ?? '?') + ' files · ' + bytes(vol.bytes) + ' · seq ' + vol.seq),
    h('nav', { class: 'tabs', 'aria-label': 'Volume' },
      tab('/v/' + id + '/files', 'Files'), tab('/v/' + id + '/snapshots', 'Snapshots'),
      tab('/v/' + id + '/changes', 'Changes'), tab('/v/' + id + '/merge', 'Merge')));
}

// #/volumes: the organization's volumes.
export async function list(ctx) {
  let got;
  try {
    got = await api.all('/v1/volumes', 'volumes', { limit: 1000 }, 5000, ctx.signal);
  } catch (e) {
    if (e.status !== 403) throw e;
    // a key bound to an agent reaches only that agent (and its relay sessions)
    put(ctx.main, h('h1', {}, 'Volumes'), h('p', {}, '403 ' + e.type + ': ' + e.message + '. '),
      h('p', {}, link('/agents', 'Agents'), ' · ', link('/relay', 'Relay sessions')));
    return;
  }
  const { items, more } = got;
  const rows = items.map((v) => [link(folderRoute(v.id, ''), v.name), String(v.files),
    bytes(v.bytes), String(v.seq), when(v.createdAt)]);
  put(ctx.main, h('h1', {}, 'Volumes'),
    items.length ? table(['Name', 'Files', 'Bytes', 'Seq', 'Created'], rows, 'Volumes')
      : h('p', {}, 'No volumes yet. Make one with `coffer` or POST /v1/volumes.'),
    more ? h('p', { class: 'hint' }, 'Showing the first ' + items.length + ' volumes.') : null);
}

// The immediate children of `prefix` in a flat listing: folders and files.
function children(files, prefix) {
  const dirs = new Map(), here = [];
  for (const f of files) {
    const rest = f.path.slice(prefix.length);
    const i = rest.indexOf('/');
    if (i < 0) { here.push({ ...f, name: rest }); continue; }
    const name = rest.slice(0, i);
    const d = dirs.get(name) || { name, files: 0, bytes: 0 };
    d.files++; d.bytes += f.size;
    dirs.set(name, d);
  }
  return { dirs: [...dirs.values()], here };
}

// Breadcrumbs of a folder or file path inside volume `vol`.
function crumbs(vol, path) {
  const parts = path.split('/').filter(Boolean);
  const out = [link('/volumes', 'Volumes'), ' / ', link(folderRoute(vol.id, ''), vol.name || vol.id)];
  let acc = '';
  parts.forEach((p, i) => {
    acc += p + (i < parts.length - 1 || path.endsWith('/') ? '/' : '');
    out.push(' / ', i === parts.length - 1 ? h('span', {}, p) : link(folderRoute(vol.id, acc), p));
  });
  return h('p', { class: 'crumbs' }, out);
}

// The 412 of a stale page: what changed and a button to reload.
function staleNotice(ctx, e, what) {
  const cur = e.body && e.body.current;
  ctx.say('');
  return h('div', { class: 'notice error', role: 'alert' },
    h('p', {}, '412 precondition_failed: ' + what + ' changed since this page was loaded' +
      (cur ? ': it is now at version ' + cur.version : ': it exists now') +
      '. Nothing was written. Reload to see it, then try again.'),
    h('p', { class: 'hint' }, 'cofferd said: ' + e.message),
    button('Reload', () => window.dispatchEvent(new HashChangeEvent('hashchange')),
      { class: 'reload' }));
}

// Uploads `file` to `path` under the precondition `version` (a number: If-Match;
// 0: must not exist). Shows the 412 in `where` and returns false on a conflict.
async function upload(ctx, vid, path, file, version, where) {
  const headers = version ? { 'If-Match': '"' + version + '"' } : { 'If-None-Match': '*' };
  if (file.type) headers['Content-Type'] = file.type;
  try {
    const r = await api.call('PUT', filesUrl(vid, path), { body: file, headers });
    ctx.say('Uploaded ' + r.path + ' (version ' + r.version + ', ' + bytes(r.size) + ').');
    return true;
  } catch (e) {
    if (e.status !== 412) throw e;
    put(where, staleNotice(ctx, e, "'" + path + "'"));
    return false;
  }
}

// Deletes `path` if it is still at `version`; the 412 goes into `where`.
async function remove(ctx, vid, path, version, where) {
  if (!window.confirm("Delete '" + path + "'? Snapshots keep their copy.")) return false;
  try {
    await api.del(filesUrl(vid, path), { headers: { 'If-Match': '"' + version + '"' } });
    ctx.say("Deleted '" + path + "'.");
    return true;
  } catch (e) {
    if (e.status !== 412) throw e;
    put(where, staleNotice(ctx, e, "'" + path + "'"));
    return false;
  }
}

// The version of `path` now (0: absent).
async function versionOf(vid, path) {
  try {
    const r = await api.call('HEAD', filesUrl(vid, path), { raw: true });
    return Number((r.headers.get('ETag') || '').replace(/\D/g, '')) || 0;
  } catch (e) {
    if (e.status === 404) return 0;
    throw e;
  }
}

// The upload form of a folder: the file goes to prefix + its name (or the name typed).
function uploadForm(ctx, vid, prefix, known, notice, complete) {
  const input = h('input', { type: 'file', id: 'upfile', required: true });
  const name = h('input', { type: 'text', id: 'upname', placeholder: 'its own name', spellcheck: 'false' });
  const form = h('form', { class: 'upload', 'aria-label': 'Upload' },
    h('label', { for: 'upfile' }, 'Upload a file'), input,
    h('label', { for: 'upname' }, 'as'), name,
    h('button', { type: 'submit' }, 'Upload'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const f = input.files[0];
    if (!f) return;
    const path = prefix + (name.value.trim() || f.name);
    try {
      // a name not on this page may be on another: asked for before choosing the precondition
      let version = known.get(path);
      if (version === undefined) version = complete ? 0 : await versionOf(vid, path);
      if (await upload(ctx, vid, path, f, version, notice))
        await folder(ctx, vid, prefix, true);
    } catch (e) { ctx.fail(e); }
  });
  return form;
}

// Rows of a folder page: the API's own pages of the listing under the folder.
const PAGE = 200;
// Cursors of the pages before the one shown, per folder and filter: Previous
// walks back through them (the API's cursors only go forward).
const trail = { key: '', cursors: [] };
// A glob that matches `s` literally.
const globEsc = (s) => s.replace(/[\\*?[\]]/g, '\\$&');

// #/v/ID/files?prefix=P&filter=F&cursor=C: one page (200 files) of a folder.
// Without a filter the page's files are grouped into the folder's subfolders
// and files; with one, the files under the folder whose name contains F.
export async function folder(ctx, vid, prefix, keepStatus) {
  if (prefix && !prefix.endsWith('/')) prefix += '/';
  const filter = (ctx.q && ctx.q.get('filter')) || '';
  const cursor = (ctx.q && ctx.q.get('cursor')) || '';
  const tkey = vid + '\0' + prefix + '\0' + filter;
  if (trail.key !== tkey || !cursor) { trail.key = tkey; trail.cursors = []; }
  const vol = await api.get(vpath(vid), { signal: ctx.signal });
  const query = { prefix, limit: PAGE, cursor };
  if (filter) query.glob = globEsc(prefix) + '**/*' + globEsc(filter) + '*';
  const page = await api.get(vpath(vid) + '/files', { query, signal: ctx.signal });
  const items = page.files || [];
  const { dirs, here } = filter ? { dirs: [], here: items.map((f) => ({ ...f, name: f.path.slice(prefix.length) })) }
    : children(items, prefix);
  const known = new Map(items.map((f) => [f.path, f.version]));
  const notice = h('div', { class: 'noticebox' });
  const again = () => folder(ctx, vid, prefix, true);
  const rows = dirs.map((d) => [link(folderRoute(vid, prefix + d.name + '/'), d.name + '/'),
    'folder', bytes(d.bytes), d.files + (d.files === 1 ? ' file' : ' files') + ' on this page', '', ''])
    .concat(here.map((f) => [link(fileRoute(vid, f.path), f.name), f.contentType, bytes(f.size),
      'v' + f.version, when(f.updatedAt),
      button('Delete', async () => {
        try { if (await remove(ctx, vid, f.path, f.version, notice)) await again(); }
        catch (e) { ctx.fail(e); }
      }, { class: 'danger', 'aria-label': 'Delete ' + f.name })]));
  const route = (c) => folderRoute(vid, prefix, { filter, cursor: c });
  const pageNo = trail.cursors.length + 1;
  const pager = (cursor || page.cursor) ? h('nav', { class: 'pager', 'aria-label': 'Pages' },
    button('Previous', () => { const c = trail.cursors.pop(); ctx.go(route(c || '')); }, { disabled: !cursor }),
    h('span', { class: 'facts' }, 'Page ' + pageNo + (cursor && pageNo === 1 ? ' (reloaded: Previous goes to the first)' : '')),
    button('Next', () => { trail.cursors.push(cursor); ctx.go(route(page.cursor)); }, { disabled: !page.cursor }))
    : null;
  const fin = h('input', { type: 'search', id: 'filter', value: filter, placeholder: 'part of a file name',
    spellcheck: 'false' });
  const fform = h('form', { class: 'row', role: 'search', 'aria-label': 'Filter' },
    h('label', { for: 'filter' }, 'Files whose name contains'), fin,
    h('button', { type: 'submit' }, 'Filter'),
    filter ? link(folderRoute(vid, prefix), 'Clear') : null);
  fform.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.go(folderRoute(vid, prefix, { filter: fin.value }));
  });
  put(ctx.main, volHead(vol, 'Files'), crumbs(vol, prefix),
    h('h1', {}, prefix ? prefix : 'All files'),
    h('p', { class: 'facts' }, 'Listed at seq ' + page.seq + ' · ' + items.length + ' files on this page' +
      (filter ? " · names containing '" + filter + "', in every subfolder" : '') + '.'),
    fform, notice, pager,
    rows.length ? table(['Name', 'Type', 'Size', 'Version', 'Updated', ''], rows, 'Files')
      : h('p', {}, filter ? 'No file here has that in its name.' : 'This folder is empty.'),
    uploadForm(ctx, vid, prefix, known, notice, !(cursor || page.cursor || filter)));
  if (!keepStatus) ctx.say('');
}

// A URL that shows the file's bytes from this origin through the API's safe
// download path: a signed link (/l/TOKEN: nosniff, CSP sandbox, attachment for
// unsafe types). Null when no link can be had (a read-only key; a snapshot).
async function signedLink(vid, path, snapshot) {
  if (snapshot) return null;
  try {
    const r = await api.post(vpath(vid) + '/links', { path, expiresIn: 900 });
    const u = new URL(r.url, location.href);
    return u.pathname.startsWith('/l/') ? u.pathname + u.search : null;
  } catch (e) {
    if (e.status === 403) return null;
    throw e;
  }
}

// An object URL for bytes fetched with the key, typed so that opening it can
// never run anything: a raster image type, else application/octet-stream.
async function blobUrl(vid, path, at, type) {
  const r = await api.call('GET', filesUrl(vid, path), { query: at, raw: true });
  const data = await r.arrayBuffer();
  return URL.createObjectURL(new Blob([data], { type: RASTER.test(type) ? type : 'application/octet-stream' }));
}

// Text with line numbers; every line is a text node.
export function codeView(text, label) {
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return h('div', { class: 'code', role: 'region', 'aria-label': label, tabindex: '0' },
    lines.map((l, i) => h('div', { class: 'line' }, h('span', { class: 'ln', 'aria-hidden': 'true' }, String(i + 1)),
      h('span', { class: 'tx' }, l))));
}

// Decodes bytes as UTF-8 text, or null when they are not text (invalid, NUL).
// `cut`: the bytes may end inside a character (a head), which is left out.
export function asText(buf, cut) {
  try {
    const t = new TextDecoder('utf-8', { fatal: true }).decode(buf, { stream: Boolean(cut) });
    return t.includes('\0') ? null : t;
  } catch (_) { return null; }
}

// A PDF's pages as PNGs that cofferd renders (?preview=page&page=N), shown as
// <img> from blob: URLs typed image/png: no PDF viewer runs in this origin.
function pdfPages(ctx, vid, path, at, name) {
  const box = h('section', { class: 'pdf', 'aria-label': 'Pages of ' + name });
  let urlNow = null;
  const show = async (n) => {
    put(box, h('p', { class: 'hint' }, 'Rendering page ' + n + '…'));
    let r;
    try {
      r = await api.call('GET', filesUrl(vid, path), { query: { ...at, preview: 'page', page: n },
        raw: true, signal: ctx.signal });
    } catch (e) {
      if (e.name === 'AbortError') return;
      put(box, h('p', { class: 'notice error pdferror', role: 'alert' },
        'No preview of page ' + n + ': ' + (e.status ? e.status + ' ' + e.type + ': ' : '') + e.message));
      return;
    }
    const pages = Number(r.headers.get('X-Pdf-Pages')) || n;
    const blob = await r.blob();
    if (urlNow) URL.revokeObjectURL(urlNow);
    urlNow = URL.createObjectURL(new Blob([blob], { type: 'image/png' }));
    put(box, h('nav', { class: 'pager', 'aria-label': 'PDF pages' },
      button('Previous page', () => show(n - 1), { disabled: n <= 1 }),
      h('span', { class: 'facts pageof' }, 'Page ' + n + ' of ' + pages),
      button('Next page', () => show(n + 1), { disabled: n >= pages })),
    h('img', { class: 'page', src: urlNow, alt: 'Page ' + n + ' of ' + name, 'data-page': String(n) }));
  };
  show(1).catch(ctx.fail);
  return box;
}

// #/v/ID/file?path=P[&snapshot=S|&seq=N]: one file as text, image or download;
// with a snapshot or a seq, as it was then (read-only: no upload, no delete).
export async function file(ctx, vid, path, snapshot, seq) {
  const at = snapshot ? { snapshot } : seq ? { seq } : {};
  const past = snapshot || seq; // signed links have neither: blob: URLs then
  const vol = await api.get(vpath(vid), { signal: ctx.signal });
  const head = await api.call('HEAD', filesUrl(vid, path), { query: at, raw: true, signal: ctx.signal });
  const type = mediaType(head.headers.get('Content-Type'));
  const size = Number(head.headers.get('Content-Length') || 0);
  const version = Number((head.headers.get('ETag') || '').replace(/\D/g, '')) || 0;
  const name = path.split('/').pop();
  const body = h('div', { class: 'fileview' });
  const notice = h('div', { class: 'noticebox' });
  const parent = path.includes('/') ? path.slice(0, path.lastIndexOf('/') + 1) : '';
  put(ctx.main, volHead(vol, 'Files'), crumbs(vol, path), h('h1', {}, name),
    h('p', { class: 'facts' }, type + ' · ' + bytes(size) + ' · version ' + version +
      (snapshot ? ' · as snapshot ' + snapshot + ' had it' : '') + (seq ? ' · as it was at seq ' + seq : '')),
    h('p', { class: 'actions' }, link(historyRoute(vid, path), 'History of ' + name, { class: 'histlink' }),
      past ? link(fileRoute(vid, path), 'The file now') : null),
    notice, body);
  let text = null, shown = size;
  if (TEXTISH.test(type) || !BINARY.test(type)) {
    if (size <= TEXT_MAX) {
      const r = await api.call('GET', filesUrl(vid, path), { query: at, raw: true, signal: ctx.signal });
      text = asText(await r.arrayBuffer());
    } else {
      // only the head: a Range request, never the whole file into the page
      const r = await api.call('GET', filesUrl(vid, path), { query: at, raw: true, signal: ctx.signal,
        headers: { Range: 'bytes=0-' + (HEAD_BYTES - 1) } });
      const buf = await r.arrayBuffer();
      if (r.status === 206 && buf.byteLength <= HEAD_BYTES) {
        text = asText(buf, true);
        shown = buf.byteLength;
      }
    }
  }
  const mkDl = (cls, label) => {
    const a = h('a', { class: cls, download: name, href: '#' }, label);
    a.addEventListener('click', async (ev) => {
      if (a.dataset.ready) return;
      ev.preventDefault();
      try {
        a.href = (await signedLink(vid, path, past)) || await blobUrl(vid, path, at, 'application/octet-stream');
        a.dataset.ready = '1';
        a.click();
      } catch (e) { ctx.fail(e); }
    });
    return a;
  };
  const dl = mkDl('download', 'Download ' + name);
  if (RASTER.test(type) || type === 'image/svg+xml') {
    // An SVG only ever as <img> from the signed link (scripts never run in an
    // image); without a link it is shown as text, never as an object URL.
    const src = (await signedLink(vid, path, past)) ||
      (RASTER.test(type) ? await blobUrl(vid, path, at, type) : null);
    if (src) body.append(h('img', { class: 'preview', src, alt: name }));
  }
  if (type === 'application/pdf') body.append(pdfPages(ctx, vid, path, at, name));
  if (text !== null && shown < size)
    body.append(h('p', { class: 'notice headonly', role: 'note' }, 'Showing the first ' + bytes(shown) + ' of ' +
      bytes(size) + ': ' + bytes(size - shown) + ' (' + (size - shown) + ' bytes) not shown. ', mkDl('download-whole', 'Download the whole file')));
  if (text !== null) body.append(codeView(text, 'Contents of ' + name + (shown < size ? ' (the first ' + bytes(shown) + ')' : '')));
  else if (!RASTER.test(type) && type !== 'application/pdf')
    body.append(h('p', {}, 'Not shown here: ' + type + ', ' + bytes(size) + '.'));
  body.append(h('p', {}, dl));
  if (past) return;
  const input = h('input', { type: 'file', id: 'newver' });
  const form = h('form', { class: 'upload', 'aria-label': 'Replace' },
    h('label', { for: 'newver' }, 'Replace with a new version'), input,
    h('button', { type: 'submit' }, 'Upload over version ' + version));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!input.files[0]) return;
    try { if (await upload(ctx, vid, path, input.files[0], version, notice)) await file(ctx, vid, path); }
    catch (e) { ctx.fail(e); }
  });
  body.append(form, h('p', {}, button('Delete this file', async () => {
    try { if (await remove(ctx, vid, path, version, notice)) ctx.go(folderRoute(vid, parent)); }
    catch (e) { ctx.fail(e); }
  }, { class: 'danger' })));
}
