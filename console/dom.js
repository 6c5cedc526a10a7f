// dom.js — building the page without ever parsing HTML: every text goes in as
// textContent (a node of text), so nothing read from a volume can become markup.

// h(tag, attrs, ...children): an element. attrs: `class`, `text` (textContent),
// `on` ({event: handler}), booleans (true sets, false leaves out), else attributes.
// Children: nodes, strings (text nodes), arrays of them, null/false (skipped).
export function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'text') el.textContent = String(v);
    else if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  add(el, kids);
  return el;
}

function add(el, kids) {
  for (const k of kids) {
    if (k === null || k === undefined || k === false) continue;
    if (Array.isArray(k)) add(el, k);
    else el.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
}

// Replaces everything in `el` with `kids`.
export function put(el, ...kids) {
  el.replaceChildren();
  add(el, kids);
  return el;
}

// 1536 -> "1.5 KiB"
export function bytes(n) {
  if (n === null || n === undefined) return '';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i === 0 ? String(n) : n.toFixed(n < 10 ? 1 : 0)) + ' ' + u[i];
}

// An RFC 3339 time as the browser's local time, short.
export function when(t) {
  if (!t) return '';
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toLocaleString();
}

// A table: `cols` are header names, `rows` arrays of cells (nodes or text).
export function table(cols, rows, label) {
  return h('div', { class: 'scroll' },
    h('table', { 'aria-label': label || null },
      h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, c)))))));
}

// A link inside the console (hash route).
export function link(route, text, attrs) {
  return h('a', { href: '#' + route, ...(attrs || {}) }, text);
}

// A button running `fn` on click; disabled while fn's promise is pending.
export function button(text, fn, attrs) {
  const b = h('button', { type: 'button', ...(attrs || {}) }, text);
  b.addEventListener('click', async () => {
    b.disabled = true;
    try { await fn(b); } finally { b.disabled = false; }
  });
  return b;
}

// Pretty JSON as text (a <pre>).
export function jsonBlock(v) {
  return h('pre', { class: 'json' }, JSON.stringify(v, null, 2));
}

// A list shown `size` rows at a time: `render(slice)` makes the rows' element;
// Previous/Next move through the pages in place. Answers the element.
export function paged(items, size, render, label) {
  const box = h('div', { class: 'paged' });
  const show = (start) => {
    const end = Math.min(items.length, start + size);
    const nav = items.length > size ? h('nav', { class: 'pager', 'aria-label': (label || 'Rows') + ' pages' },
      button('Previous', () => show(Math.max(0, start - size)), { disabled: start === 0 }),
      h('span', { class: 'facts' }, (start + 1) + '–' + end + ' of ' + items.length),
      button('Next', () => show(start + size), { disabled: end >= items.length })) : null;
    put(box, nav, render(items.slice(start, end)));
  };
  show(0);
  return box;
}
