// volumes.js — the volumes list, a folder, a file; upload and delete with the
// API's preconditions (a stale page gets the 412 and an offer to reload).
import { h, put, bytes, when, table, link, button } from './dom.js';
import * as api from './api.js';

const vpath = (vid) => '/v1/volumes/' + encodeURIComponent(vid);
export const filesUrl = (vid, path) => vpath(vid) + '/files/' + api.encPath(path);
const q = (o) => { const s = new URLSearchParams(o).toString(); return s ? '?' + s : ''; };
export const folderRoute = (vid, prefix) => '/v/' + encodeURIComponent(vid) + '/files' + q(prefix ? { prefix } : {});
export const fileRoute = (vid, path, snapshot) =>
  '/v/' + encodeURIComponent(vid) + '/file' + q(snapshot ? { path, snapshot } : { path });

// Shown inline as <img> (raster only: an SVG is a document that can hold script).
const RASTER = /^image\/(png|jpeg|gif|webp|avif|bmp)$/;
// Shown as text (with line numbers) without looking at the bytes first.
const TEXTISH = /^(text\/|application\/(json|xml|javascript|x-sh|x-yaml|yaml|toml|sql|x-python)|image\/svg\+xml)|\+(json|xml)$/;
// Never fetched to be shown as text.
const BINARY = /^(image|audio|video|font)\/|^application\/(pdf|zip|gzip|x-tar|x-7z-compressed|wasm)$/;
const TEXT_MAX = 1 << 20; // larger text files are offered as downloads

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
      tab('/v/' + id + '/changes', 'Changes')));
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

// The upload form of a folder: the file goes to prefix + its name (or the name typed).
function uploadForm(ctx, vid, prefix, known, notice) {
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
      if (await upload(ctx, vid, path, f, known.get(path) || 0, notice))
        await folder(ctx, vid, prefix, true);
    } catch (e) { ctx.fail(e); }
  });
  return form;
}

// #/v/ID/files?prefix=P: one folder, its subfolders and files.
export async function folder(ctx, vid, prefix, keepStatus) {
  if (prefix && !prefix.endsWith('/')) prefix += '/';
  const vol = await api.get(vpath(vid), { signal: ctx.signal });
  const { items, last, more } = await api.all(vpath(vid) + '/files', 'files', { prefix }, 100000, ctx.signal);
  const { dirs, here } = children(items, prefix);
  const known = new Map(items.map((f) => [f.path, f.version]));
  const notice = h('div', { class: 'noticebox' });
  const rows = dirs.map((d) => [link(folderRoute(vid, prefix + d.name + '/'), d.name + '/'),
    'folder', bytes(d.bytes), d.files + ' files', '', ''])
    .concat(here.map((f) => [link(fileRoute(vid, f.path), f.name), f.contentType, bytes(f.size),
      'v' + f.version, when(f.updatedAt),
      button('Delete', async () => {
        try { if (await remove(ctx, vid, f.path, f.version, notice)) await folder(ctx, vid, prefix, true); }
        catch (e) { ctx.fail(e); }
      }, { class: 'danger', 'aria-label': 'Delete ' + f.name })]));
  put(ctx.main, volHead(vol, 'Files'), crumbs(vol, prefix),
    h('h1', {}, prefix ? prefix : 'All files'),
    h('p', { class: 'facts' }, 'Listed at seq ' + last.seq + '.'),
    notice,
    rows.length ? table(['Name', 'Type', 'Size', 'Version', 'Updated', ''], rows, 'Files')
      : h('p', {}, 'This folder is empty.'),
    more ? h('p', { class: 'hint' }, 'Only the first ' + items.length + ' files are counted.') : null,
    uploadForm(ctx, vid, prefix, known, notice));
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
async function blobUrl(vid, path, snapshot, type) {
  const r = await api.call('GET', filesUrl(vid, path), { query: { snapshot }, raw: true });
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
export function asText(buf) {
  try {
    const t = new TextDecoder('utf-8', { fatal: true }).decode(buf);
    return t.includes('\0') ? null : t;
  } catch (_) { return null; }
}

// #/v/ID/file?path=P[&snapshot=S]: one file as text, image or download.
export async function file(ctx, vid, path, snapshot) {
  const vol = await api.get(vpath(vid), { signal: ctx.signal });
  const head = await api.call('HEAD', filesUrl(vid, path), { query: { snapshot }, raw: true, signal: ctx.signal });
  const type = mediaType(head.headers.get('Content-Type'));
  const size = Number(head.headers.get('Content-Length') || 0);
  const version = Number((head.headers.get('ETag') || '').replace(/\D/g, '')) || 0;
  const name = path.split('/').pop();
  const body = h('div', { class: 'fileview' });
  const notice = h('div', { class: 'noticebox' });
  const parent = path.includes('/') ? path.slice(0, path.lastIndexOf('/') + 1) : '';
  put(ctx.main, volHead(vol, 'Files'), crumbs(vol, path), h('h1', {}, name),
    h('p', { class: 'facts' }, type + ' · ' + bytes(size) + ' · version ' + version +
      (snapshot ? ' · as snapshot ' + snapshot + ' had it' : '')),
    notice, body);
  let text = null;
  if (size <= TEXT_MAX && (TEXTISH.test(type) || !BINARY.test(type))) {
    const r = await api.call('GET', filesUrl(vid, path), { query: { snapshot }, raw: true, signal: ctx.signal });
    text = asText(await r.arrayBuffer());
  }
  const dl = h('a', { class: 'download', download: name, href: '#' }, 'Download ' + name);
  dl.addEventListener('click', async (ev) => {
    if (dl.dataset.ready) return;
    ev.preventDefault();
    try {
      dl.href = (await signedLink(vid, path, snapshot)) || await blobUrl(vid, path, snapshot, 'application/octet-stream');
      dl.dataset.ready = '1';
      dl.click();
    } catch (e) { ctx.fail(e); }
  });
  if (RASTER.test(type) || type === 'image/svg+xml') {
    // An SVG only ever as <img> from the signed link (scripts never run in an
    // image); without a link it is shown as text, never as an object URL.
    const src = (await signedLink(vid, path, snapshot)) ||
      (RASTER.test(type) ? await blobUrl(vid, path, snapshot, type) : null);
    if (src) body.append(h('img', { class: 'preview', src, alt: name }));
  }
  if (text !== null) body.append(codeView(text, 'Contents of ' + name));
  else if (!RASTER.test(type)) body.append(h('p', {}, 'Not shown here: ' + type + ', ' + bytes(size) + '.'));
  body.append(h('p', {}, dl));
  if (snapshot) return;
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
