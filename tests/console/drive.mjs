// drive.mjs — runs one browser scenario of the web console in headless Chromium
// (puppeteer-core, Debian's chromium) and exits 0 when it held. Called by
// tests/blackbox/test_console.py, which prepares the server's data first:
//
//   node drive.mjs SCENARIO '{"url":..., "key":..., "shots":DIR, ...}'
//
// Exit 0: passed. Exit 1: failed (the reason on stderr). Exit 3: Chromium could
// not start (the test skips with the reason on stderr). Screenshots of each
// page go to `shots` as SCENARIO-STEP.png (1280 px wide, some also 390 px).
import { writeFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import puppeteer from 'puppeteer-core';

const [name, argJson] = process.argv.slice(2);
const A = JSON.parse(argJson || '{}');
const STEP_MS = Number(A.stepMs || 20000);

class Failed extends Error {}
const check = (cond, what) => { if (!cond) throw new Failed(what); };

// The API from node (the "other side" that changes things under the page).
async function apiCall(method, path, body, headers = {}) {
  const h = { Authorization: 'Bearer ' + A.key, ...headers };
  if (body !== undefined && typeof body !== 'string') { h['Content-Type'] = 'application/json'; body = JSON.stringify(body); }
  const r = await fetch(A.url + path, { method, headers: h, body });
  const text = await r.text();
  return { status: r.status, text, json: () => JSON.parse(text) };
}

const profile = mkdtempSync(join(tmpdir(), 'coffer-chromium-')); // removed at the end

async function launch() {
  const args = ['--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-extensions'];
  if (process.getuid && process.getuid() === 0) args.push('--no-sandbox');
  try {
    return await puppeteer.launch({ executablePath: A.chromium || '/usr/bin/chromium', headless: true,
      args, timeout: 60000, userDataDir: profile });
  } catch (e) {
    process.stderr.write('chromium cannot start: ' + e.message + '\n');
    rmSync(profile, { recursive: true, force: true });
    process.exit(3);
  }
}

// A page that records every request it makes and fails the run on a script error.
async function newPage(browser, width = 1280) {
  const page = await browser.newPage();
  await page.setViewport({ width, height: 860 });
  page.requests = [];
  page.errors = [];
  page.on('request', (r) => page.requests.push(r.url()));
  page.on('pageerror', (e) => page.errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') page.errors.push('console: ' + m.text()); });
  page.on('dialog', (d) => d.accept()); // confirmations say yes
  page.setDefaultTimeout(STEP_MS);
  return page;
}

async function shot(page, step) {
  mkdirSync(A.shots, { recursive: true });
  await page.screenshot({ path: join(A.shots, name + '-' + step + '.png'), fullPage: true });
}

const text = (page, sel) => page.$eval(sel, (e) => e.textContent);
const waitText = (page, sel, want) => page.waitForFunction((s, w) =>
  [...document.querySelectorAll(s)].some((e) => e.textContent.includes(w)), {}, sel, want);

// Opens the console and signs in with the key.
async function signIn(page, key = A.key) {
  await page.goto(A.url + '/console', { waitUntil: 'load' });
  await page.waitForSelector('#key');
  await page.type('#key', key);
  await page.keyboard.press('Enter'); // the form submits from the keyboard
}

async function go(page, route) {
  await page.evaluate((r) => { location.hash = r; }, route);
}

// Errors that are not the page's own fault: a refused API call shows in the
// console as a failed resource load; those are what a scenario provokes.
const pageErrors = (page) => page.errors.filter((e) => !/Failed to load resource/.test(e));

// A request markup would make (fetch('/pwned-...')); a URL merely carrying the
// payload in a path or query (the page asking for that file or run) is not one.
const PWNED = /\/pwned-[a-z]+$/;
// Clicks the button whose aria-label is `label` (a label holding quotes cannot be a selector).
const clickLabel = (page, label) => page.waitForFunction((l) => {
  const el = [...document.querySelectorAll('button')].find((x) => x.getAttribute('aria-label') === l);
  if (el) el.click();
  return Boolean(el);
}, {}, label);

const scenarios = {
  async signin(b) {
    const page = await newPage(b);
    await signIn(page, 'not-a-key');
    await waitText(page, '#status', 'unauthorized');
    await shot(page, 'refused');
    check(await page.$('#key'), 'a wrong key leaves the sign-in form');
    await page.$eval('#key', (e) => { e.value = ''; });
    await page.type('#key', A.key);
    await page.click('.signin button[type=submit]');
    await waitText(page, 'h1', 'Volumes');
    const st = await page.evaluate(() => ({ key: sessionStorage.getItem('coffer.key'), cookie: document.cookie,
      local: Object.keys(localStorage).length, href: location.href }));
    check(st.key === A.key, 'the key is kept in sessionStorage');
    check(st.cookie === '' && st.local === 0, 'no cookie and nothing in localStorage');
    check(!page.requests.some((u) => u.includes(A.key)), 'the key is in no URL requested');
    check(!st.href.includes(A.key), 'the key is not in the page URL');
    await shot(page, 'volumes');
    await page.click('#signout');
    await page.waitForSelector('#key');
    check(await page.evaluate(() => sessionStorage.getItem('coffer.key')) === null, 'sign out forgets the key');
  },

  async volumes(b) {
    for (const width of [1280, 390]) {
      const page = await newPage(b, width);
      await signIn(page);
      await waitText(page, 'h1', 'Volumes');
      for (const v of A.volumes) await waitText(page, 'table a', v.name);
      const rows = await page.$$eval('tbody tr', (tr) => tr.map((r) => [...r.cells].map((c) => c.textContent)));
      for (const v of A.volumes) {
        const row = rows.find((r) => r[0] === v.name);
        check(row && row[1] === String(v.files) && row[3] === String(v.seq),
          'volume ' + v.name + ' shows its files and seq: ' + JSON.stringify(row));
      }
      const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      check(over <= 0, 'the page fits ' + width + ' px (overflows by ' + over + ' px)');
      await shot(page, 'list-' + width);
      // keyboard: Tab reaches the first volume's link
      let reached = false;
      for (let i = 0; i < 12 && !reached; i++) {
        await page.keyboard.press('Tab');
        reached = await page.evaluate((n) => document.activeElement && document.activeElement.textContent === n, A.volumes[0].name);
      }
      check(reached, 'the volume link is reachable with Tab');
      await page.keyboard.press('Enter');
      await waitText(page, 'h1', 'All files');
      check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
    }
  },

  async folder_file(b) {
    for (const width of [1280, 390]) {
      const page = await newPage(b, width);
      await signIn(page);
      await waitText(page, 'h1', 'Volumes');
      await go(page, '/v/' + A.vid + '/files');
      await waitText(page, 'table a', A.dir + '/');
      await page.$$eval('table a', (as, d) => as.find((a) => a.textContent === d + '/').click(), A.dir);
      await waitText(page, 'h1', A.dir + '/');
      await shot(page, 'folder-' + width);
      const cells = await page.$$eval('tbody tr', (tr) => tr.map((r) => [...r.cells].map((c) => c.textContent)));
      const row = cells.find((r) => r[0] === A.file);
      check(row && row[1].startsWith('text/plain') && row[3] === 'v' + A.version,
        'the folder lists the file with type and version: ' + JSON.stringify(cells));
      check(cells.some((r) => r[0] === 'sub/' && r[1] === 'folder'), 'a subfolder is listed as a folder');
      await page.$$eval('table a', (as, f) => as.find((a) => a.textContent === f).click(), A.file);
      await page.waitForSelector('.code .line');
      const lines = await page.$$eval('.code .line', (ls) => ls.map((l) => [l.children[0].textContent, l.children[1].textContent]));
      const want = A.text.split('\n').filter((l, i, all) => i < all.length - 1 || l !== '');
      check(JSON.stringify(lines) === JSON.stringify(want.map((l, i) => [String(i + 1), l])),
        'the text with line numbers: ' + JSON.stringify(lines));
      await shot(page, 'text-' + width);
      const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      check(over <= 0, 'the file view fits ' + width + ' px (overflows by ' + over + ' px)');
      await go(page, '/v/' + A.vid + '/file?path=' + encodeURIComponent(A.image));
      await page.waitForSelector('img.preview');
      await page.waitForFunction(() => { const i = document.querySelector('img.preview'); return i.complete && i.naturalWidth > 0; });
      const src = await page.$eval('img.preview', (i) => i.getAttribute('src'));
      check(src.startsWith('/l/'), 'the image comes through a signed link: ' + src);
      await shot(page, 'image-' + width);
      await go(page, '/v/' + A.vid + '/file?path=' + encodeURIComponent(A.binary));
      await waitText(page, 'a.download', 'Download');
      check(!(await page.$('.code')), 'a binary file is not shown as text');
      await shot(page, 'binary-' + width);
      check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
    }
  },

  async upload(b) {
    const page = await newPage(b);
    const dir = mkdtempSync(join(profile, 'up-'));
    const local = join(dir, 'note.txt');
    writeFileSync(local, A.content);
    await signIn(page);
    await waitText(page, 'h1', 'Volumes');
    await go(page, '/v/' + A.vid + '/files?prefix=' + encodeURIComponent(A.prefix));
    await page.waitForSelector('#upfile');
    await (await page.$('#upfile')).uploadFile(local);
    await page.click('form.upload button[type=submit]');
    await waitText(page, '#status', 'Uploaded ' + A.prefix + 'note.txt');
    await waitText(page, 'table a', 'note.txt');
    await shot(page, 'done');
    // a stale page: the file changes after the page showed it, then the page uploads
    await go(page, '/v/' + A.vid + '/file?path=' + encodeURIComponent(A.prefix + 'note.txt'));
    await page.waitForSelector('#newver');
    const r = await apiCall('PUT', '/v1/volumes/' + A.vid + '/files/' + A.prefix + 'note.txt', A.other);
    check(r.status === 200, 'the other writer wrote: ' + r.status + ' ' + r.text);
    writeFileSync(local, 'from the stale page\n');
    await (await page.$('#newver')).uploadFile(local);
    await page.click('form.upload button[type=submit]');
    await waitText(page, '.notice', '412');
    const note = await text(page, '.notice');
    check(note.includes('version ' + r.json().version), 'the 412 names the current version: ' + note);
    await shot(page, 'stale');
    await page.click('.notice button.reload');
    await waitText(page, '.code .tx', A.other.trim());
    // delete from the folder, after the confirmation (accepted)
    await go(page, '/v/' + A.vid + '/files?prefix=' + encodeURIComponent(A.prefix));
    await page.waitForSelector('button[aria-label="Delete keep.txt"]');
    const w = await apiCall('PUT', '/v1/volumes/' + A.vid + '/files/' + A.prefix + 'keep.txt', 'newer\n');
    check(w.status === 200, 'keep.txt rewritten from outside: ' + w.status);
    await page.click('button[aria-label="Delete keep.txt"]');
    await waitText(page, '.notice', 'it is now at version ' + w.json().version);
    await shot(page, 'stale-delete');
    await page.click('.notice button.reload');
    await waitText(page, 'tbody', 'v' + w.json().version);
    await page.click('button[aria-label="Delete keep.txt"]');
    await waitText(page, '#status', "Deleted '" + A.prefix + "keep.txt'");
    await page.waitForFunction(() => !document.querySelector('button[aria-label="Delete keep.txt"]'));
    check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
  },

  async diff(b) {
    const page = await newPage(b);
    await signIn(page);
    await waitText(page, 'h1', 'Volumes');
    await go(page, '/v/' + A.vid + '/snapshots');
    await waitText(page, 'tbody code', A.s2);
    await waitText(page, 'tbody', 'stage:before');
    await shot(page, 'snapshots');
    await page.select('#difffrom', A.s1);
    await page.select('#diffto', A.s2);
    await page.click('form[aria-label=Compare] button');
    await page.waitForSelector('.diff');
    const sec = (id) => page.$eval('section[aria-labelledby=' + id + ']', (s) => s.textContent);
    check((await sec('added')).includes('added.txt'), 'added: ' + await sec('added'));
    check((await sec('removed')).includes('gone.txt'), 'removed: ' + await sec('removed'));
    check(!(await sec('added')).includes('same.txt') && !(await sec('changedh')).includes('same.txt'), 'an unchanged file is in no list');
    const del = await page.$$eval('.line.del .tx', (l) => l.map((x) => x.textContent));
    const add = await page.$$eval('.line.add .tx', (l) => l.map((x) => x.textContent));
    check(JSON.stringify(del) === JSON.stringify(['two']) && JSON.stringify(add) === JSON.stringify(['TWO', 'four']),
      'the text diff of changed.txt: -' + JSON.stringify(del) + ' +' + JSON.stringify(add));
    await shot(page, 'two-snapshots');
    await go(page, '/v/' + A.vid + '/diff?from=' + A.s2 + '&to=now');
    await waitText(page, 'h1', 'now');
    check((await sec('added')).includes('later.txt'), 'a snapshot against now: ' + await sec('added'));
    await shot(page, 'snapshot-now');
    // pin from the page
    await go(page, '/v/' + A.vid + '/snapshots');
    await page.waitForSelector('button[aria-label="Pin ' + A.s1 + '"]');
    await page.click('button[aria-label="Pin ' + A.s1 + '"]');
    await page.waitForSelector('button[aria-label="Unpin ' + A.s1 + '"]');
    check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
  },

  // Restore: the preview's counts, the before-restore snapshot, then Undo.
  async restore(b) {
    const page = await newPage(b);
    await signIn(page);
    await waitText(page, 'h1', 'Volumes');
    await go(page, '/v/' + A.vid + '/snapshots');
    await page.waitForSelector('button[aria-label="Restore ' + A.sid + '"]');
    await page.click('button[aria-label="Restore ' + A.sid + '"]');
    await page.waitForSelector('.preview .towrite');
    const counts = await page.$eval('.preview', (p) => [p.querySelector('.towrite').textContent,
      p.querySelector('.toremove').textContent]);
    check(counts[0] === String(A.write) && counts[1] === String(A.remove),
      'the preview says ' + A.write + ' written and ' + A.remove + ' removed: ' + JSON.stringify(counts));
    await shot(page, 'preview');
    await page.click('#restorego');
    await waitText(page, '#status', 'Restored ' + A.sid);
    const st = await text(page, '#status');
    check(st.includes(A.write + ' written, ' + A.remove + ' removed'), 'the restore did what the preview said: ' + st);
    await waitText(page, 'tbody', 'before-restore:' + A.sid);
    const row = await page.$$eval('tbody tr', (tr, sid) => tr.map((r) => [...r.cells].map((c) => c.textContent))
      .find((c) => c[4] === 'before-restore:' + sid), A.sid);
    check(row && row[5] === 'pinned', 'the before-restore snapshot is listed, pinned: ' + JSON.stringify(row));
    await page.waitForSelector('#undo');
    await shot(page, 'done');
    await page.click('#undo');
    await waitText(page, '.undone', 'Undone: restored');
    await shot(page, 'undone');
    check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
  },

  // A 10,000-file folder: 200 rows a page, Next/Previous, the filter; a diff paged.
  async big(b) {
    const rowsOf = (page) => page.$$eval('table[aria-label=Files] tbody tr', (tr) => tr.map((r) => r.cells[0].textContent));
    for (const width of [1280, 390]) {
      const page = await newPage(b, width);
      await signIn(page);
      await waitText(page, 'h1', 'Volumes');
      await go(page, '/v/' + A.vid + '/files?prefix=' + encodeURIComponent(A.prefix));
      await waitText(page, 'h1', A.prefix);
      await page.waitForSelector('table[aria-label=Files] tbody tr');
      const first = await rowsOf(page);
      const dels = await page.$$eval('button.danger', (bs) => bs.filter((x) => x.textContent === 'Delete').length);
      check(first.length === 200 && dels === 200, 'a page of 200 rows and 200 Delete buttons: ' + first.length + ', ' + dels);
      check(await page.$$eval('tr', (t) => t.length) <= 201, 'no more than a page of rows in the document');
      await waitText(page, '.pager .facts', 'Page 1');
      await shot(page, 'folder-' + width);
      const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      check(over <= 0, 'the folder fits ' + width + ' px (overflows by ' + over + ' px)');
      await page.$$eval('.pager button', (bs) => bs.find((x) => x.textContent === 'Next').click());
      await waitText(page, '.pager .facts', 'Page 2');
      await page.waitForFunction((f) => {
        const c = document.querySelector('table[aria-label=Files] tbody tr td');
        return c && c.textContent !== f;
      }, {}, first[0]);
      const second = await rowsOf(page);
      check(second.length === 200 && second[0] > first[199], 'page 2 follows page 1: ' + second[0] + ' after ' + first[199]);
      const reqs = page.requests.filter((u) => u.includes('/files?') && u.includes('cursor='));
      check(reqs.length >= 1 && reqs.every((u) => u.includes('limit=200')), 'pages are the API cursor pages of 200: ' + JSON.stringify(reqs));
      await page.$$eval('.pager button', (bs) => bs.find((x) => x.textContent === 'Previous').click());
      await waitText(page, '.pager .facts', 'Page 1');
      await page.waitForFunction((f) => {
        const c = document.querySelector('table[aria-label=Files] tbody tr td');
        return c && c.textContent === f;
      }, {}, first[0]);
      await page.type('#filter', 'needle');
      await page.keyboard.press('Enter');
      await waitText(page, '.facts', "names containing 'needle'");
      await page.waitForFunction((n) => document.querySelectorAll('table[aria-label=Files] tbody tr').length === n, {}, A.needles);
      const found = await rowsOf(page);
      check(found.every((n) => n.includes('needle')), 'only names with needle: ' + JSON.stringify(found));
      await shot(page, 'filter-' + width);
      check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
      await page.close();
    }
    const page = await newPage(b);
    await signIn(page);
    await waitText(page, 'h1', 'Volumes');
    await go(page, '/v/' + A.vid + '/diff?from=' + A.s1 + '&to=now');
    await waitText(page, '#added', 'Added (' + A.added + ')');
    const addedRows = () => page.$$eval('section[aria-labelledby=added] tbody tr', (t) => t.length);
    check(await addedRows() === 200, 'the added list shows 200 rows at once: ' + await addedRows());
    await waitText(page, 'section[aria-labelledby=added] .pager', '1–200 of ' + A.added);
    await waitText(page, '#removed', 'Removed (1)');
    await shot(page, 'diff');
    await page.$$eval('section[aria-labelledby=added] .pager button', (bs) => bs.find((x) => x.textContent === 'Next').click());
    await waitText(page, 'section[aria-labelledby=added] .pager', '201–' + A.added + ' of ' + A.added);
    check(await addedRows() === A.added - 200, 'the second page of the added list');
    await page.type('#difffilter', 'added-01');
    await page.keyboard.press('Enter');
    await waitText(page, '#added', 'Added (10)');
    await waitText(page, '#removed', 'Removed (0)');
    await shot(page, 'diff-filter');
    check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
  },

  // A text file over 1 MiB: its first 64 KiB (one Range request), how much is not shown.
  async head(b) {
    for (const width of [1280, 390]) {
      const page = await newPage(b, width);
      const gets = [];
      page.on('request', (r) => {
        if (r.method() === 'GET' && r.url().includes('/files/' + A.path)) gets.push(r.headers().range || 'whole');
      });
      await signIn(page);
      await waitText(page, 'h1', 'Volumes');
      await go(page, '/v/' + A.vid + '/file?path=' + encodeURIComponent(A.path));
      await page.waitForSelector('.code .line');
      await waitText(page, '.headonly', 'Showing the first 64 KiB of');
      const note = await text(page, '.headonly');
      check(note.includes((A.size - A.head) + ' bytes) not shown'), 'says how much is not shown: ' + note);
      check(await page.$('.headonly a.download-whole'), 'a link to download the whole file');
      const chars = await page.$eval('.code', (c) => c.textContent.length);
      check(chars < A.head + 20000, 'only the head is in the page: ' + chars + ' characters');
      const firstLine = await page.$eval('.code .line .tx', (t) => t.textContent);
      check(firstLine === A.first, 'the first line: ' + firstLine);
      check(gets.length >= 1 && gets.every((g) => g === 'bytes=0-' + (A.head - 1)), 'only Range requests of the head: ' + JSON.stringify(gets));
      await shot(page, 'head-' + width);
      check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
      await page.close();
    }
  },

  // Dark mode: prefers-color-scheme: dark changes the page's colours.
  async dark(b) {
    const colours = (page) => page.evaluate(() => {
      const cs = (e) => getComputedStyle(e);
      const t = document.querySelector('table');
      return { body: cs(document.body).backgroundColor, fg: cs(document.body).color, table: t ? cs(t).backgroundColor : '' };
    });
    const page = await newPage(b);
    await signIn(page);
    await waitText(page, 'h1', 'Volumes');
    await go(page, '/v/' + A.vid + '/files?prefix=notes/');
    await page.waitForSelector('table');
    const light = await colours(page);
    for (const width of [1280, 390]) {
      await page.setViewport({ width, height: 860 });
      await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
      await page.waitForFunction((l) => getComputedStyle(document.body).backgroundColor !== l, {}, light.body);
      const dark = await colours(page);
      check(dark.body !== light.body && dark.fg !== light.fg && dark.table !== light.table,
        'dark mode changes background, text and tables: ' + JSON.stringify({ light, dark }));
      const lum = (c) => { const m = c.match(/\d+/g).map(Number); return m[0] + m[1] + m[2]; };
      check(lum(dark.body) < lum(light.body) && lum(dark.fg) > lum(dark.body), 'dark is dark, text light: ' + JSON.stringify(dark));
      await shot(page, 'dark-' + width);
    }
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
    await page.waitForFunction((l) => getComputedStyle(document.body).backgroundColor === l, {}, light.body);
    check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
  },

  // A PDF: pages as <img> of PNGs cofferd renders; never a PDF viewer in the page.
  async pdf(b) {
    for (const width of [1280, 390]) {
      const page = await newPage(b, width);
      const gets = [];
      page.on('request', (r) => { if (r.method() === 'GET' && r.url().includes('.pdf')) gets.push(r.url()); });
      await signIn(page);
      await waitText(page, 'h1', 'Volumes');
      await go(page, '/v/' + A.vid + '/file?path=' + encodeURIComponent(A.path));
      await page.waitForSelector('img.page');
      await page.waitForFunction(() => { const i = document.querySelector('img.page'); return i.complete && i.naturalWidth > 0; });
      const img = await page.$eval('img.page', (i) => ({ src: i.getAttribute('src'), w: i.naturalWidth, h: i.naturalHeight, page: i.dataset.page }));
      check(img.src.startsWith('blob:') && img.page === '1' && img.w === 1224 && img.h === 1584, 'page 1 as a PNG: ' + JSON.stringify(img));
      await waitText(page, '.pageof', 'Page 1 of 2');
      const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      check(over <= 0, 'the PDF view fits ' + width + ' px (overflows by ' + over + ' px)');
      await shot(page, 'page1-' + width);
      await page.$$eval('.pdf button', (bs) => bs.find((x) => x.textContent === 'Next page').click());
      await page.waitForFunction(() => { const i = document.querySelector('img.page'); return i && i.dataset.page === '2' && i.complete && i.naturalWidth > 0; });
      await waitText(page, '.pageof', 'Page 2 of 2');
      check(await page.$eval('img.page', (i) => i.naturalWidth) === 1600, 'page 2 is landscape, 1,600 px wide');
      check(!(await page.$('iframe, embed, object')), 'no iframe, embed or object: never the PDF inline');
      check(gets.length === 2 && gets.every((u) => u.includes('preview=page')),
        'the PDF bytes are never fetched, only its pages: ' + JSON.stringify(gets));
      await shot(page, 'page2-' + width);
      check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
      await page.close();
    }
    const page = await newPage(b);
    await signIn(page);
    await waitText(page, 'h1', 'Volumes');
    await go(page, '/v/' + A.vid + '/file?path=' + encodeURIComponent(A.bad));
    await waitText(page, '.pdferror', '415 unsupported_media_type');
    await shot(page, 'bad');
    check(!(await page.$('img.page')), 'no image of a PDF that does not render');
  },

  async live(b) {
    const page = await newPage(b);
    await signIn(page);
    await waitText(page, 'h1', 'Volumes');
    await go(page, '/v/' + A.vid + '/changes');
    await waitText(page, '.live', 'Following live: up to seq');
    await waitText(page, 'tbody', 'first.txt');
    await new Promise((r) => setTimeout(r, 1500)); // the page is now waiting in a long-poll
    const r = await apiCall('PUT', '/v1/volumes/' + A.vid + '/files/arrived.txt', 'hello\n');
    check(r.status === 201, 'written from outside: ' + r.status);
    await waitText(page, 'tbody tr:first-child', 'arrived.txt');
    const polls = page.requests.filter((u) => u.includes('/changes?') && u.includes('wait=25'));
    check(polls.length >= 1, 'the page long-polls (wait=25): ' + JSON.stringify(page.requests.slice(-5)));
    await shot(page, 'arrived');
    check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
  },

  async agent(b) {
    const page = await newPage(b);
    await signIn(page);
    await waitText(page, 'h1', 'Volumes');
    await go(page, '/agents');
    await page.waitForSelector('#agentid');
    await page.type('#agentid', A.agent);
    await page.keyboard.press('Enter');
    await waitText(page, 'h1', 'Agent ' + A.agent);
    await waitText(page, 'table[aria-label=Mounts]', A.mountPath);
    await page.type('#runid', A.run);
    await page.keyboard.press('Enter');
    await waitText(page, 'table[aria-label="Files written"]', A.written);
    await waitText(page, 'table[aria-label="Presented files"]', A.caption);
    await shot(page, 'agent');
    check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
  },

  // The agent list: GET /v1/agents in pages of 200, filtered by id prefix.
  async agent_list(b) {
    const page = await newPage(b);
    await signIn(page);
    await waitText(page, 'h1', 'Volumes');
    await go(page, '/agents');
    await page.waitForSelector('#agentprefix');
    const ids = () => page.$$eval('table[aria-label=Agents] tbody tr', (tr) => tr.map((r) => r.cells[0].textContent));
    await page.type('#agentprefix', A.prefix);
    await page.keyboard.press('Enter');
    await page.waitForFunction((p) => {
      const c = document.querySelector('table[aria-label=Agents] tbody tr td');
      return c && c.textContent.startsWith(p);
    }, {}, A.prefix);
    let got = await ids();
    check(got.length === 200, 'a page of 200: ' + got.length);
    check(got[0] === A.first && got.every((x) => x.startsWith(A.prefix)), 'the filter: ' + got.slice(0, 3));
    await page.$$eval('.pager button', (bs) => bs.find((x) => x.textContent === 'Next').click());
    await page.waitForFunction((n) => document.querySelectorAll('table[aria-label=Agents] tbody tr').length === n, {}, A.total - 200);
    got = await ids();
    check(got[got.length - 1] === A.last, 'the last agent on page 2: ' + got[got.length - 1]);
    await shot(page, 'agent-list');
    await page.$$eval('.pager button', (bs) => bs.find((x) => x.textContent === 'Previous').click());
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label=Agents] tbody tr').length === 200);
    check((await ids())[0] === A.first, 'Previous: the first page again');
    await page.$$eval('table[aria-label=Agents] tbody tr', (tr) => tr[1].cells[0].querySelector('a').click());
    await waitText(page, 'h1', 'Agent ' + A.second);
    check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
  },

  async relay_log(b) {
    const page = await newPage(b);
    await signIn(page);
    await waitText(page, 'h1', 'Volumes');
    await go(page, '/relay');
    await waitText(page, 'table a', A.uid);
    await shot(page, 'sessions');
    await page.$$eval('table a', (as, u) => as.find((a) => a.textContent === u).click(), A.uid);
    await waitText(page, 'h1', 'Relay session ' + A.uid);
    await waitText(page, 'table[aria-label="Blocked writes"]', A.rule);
    await waitText(page, 'table[aria-label="Session log"]', 'blocked');
    const dd = await page.$$eval('dl dd', (d) => d.map((x) => x.textContent));
    check(dd.includes('1 / ' + A.reads) && dd.includes('1 / ' + A.writes), 'counts against limits: ' + JSON.stringify(dd));
    await shot(page, 'log');
    await page.$$eval('button', (bs) => bs.find((x) => x.textContent === 'Abort this session').click());
    await waitText(page, '#status', 'aborted');
    await waitText(page, 'dd', 'ended');
    await shot(page, 'aborted');
    check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
  },

  // Relay log entries a live client and an agent shaped (issue 32): markup in the
  // client's name and in a blocked write's path shows as text; nothing of it runs.
  async relay_log_markup(b) {
    const page = await newPage(b);
    let pwned = false;
    page.on('request', (r) => { if (r.url().includes('pwned')) pwned = true; });
    await signIn(page);
    await waitText(page, 'h1', 'Volumes');
    await go(page, '/relay/' + encodeURIComponent(A.uid));
    await waitText(page, 'h1', 'Relay session ' + A.uid);
    await waitText(page, 'table[aria-label="Session log"]', A.client);
    await waitText(page, 'table[aria-label="Blocked writes"]', A.path);
    const injected = await page.$$eval('img, script:not([src]), iframe, svg',
      (els) => els.filter((e) => e.closest('table')).length);
    check(injected === 0, 'no element made from the log: ' + injected);
    check(!(await page.evaluate(() => window.__pwned)), 'no script of the log ran');
    await new Promise((r) => setTimeout(r, 500));
    check(!pwned, 'no request made by markup of the log');
    await shot(page, 'markup');
    check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
  },

  // A file as a snapshot had it: signed links have no snapshot (nor may a read-only key
  // make one), so raster images come as blob: URLs typed as images, an SVG as its source
  // only, downloads as application/octet-stream blobs.
  async snapshot_view(b) {
    const page = await newPage(b);
    await signIn(page);
    await waitText(page, 'h1', 'Volumes');
    const at = (p) => '/v/' + A.vid + '/file?path=' + encodeURIComponent(p) + '&snapshot=' + A.sid;
    await go(page, at(A.image));
    await page.waitForSelector('img.preview');
    await page.waitForFunction(() => { const i = document.querySelector('img.preview'); return i.complete && i.naturalWidth > 0; });
    check((await page.$eval('img.preview', (i) => i.getAttribute('src'))).startsWith('blob:'), 'a raster image as a blob: URL');
    await go(page, at(A.svg));
    await waitText(page, '.facts', 'as snapshot ' + A.sid);
    await page.waitForSelector('.code .line');
    check(!(await page.$('img.preview')), 'without a link an SVG is not shown as an image');
    check(!(await page.$('#newver')), 'no upload form on a snapshot view');
    await page.click('a.download');
    await page.waitForFunction(() => document.querySelector('a.download').dataset.ready === '1');
    const href = await page.$eval('a.download', (a) => a.getAttribute('href'));
    check(href.startsWith('blob:'), 'the download is a blob: URL: ' + href);
    // the console's CSP refuses fetch(blob:); a page of this origin without it reads the type
    const probe = await newPage(b);
    await probe.setBypassCSP(true);
    await probe.goto(A.url + '/console', { waitUntil: 'load' });
    const type = await probe.evaluate((u) => fetch(u).then((r) => r.blob()).then((x) => x.type), href);
    await probe.close();
    check(type === 'application/octet-stream', 'typed application/octet-stream, not ' + type);
    await go(page, at(A.text));
    await waitText(page, '.code .tx', A.oldText);
    await shot(page, 'text');
    check(await page.evaluate(() => window.__pwned) === undefined, 'the SVG script did not run');
    check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
  },

  // A key bound to an agent: the volumes page says why it shows nothing; the agent opens.
  async agentkey(b) {
    const page = await newPage(b);
    await signIn(page, A.agentKey);
    await waitText(page, 'main', '403 forbidden');
    await go(page, '/agents');
    await waitText(page, '#agentlist', 'may not list agents');
    await go(page, '/agents/' + A.agent);
    await waitText(page, 'h1', 'Agent ' + A.agent);
    await shot(page, 'agent');
  },

  // The changes list's who column (the whole `by` in the tooltip; markup in a run id
  // is text) and its filter (the feed's runId/callId/agent/keyId parameters).
  async who_filter(b) {
    for (const width of [1280, 390]) {
      const page = await newPage(b, width);
      let pwned = false;
      page.on('request', (r) => { if (PWNED.test(new URL(r.url()).pathname)) pwned = true; });
      await signIn(page);
      await waitText(page, 'h1', 'Volumes');
      await go(page, '/v/' + A.vid + '/changes');
      await waitText(page, 'tbody', A.plain);
      await waitText(page, 'tbody .who', 'run ' + A.run.slice(0, 10));
      const rows = () => page.$$eval('table[aria-label=Changes] tbody tr', (tr) => tr.map((r) => ({
        path: r.cells[2].textContent, who: r.cells[5].textContent, title: r.cells[5].firstChild.getAttribute('title') })));
      let got = await rows();
      const plain = got.find((r) => r.path === A.plain);
      check(plain && plain.who === 'http · key ' + A.keyId, 'a key\'s write: via and key: ' + JSON.stringify(plain));
      const tool = got.find((r) => r.path === A.runPaths[0]);
      check(tool && tool.who.startsWith('tool · agent ' + A.agent + ' · run ') && tool.who.includes('<img'),
        'a tool write: via, agent and run (as text): ' + JSON.stringify(tool));
      check(tool.title.includes('runId: ' + A.run) && tool.title.includes('keyId: ' + A.keyId) && tool.title.includes('tool: write'),
        'the whole `by` in the tooltip: ' + tool.title);
      check(await page.evaluate(async () => (await import('/console/history.js')).whoText(null)) === '—',
        'by: null shows as —');
      // the filter: the run's changes only, then an agent, then a call id nothing has
      await page.type('#f-runId', A.run);
      await page.keyboard.press('Enter');
      await waitText(page, '.filtered', 'runId');
      await page.waitForFunction((n) => document.querySelectorAll('table[aria-label=Changes] tbody tr').length === n
        && document.querySelector('.live').textContent.includes('up to seq'), {}, A.runPaths.length);
      got = await rows();
      check(JSON.stringify(got.map((r) => r.path).sort()) === JSON.stringify([...A.runPaths].sort()),
        'the run filter keeps the run\'s changes: ' + JSON.stringify(got));
      check(page.requests.some((u) => u.includes('/changes?') && u.includes('runId=' + encodeURIComponent(A.run).replace(/%20/g, '+').slice(0, 8))),
        'the filter is the feed\'s runId parameter');
      const injected = await page.$$eval('main img, main script:not([src]), main iframe, main svg', (e) => e.length);
      check(injected === 0, 'no element made from a `by` field: ' + injected);
      const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      check(over <= 0, 'the changes page fits ' + width + ' px (overflows by ' + over + ' px)');
      await shot(page, 'run-' + width);
      await go(page, '/v/' + A.vid + '/changes?agent=' + encodeURIComponent(A.agent));
      await page.waitForFunction((n) => document.querySelectorAll('table[aria-label=Changes] tbody tr').length === n
        && document.querySelector('.live').textContent.includes('up to seq'), {}, A.runPaths.length);
      await go(page, '/v/' + A.vid + '/changes?keyId=' + encodeURIComponent(A.keyId) + '&callId=nosuchcall');
      await waitText(page, '.filtered', 'nosuchcall');
      await waitText(page, '.live', 'up to seq');
      check(await page.$$eval('table[aria-label=Changes] tbody tr', (t) => t.length) === 0, 'no change of an unknown call');
      check(await page.$eval('#f-callId', (i) => i.value) === 'nosuchcall', 'the form shows the filter');
      await shot(page, 'none-' + width);
      check(!(await page.evaluate(() => window.__pwned)) && !pwned, 'no markup of a `by` ran');
      check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
      await page.close();
    }
  },

  // A file's history: from the file view, newest first, paged by the API's cursor;
  // each version readable (?seq= of the version); a path with markup is text.
  async history(b) {
    for (const width of [1280, 390]) {
      const page = await newPage(b, width);
      let pwned = false;
      page.on('request', (r) => { if (PWNED.test(new URL(r.url()).pathname)) pwned = true; });
      await signIn(page);
      await waitText(page, 'h1', 'Volumes');
      await go(page, '/v/' + A.vid + '/file?path=' + encodeURIComponent(A.path));
      await page.waitForSelector('a.histlink');
      await page.click('a.histlink');
      await waitText(page, 'h1', 'History of ' + A.path);
      const cells = () => page.$$eval('table[aria-label=Versions] tbody tr', (tr) => tr.map((r) => [...r.cells].map((c) => c.textContent)));
      await page.waitForFunction((n) => document.querySelectorAll('table[aria-label=Versions] tbody tr').length === n, {}, A.page);
      let got = await cells();
      check(got[0][0] === 'v' + A.versions && got[0][5].startsWith('http · key'),
        'newest first, with who: ' + JSON.stringify(got[0]));
      check(got.every((r, i) => i === 0 || Number(r[1]) < Number(got[i - 1][1])), 'seqs fall down the page');
      await shot(page, 'page1-' + width);
      await page.click('#older');
      await page.waitForFunction((n) => document.querySelectorAll('table[aria-label=Versions] tbody tr').length === n, {}, A.versions);
      got = await cells();
      check(got[got.length - 1][0] === 'v1' && got[got.length - 1][1] === String(A.firstSeq), 'the oldest version last: ' + JSON.stringify(got[got.length - 1]));
      await waitText(page, '.pager', 'every version');
      await page.click('a[aria-label="Read version ' + A.read + '"]');
      await waitText(page, '.facts', 'as it was at seq');
      await waitText(page, '.code .tx', A.readText);
      check(!(await page.$('#newver')), 'no upload form on an old version');
      const injected = await page.$$eval('main img, main script:not([src]), main iframe, main svg', (e) => e.length);
      check(injected === 0, 'no element made from the path: ' + injected);
      const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      check(over <= 0, 'the version fits ' + width + ' px (overflows by ' + over + ' px)');
      await shot(page, 'version-' + width);
      check(!(await page.evaluate(() => window.__pwned)) && !pwned, 'no markup of the path ran');
      check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
      await page.close();
    }
  },

  // Merge a fork: a dry run (what merges, the conflicts with their markers as text),
  // a write meanwhile refused (ifSeq), the dry run again, a choice per conflict, Merge.
  async merge(b) {
    const page = await newPage(b);
    let pwned = false;
    page.on('request', (r) => { if (PWNED.test(new URL(r.url()).pathname)) pwned = true; });
    await signIn(page);
    await waitText(page, 'h1', 'Volumes');
    await go(page, '/v/' + A.vid + '/files');
    await page.waitForSelector('a.tab');
    await page.$$eval('a.tab', (as) => as.find((a) => a.textContent === 'Merge').click());
    await page.waitForSelector('#mergefrom');
    // a volume with no common base: the dry run shows the API's 400, and offers nothing to do
    await page.select('#mergefrom', A.unrelated);
    await page.click('form[aria-label="Merge from"] button[type=submit]');
    await waitText(page, '#mergebox .notice.error', '400');
    check(!(await page.$('#mergego')), 'no Merge button without a dry run');
    await page.waitForSelector('#mergefrom');
    await page.select('#mergefrom', A.fork);
    await page.click('form[aria-label="Merge from"] button[type=submit]');
    await page.waitForSelector('.mergeplan');
    const plan = await page.$eval('.mergeplan', (p) => ({
      would: [...p.querySelectorAll('table[aria-label="Would change"] tbody tr')].map((r) => r.cells[0].textContent + ':' + r.cells[1].textContent),
      conflicts: [...p.querySelectorAll('.conflict .cpath')].map((c) => c.textContent),
      marks: [...p.querySelectorAll('.conflict .code .tx')].map((t) => t.textContent) }));
    check(JSON.stringify(plan.would) === JSON.stringify([A.added + ':theirs']), 'what would merge: ' + JSON.stringify(plan.would));
    check(JSON.stringify(plan.conflicts) === JSON.stringify([A.conflict]), 'the conflict: ' + JSON.stringify(plan.conflicts));
    check(plan.marks.includes('<<<<<<< ours') && plan.marks.includes('>>>>>>> theirs') && plan.marks.some((l) => l.includes('<script>')),
      'the markers and the text, as text: ' + JSON.stringify(plan.marks));
    check(!(await page.$('main script:not([src]), main img, main iframe')), 'no element made from the merged text');
    await shot(page, 'dryrun-1280');
    await page.setViewport({ width: 390, height: 860 });
    const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(over <= 0, 'the dry run fits 390 px (overflows by ' + over + ' px)');
    await shot(page, 'dryrun-390');
    await page.setViewport({ width: 1280, height: 860 });
    // a write meanwhile: Merge is refused (ifSeq), nothing merged, a clear message
    const w = await apiCall('PUT', '/v1/volumes/' + A.vid + '/files/meanwhile.txt', 'meanwhile\n');
    check(w.status === 201, 'written meanwhile: ' + w.status);
    await page.click('#mergego');
    await waitText(page, '.changed', 'changed since the dry run');
    await waitText(page, '.changed', 'now at seq ' + w.json().seq);
    await shot(page, 'changed');
    await page.click('.changed button.again');
    await page.waitForSelector('.mergeplan');
    await page.click('.conflict input[value=theirs]');
    await page.click('#mergego');
    await waitText(page, '.mergedone', 'Merged');
    const done = await text(page, '.mergedone');
    check(done.includes('as seq ') && done.includes(A.added) && done.includes(A.conflict), 'the result: seq and paths: ' + done);
    await shot(page, 'done-1280');
    await page.setViewport({ width: 390, height: 860 });
    await shot(page, 'done-390');
    check(!(await page.evaluate(() => window.__pwned)) && !pwned, 'no merged text ran');
    check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
  },

  // Revert a run from the changes list (dry run, a conflict settled), then one seq.
  async revert(b) {
    const page = await newPage(b);
    let pwned = false;
    page.on('request', (r) => { if (PWNED.test(new URL(r.url()).pathname)) pwned = true; });
    await signIn(page);
    await waitText(page, 'h1', 'Volumes');
    await go(page, '/v/' + A.vid + '/changes');
    await clickLabel(page, 'Revert run ' + A.run);
    await page.waitForSelector('.revertplan');
    const plan = await page.$eval('.revertplan', (p) => ({ h: p.querySelector('h2').textContent,
      would: [...p.querySelectorAll('table[aria-label="Would change"] tbody tr')].map((r) => r.cells[0].textContent),
      conflicts: [...p.querySelectorAll('.conflict .cpath')].map((c) => c.textContent) }));
    check(plan.h.includes(A.run), 'the plan names the run as text: ' + plan.h);
    check(JSON.stringify(plan.would) === JSON.stringify([A.clean]) && JSON.stringify(plan.conflicts) === JSON.stringify([A.conflict]),
      'the dry run: ' + JSON.stringify(plan));
    check(!(await page.$('main img, main script:not([src])')), 'no element made from the run id');
    await shot(page, 'dryrun-1280');
    await page.setViewport({ width: 390, height: 860 });
    const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(over <= 0, 'the dry run fits 390 px (overflows by ' + over + ' px)');
    await shot(page, 'dryrun-390');
    await page.setViewport({ width: 1280, height: 860 });
    await page.click('.conflict input[value=theirs]');
    await page.click('#revertgo');
    await waitText(page, '.revertdone', 'Reverted run');
    check((await text(page, '.revertdone')).includes(A.conflict), 'the result lists the paths');
    await shot(page, 'run-done');
    // one seq: the dry run, then Revert
    await clickLabel(page, 'Revert seq ' + A.seq);
    await waitText(page, '.revertplan h2', 'Revert seq ' + A.seq);
    await waitText(page, '.revertplan table', A.seqPath);
    await page.click('#revertgo');
    await waitText(page, '.revertdone', 'Reverted seq ' + A.seq);
    await waitText(page, 'tbody .who', 'revert');
    await shot(page, 'seq-done');
    check(!(await page.evaluate(() => window.__pwned)) && !pwned, 'no markup of the run id ran');
    check(pageErrors(page).length === 0, 'no script error: ' + pageErrors(page).join('; '));
  },

  // A stored HTML and SVG with script, viewed every way the console offers: the
  // script must never run (it would set a global or request /pwned-...).
  async stored_script(b) {
    const page = await newPage(b);
    await signIn(page);
    await waitText(page, 'h1', 'Volumes');
    for (const p of A.paths) {
      await go(page, '/v/' + A.vid + '/file?path=' + encodeURIComponent(p));
      await waitText(page, 'h1', p.split('/').pop());
      await page.waitForSelector('a.download');
      if (p.endsWith('.svg')) {
        await page.waitForSelector('img.preview');
        await page.waitForFunction(() => document.querySelector('img.preview').complete);
      }
      const src = await page.$$eval('.code .tx', (l) => l.map((x) => x.textContent).join('\n'));
      check(src.includes('<script>'), p + ' is shown as its source text: ' + src.slice(0, 200));
      check(!(await page.$('.fileview script, .fileview iframe, .fileview object, .fileview embed')),
        p + ': no script, iframe, object or embed element in the page');
      await shot(page, p.replace(/\W+/g, '_'));
      // the download link, opened as a page of its own (what a user may do)
      await page.click('a.download');
      await page.waitForFunction(() => document.querySelector('a.download').dataset.ready === '1');
      const href = await page.$eval('a.download', (a) => a.getAttribute('href'));
      check(href.startsWith('/l/'), 'the download is a signed link: ' + href);
      const other = await newPage(b);
      try { await other.goto(A.url + href, { waitUntil: 'load', timeout: 10000 }); } catch (_) { /* a download aborts the navigation */ }
      await new Promise((r) => setTimeout(r, 500));
      const pw = await other.evaluate(() => window.__pwned).catch(() => undefined);
      check(pw === undefined, p + ' opened by its link ran its script');
      page.requests.push(...other.requests);
      await other.close();
    }
    // a volume file named console/... is never served as the console
    const own = await (await fetch(A.url + '/console/app.js')).text();
    check(!own.includes('__pwned'), "/console/app.js is the console's, not the volume file console/app.js");
    await new Promise((r2) => setTimeout(r2, 1000));
    const pwned = await page.evaluate(() => window.__pwned);
    check(pwned === undefined, 'the stored script set window.__pwned in the console');
    const hits = page.requests.filter((u) => u.includes('/pwned'));
    check(hits.length === 0, 'the stored script made a request: ' + JSON.stringify(hits));
  },
};

const fn = scenarios[name];
if (!fn) { process.stderr.write('no scenario ' + name + '\n'); process.exit(2); }
const browser = await launch();
let code = 0;
try {
  await fn(browser);
} catch (e) {
  process.stderr.write((e instanceof Failed ? 'failed: ' : 'error: ') + (e && e.stack || e) + '\n');
  code = 1;
} finally {
  await browser.close().catch(() => {});
  rmSync(profile, { recursive: true, force: true });
}
process.exit(code);
