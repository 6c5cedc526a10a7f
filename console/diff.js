// diff.js — a line diff of two texts (the API has no diff call: the console
// computes it from the two versions it reads), shown as unified hunks.
import { h } from './dom.js';

const CELLS = 4000000; // past this the changed middle is shown as removed then added

function lines(t) {
  const l = t.split('\n');
  if (l.length && l[l.length - 1] === '') l.pop();
  return l;
}

// The edit script turning text `a` into `b`: [{op:' '|'-'|'+', text, ai, bi}]
// (ai, bi: 1-based line numbers in a and b). A longest common subsequence of
// the lines between the common head and tail.
export function lineDiff(a, b) {
  const A = lines(a), B = lines(b);
  let pre = 0, suf = 0;
  while (pre < A.length && pre < B.length && A[pre] === B[pre]) pre++;
  while (suf < A.length - pre && suf < B.length - pre &&
         A[A.length - 1 - suf] === B[B.length - 1 - suf]) suf++;
  const a2 = A.slice(pre, A.length - suf), b2 = B.slice(pre, B.length - suf);
  const n = a2.length, m = b2.length, mid = [];
  if (n * m <= CELLS) {
    const L = new Uint32Array((n + 1) * (m + 1)); // L[i][j]: LCS of a2[i..], b2[j..]
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        L[i * (m + 1) + j] = a2[i] === b2[j] ? L[(i + 1) * (m + 1) + j + 1] + 1
          : Math.max(L[(i + 1) * (m + 1) + j], L[i * (m + 1) + j + 1]);
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a2[i] === b2[j]) { mid.push([' ', i++, j++]); }
      else if (j < m && (i === n || L[i * (m + 1) + j + 1] >= L[(i + 1) * (m + 1) + j])) mid.push(['+', i, j++]);
      else mid.push(['-', i++, j]);
    }
  } else {
    for (let i = 0; i < n; i++) mid.push(['-', i, 0]);
    for (let j = 0; j < m; j++) mid.push(['+', n, j]);
  }
  const out = [];
  for (let k = 0; k < pre; k++) out.push({ op: ' ', text: A[k], ai: k + 1, bi: k + 1 });
  for (const [op, i, j] of mid)
    out.push({ op, text: op === '+' ? b2[j] : a2[i], ai: pre + i + 1, bi: pre + j + 1 });
  for (let k = 0; k < suf; k++)
    out.push({ op: ' ', text: A[A.length - suf + k], ai: A.length - suf + k + 1, bi: B.length - suf + k + 1 });
  return out;
}

// The diff as hunks with `context` unchanged lines around each change; every
// line is a text node. Counts in the summary line.
export function diffView(a, b, label, context = 3) {
  const d = lineDiff(a, b);
  const keep = new Uint8Array(d.length);
  d.forEach((x, i) => {
    if (x.op === ' ') return;
    for (let k = Math.max(0, i - context); k <= Math.min(d.length - 1, i + context); k++) keep[k] = 1;
  });
  const rows = [];
  let added = 0, removed = 0, gap = false;
  d.forEach((x, i) => {
    if (x.op === '+') added++;
    if (x.op === '-') removed++;
    if (!keep[i]) { gap = true; return; }
    if (gap || rows.length === 0) rows.push(h('div', { class: 'hunk' }, '@@ -' + x.ai + ' +' + x.bi + ' @@'));
    gap = false;
    const cls = x.op === '+' ? 'line add' : x.op === '-' ? 'line del' : 'line';
    rows.push(h('div', { class: cls },
      h('span', { class: 'ln', 'aria-hidden': 'true' }, x.op === '+' ? '' : String(x.ai)),
      h('span', { class: 'ln', 'aria-hidden': 'true' }, x.op === '-' ? '' : String(x.bi)),
      h('span', { class: 'mark' }, x.op === ' ' ? ' ' : x.op),
      h('span', { class: 'tx' }, x.text)));
  });
  return h('div', { class: 'diff' },
    h('p', { class: 'facts' }, '+' + added + ' −' + removed + ' lines'),
    added + removed ? h('div', { class: 'code', role: 'region', 'aria-label': label, tabindex: '0' }, rows)
      : h('p', {}, 'The texts are the same.'));
}
