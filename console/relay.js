// relay.js — relay sessions: status, counts against limits, the log with the
// guard's rule for each blocked write, and abort.
import { h, put, bytes, when, table, link, button, jsonBlock } from './dom.js';
import * as api from './api.js';

const spath = (uid) => '/v1/relay/sessions/' + encodeURIComponent(uid);

// "12 / 500" for a count against its limit (bytes shown as sizes).
function against(n, max, isBytes) {
  const f = isBytes ? bytes : String;
  return f(n || 0) + (max !== undefined ? ' / ' + f(max) : '');
}

// #/relay: every session of the organization, ended ones too.
export async function list(ctx) {
  const s = (await api.get('/v1/relay/sessions', { query: { all: 'true' }, signal: ctx.signal })).sessions;
  put(ctx.main, h('h1', {}, 'Relay sessions'),
    s.length ? table(['Session', 'Agent', 'Status', 'Mode', 'Reads', 'Writes', 'Written', 'Started'],
      s.map((x) => [link('/relay/' + encodeURIComponent(x.uid), x.uid), x.agent, h('span', { class: 'st ' + x.status }, x.status),
        x.mode || '', against(x.counts.reads, x.limits && x.limits.reads),
        against(x.counts.writes, x.limits && x.limits.writes),
        against(x.counts.bytesWritten, x.limits && x.limits.bytesWritten, true), when(x.startedAt)]), 'Relay sessions')
      : h('p', {}, 'No relay sessions.'));
}

// One log entry as table cells: time, what, path, outcome, the guard's finding.
function entryRow(e) {
  const what = e.event ? e.event : e.op;
  const b = e.blocked;
  const detail = b ? h('span', { class: 'blocked' }, 'rule ', h('code', {}, b.rule), ' (' + b.category + ')',
    ' at offset ' + b.offset + (b.layer ? ' through ' + b.layer : '') + ', by ' + b.by)
    : e.event ? [e.reason, e.mode, e.client && JSON.stringify(e.client), e.data && JSON.stringify(e.data)].filter(Boolean).join(' ')
      : e.message || (e.size !== undefined ? bytes(e.size) : '');
  return [when(e.at), what, e.path ? h('code', {}, e.path) : '',
    e.outcome ? h('span', { class: 'outcome ' + (e.outcome === 'ok' ? 'ok' : 'bad') }, e.outcome + (e.status ? ' ' + e.status : '')) : '',
    detail];
}

// #/relay/UID
export async function one(ctx, uid) {
  const [s, log] = await Promise.all([api.get(spath(uid), { signal: ctx.signal }),
    api.get(spath(uid) + '/log', { signal: ctx.signal })]);
  const L = s.limits || {};
  const blocked = log.entries.filter((e) => e.blocked);
  put(ctx.main, h('p', { class: 'crumbs' }, link('/relay', 'Relay sessions'), ' / ', uid),
    h('h1', {}, 'Relay session ' + uid),
    h('dl', { class: 'facts grid' },
      h('dt', {}, 'Status'), h('dd', {}, h('span', { class: 'st ' + s.status }, s.status), s.endReason ? ' (' + s.endReason + ')' : ''),
      h('dt', {}, 'Agent'), h('dd', {}, link('/agents/' + encodeURIComponent(s.agent), s.agent)),
      h('dt', {}, 'Mode'), h('dd', {}, (s.mode || '') + (s.defaultMode ? ' (suggested ' + s.defaultMode + ')' : '')),
      h('dt', {}, 'Reads'), h('dd', {}, against(s.counts.reads, L.reads)),
      h('dt', {}, 'Writes'), h('dd', {}, against(s.counts.writes, L.writes)),
      h('dt', {}, 'Written'), h('dd', {}, against(s.counts.bytesWritten, L.bytesWritten, true)),
      h('dt', {}, 'File limit'), h('dd', {}, bytes(L.fileBytes)),
      h('dt', {}, 'Started'), h('dd', {}, when(s.startedAt)),
      h('dt', {}, 'Expires'), h('dd', {}, when(s.expiresAt))),
    s.status !== 'ended' ? h('p', {}, button('Abort this session', async () => {
      if (!window.confirm('Abort relay session ' + uid + '? File access stops at once.')) return;
      try { await api.post(spath(uid) + '/abort'); await one(ctx, uid); ctx.say('Session ' + uid + ' aborted.'); }
      catch (e) { ctx.fail(e); }
    }, { class: 'danger' })) : null,
    h('h2', {}, 'Blocked writes (' + blocked.length + ')'),
    blocked.length ? table(['Time', 'Path', 'Rule', 'Category', 'Layer', 'By'], blocked.map((e) => [when(e.at),
      h('code', {}, e.blocked.path || e.path), h('code', {}, e.blocked.rule), e.blocked.category, e.blocked.layer || '',
      e.blocked.by]), 'Blocked writes') : h('p', { class: 'hint' }, 'None.'),
    h('h2', {}, 'Log (' + log.entries.length + (log.truncated ? ', older ones dropped' : '') + ')'),
    log.entries.length ? table(['Time', 'What', 'Path', 'Outcome', 'Detail'], log.entries.map(entryRow), 'Session log')
      : h('p', { class: 'hint' }, 'Nothing yet.'),
    h('h2', {}, 'Exclusions and protected paths'),
    jsonBlock({ exclusions: s.exclusions, protected: s.protected, allowWrite: s.allowWrite }));
}
