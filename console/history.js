// history.js — who changed what: a change's `by` as short text (the whole of it
// in the tooltip), a file's history, merging another volume into this one, and
// reverting a run, a call or a seq. Merge and revert always show a dry run
// first; its conflicts are settled one by one (ours, theirs, base) before the
// real call. Everything a caller wrote (paths, by fields, texts) goes in as text.
import { h, put, bytes, when, table, link, button } from './dom.js';
import * as api from './api.js';
import { volHead, fileRoute, codeView } from './volumes.js';

const vpath = (vid) => '/v1/volumes/' + encodeURIComponent(vid);
const HISTORY_PAGE = 50; // versions asked for at once (the API's limit, its cursor for more)
const FIELD_MAX = 24;    // a `by` value longer than this is cut in the column (whole in the tooltip)

const cut = (s) => { s = String(s); return s.length > FIELD_MAX ? s.slice(0, FIELD_MAX - 1) + '…' : s; };

// A change's `by` in a few words: how it came (via), then the agent, user, run,
// call, relay session; the key only when no agent says more. null: "—" (changes
// made before who was recorded).
export function whoText(by) {
  if (!by) return '—';
  const parts = [by.via || '?'];
  for (const [k, label] of [['agent', 'agent'], ['user', 'user'], ['runId', 'run'], ['callId', 'call'],
    ['relaySession', 'relay']])
    if (by[k]) parts.push(label + ' ' + cut(by[k]));
  if (!by.agent && by.keyId) parts.push('key ' + cut(by.keyId));
  return parts.join(' · ');
}

// The "who" cell: the short text, the whole `by` as its tooltip (an attribute: text).
export function who(by) {
  return h('span', { class: 'who', title: by ? Object.entries(by).map(([k, v]) => k + ': ' + v).join('\n')
    : 'not recorded (made before coffer recorded who)' }, whoText(by));
}

// #/v/ID/history?path=P: every version of P, newest first, a page at a time
// (the API's cursor: "Older versions" appends the next page).
export async function file(ctx, vid, path) {
  if (!path) throw new Error('no file named (path=)');
  const vol = await api.get(vpath(vid), { signal: ctx.signal });
  const tbody = h('tbody', {});
  const more = h('div', { class: 'pager' });
  const facts = h('p', { class: 'facts' });
  put(ctx.main, volHead(vol, 'History'), h('h1', {}, 'History of ' + path),
    h('p', { class: 'actions' }, link(fileRoute(vid, path), 'The file now')), facts,
    h('div', { class: 'scroll' }, h('table', { 'aria-label': 'Versions' },
      h('thead', {}, h('tr', {}, ['Version', 'Seq', 'Op', 'Size', 'When', 'Who', ''].map((c) => h('th', { scope: 'col' }, c)))),
      tbody)), more);
  let shown = 0;
  const load = async (cursor) => {
    const r = await api.get(vpath(vid) + '/history', { query: { path, cursor, limit: HISTORY_PAGE }, signal: ctx.signal });
    for (const v of r.versions) {
      // the version written at seq S is the file as it was at S (a removal has nothing to read)
      const read = v.op === 'remove' ? h('span', { class: 'facts' }, 'removed')
        : link(fileRoute(vid, path, { seq: v.seq }), 'Read v' + v.version, { class: 'readver',
          'aria-label': 'Read version ' + v.version });
      tbody.append(h('tr', {}, ['v' + v.version, String(v.seq), v.op, bytes(v.size), when(v.at), who(v.by), read]
        .map((x) => h('td', {}, x))));
    }
    shown += r.versions.length;
    facts.textContent = shown ? shown + (shown === 1 ? ' version' : ' versions') + ' listed, newest first.'
      : 'No change of this path is in the kept history.';
    put(more, r.cursor ? button('Older versions', () => load(r.cursor).catch(ctx.fail), { id: 'older' })
      : shown ? h('span', { class: 'facts' }, 'That is every version kept.') : null);
  };
  await load('');
}

// The conflicts of a dry run, each with its markers (text) and a choice;
// `labels` words ours/theirs/base for the operation. Answers {el, resolutions()}.
function conflictList(conflicts, labels) {
  const side = (s) => s ? 'v' + s.version + ' (' + bytes(s.size) + ')' : 'absent';
  const el = h('div', { class: 'conflicts' }, conflicts.map((c, i) => {
    const opt = (v, text) => h('label', { class: 'choice' },
      h('input', { type: 'radio', name: 'res' + i, value: v, checked: v === 'ours', 'data-path': c.path }), ' ' + text);
    return h('article', { class: 'conflict' },
      h('h4', {}, h('span', { class: 'cpath' }, c.path), ' ', h('span', { class: 'facts' }, c.kind)),
      h('p', { class: 'facts' }, 'base ' + side(c.base) + ' · ours ' + side(c.ours) + ' · theirs ' + side(c.theirs)),
      typeof c.merged === 'string' ? codeView(c.merged, 'Conflict markers of ' + c.path) : null,
      h('fieldset', { class: 'choices' }, h('legend', {}, 'Keep for ' + c.path),
        opt('ours', labels.ours), opt('theirs', labels.theirs), opt('base', labels.base)));
  }));
  const resolutions = () => Object.fromEntries([...el.querySelectorAll('input[type=radio]:checked')]
    .map((x) => [x.dataset.path, x.value]));
  return { el, resolutions };
}

// A refused call as a notice (what cofferd said), in place of the plan.
const refused = (e) => h('div', { class: 'notice error', role: 'alert' },
  h('p', {}, (e.status ? e.status + ' ' + e.type + ': ' : '') + e.message));

// A dry run in `box`, then the real call. o: {id, title, send(extra) -> promise
// of the answer, field ('merged'|'reverted'), labels, goText, ifSeq (send the dry
// run's seq: a write meanwhile is refused), done(answer) -> text, after()}.
async function plan(ctx, box, o) {
  put(box, h('p', { class: 'hint' }, 'Dry run: working out what ' + o.title.toLowerCase() + ' would do…'));
  let r;
  try { r = await o.send({ dryRun: true }); }
  catch (e) {
    if (!e.status || e.status >= 500) throw e;
    put(box, refused(e));
    return;
  }
  const items = r[o.field] || [], conflicts = r.conflicts || [];
  const cl = conflictList(conflicts, o.labels);
  const again = () => plan(ctx, box, o).catch(ctx.fail);
  const go = button(o.goText, async () => {
    let done;
    try {
      done = await o.send({ ...(o.ifSeq ? { ifSeq: r.seq } : {}),
        ...(conflicts.length ? { resolutions: cl.resolutions() } : {}) });
    } catch (e) {
      if (!e.status || e.status >= 500) return ctx.fail(e);
      const cur = e.body && e.body.current && e.body.current.seq;
      // 412 (ifSeq) or 409 (conflicts the dry run did not have): the volume changed meanwhile
      put(box, h('div', { class: 'notice error changed', role: 'alert' },
        h('p', {}, e.status === 412 || e.status === 409
          ? 'The volume changed since the dry run (at seq ' + r.seq + (cur ? ', now at seq ' + cur : '') +
            '). Nothing was changed. Run the dry run again to see what it would do now.'
          : 'Nothing was changed.'),
        h('p', { class: 'hint' }, 'cofferd said: ' + e.status + ' ' + e.type + ': ' + e.message),
        button('Dry run again', again, { class: 'again' })));
      ctx.say('');
      return;
    }
    const list = done[o.field] || [];
    put(box, h('section', { class: 'notice undo ' + o.id + 'done', role: 'status' },
      h('p', { class: 'result' }, o.done(done)),
      list.length ? table(['Path', 'From'], list.map((m) => [m.path, m.from]), o.title + ': done') : null));
    ctx.say(o.done(done));
    if (o.after) o.after(done);
  }, { class: 'danger', id: o.id + 'go' });
  put(box, h('section', { class: 'notice preview ' + o.id + 'plan', 'aria-labelledby': o.id + 'h' },
    h('h2', { id: o.id + 'h' }, o.title + ': dry run at seq ' + r.seq),
    items.length ? [h('h3', {}, 'Would change (' + items.length + ')'),
      table(['Path', 'From'], items.map((m) => [m.path, m.from]), 'Would change')]
      : h('p', { class: 'hint' }, 'No path changes without a conflict.'),
    conflicts.length ? [h('h3', {}, 'Conflicts (' + conflicts.length + ')'),
      h('p', { class: 'hint' }, 'Choose what each path keeps.'), cl.el] : null,
    items.length || conflicts.length
      ? h('p', { class: 'actions' }, go, button('Cancel', () => { put(box); }))
      : h('p', {}, 'Nothing to do.')));
  if (items.length || conflicts.length) go.focus();
}

// #/v/ID/merge?from=V: pick the volume to merge from (a fork of this one, or
// the one it was forked from: cofferd finds the base), a dry run, then Merge.
export async function merge(ctx, vid, from) {
  const vol = await api.get(vpath(vid), { signal: ctx.signal });
  const { items } = await api.all('/v1/volumes', 'volumes', { limit: 1000 }, 5000, ctx.signal);
  const others = items.filter((v) => v.id !== vid);
  const sel = h('select', { id: 'mergefrom' }, h('option', { value: '' }, 'choose a volume'),
    others.map((v) => h('option', { value: v.id, selected: v.id === from }, v.name + ' (' + v.id + ')')));
  const box = h('div', { id: 'mergebox', class: 'noticebox', 'aria-live': 'polite' });
  const form = h('form', { class: 'row', 'aria-label': 'Merge from' },
    h('label', { for: 'mergefrom' }, 'Merge from'), sel, h('button', { type: 'submit' }, 'Dry run'));
  const start = (src) => {
    const name = (others.find((v) => v.id === src) || {}).name || src;
    return plan(ctx, box, {
      id: 'merge', title: 'Merge ' + name + ' into ' + (vol.name || vid), field: 'merged', goText: 'Merge', ifSeq: true,
      labels: { ours: 'ours (' + (vol.name || vid) + ' as it is)', theirs: 'theirs (' + name + ')',
        base: 'base (as both had it)' },
      send: (extra) => api.post(vpath(vid) + '/merge', { from: src, ...extra }),
      done: (d) => 'Merged ' + name + ' as seq ' + d.seq + ': ' + (d.merged || []).length +
        ((d.merged || []).length === 1 ? ' path.' : ' paths.'),
    });
  };
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (!sel.value) return;
    if (sel.value === from) start(sel.value).catch(ctx.fail);
    else ctx.go('/v/' + encodeURIComponent(vid) + '/merge?from=' + encodeURIComponent(sel.value));
  });
  put(ctx.main, volHead(vol, 'Merge'), h('h1', {}, 'Merge into ' + (vol.name || vid)),
    h('p', { class: 'hint' }, 'Brings what another volume (a fork of this one, or the volume it was forked from) ' +
      'changed since their common base into this one, as one change. A dry run shows what would merge first.'),
    others.length ? form : h('p', {}, 'There is no other volume to merge from.'), box);
  if (from) await start(from);
}

// The revert of a run, a call or a seq (`target`: {runId}|{callId}|{seq}) in `box`.
export function revert(ctx, vid, target, box) {
  const [k, v] = Object.entries(target)[0];
  const what = { runId: 'run', callId: 'call', seq: 'seq' }[k] + ' ' + v;
  return plan(ctx, box, {
    id: 'revert', title: 'Revert ' + what, field: 'reverted', goText: 'Revert',
    labels: { ours: 'keep it as it is now', theirs: 'take it back (as before the ' + what.split(' ')[0] + ')',
      base: 'the version the ' + what.split(' ')[0] + ' left' },
    send: (extra) => api.post(vpath(vid) + '/revert', { ...target, ...extra }),
    done: (d) => 'Reverted ' + what + ' as seq ' + d.seq + ': ' + (d.reverted || []).length +
      ((d.reverted || []).length === 1 ? ' path.' : ' paths.'),
  });
}
