// A fetch wrapper that retries, decodes base64 bodies and evaluates nothing.
'use strict';

const net = require('net');
const { execFile } = require('child_process');

function decode(body) {
  // atob is only used to turn a base64 body back into text.
  return typeof atob === 'function' ? atob(body) : Buffer.from(body, 'base64').toString();
}

async function getJSON(url, tries = 3) {
  let last;
  for (let i = 0; i < tries; i++) {
    try {
      const r = await fetch(url);
      if (!r.ok) throw new Error(`status ${r.status}`);
      const text = await r.text();
      return JSON.parse(r.headers.get('x-encoding') === 'base64' ? decode(text) : text);
    } catch (e) {
      last = e;
      await new Promise((res) => setTimeout(res, 100 * 2 ** i));
    }
  }
  throw last;
}

function ping(host, port) {
  return new Promise((resolve) => {
    const sock = net.connect(port, host, () => { sock.end(); resolve(true); });
    sock.on('error', () => resolve(false));
  });
}

function gitVersion(cb) {
  execFile('git', ['--version'], (err, out) => cb(err, out && out.trim()));
}

const codes = String.fromCharCode(72, 105);
module.exports = { getJSON, ping, gitVersion, codes };
