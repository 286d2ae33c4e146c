'use strict';
// The requests a client made, from the access log t/clients/agents.t writes
// (logs/clients.log: "$status $method $uri $length $body", JSON-escaped):
//   const log = require('./lib/log');
//   const mark = log.mark();          // before the client runs
//   ... run it ...
//   log.check(t, mark, 'codex');      // one test: no 4xx/5xx since mark
//   log.requests(mark)                // [{status, method, uri, body}]
const fs = require('node:fs');
const path = require('node:path');

function file() {
  return path.join(path.dirname(process.env.LLM_ERROR_LOG || '.'), 'clients.log');
}

function mark() {
  try { return fs.statSync(file()).size; } catch (e) { return 0; }
}

function requests(since) {
  let text = '';
  try {
    const fd = fs.openSync(file(), 'r');
    const size = fs.fstatSync(fd).size;
    const buf = Buffer.alloc(Math.max(0, size - since));
    fs.readSync(fd, buf, 0, buf.length, since);
    fs.closeSync(fd);
    text = buf.toString('utf8');
  } catch (e) { /* no log yet */ }
  return text.split('\n').filter(Boolean).map((line) => {
    const m = /^(\d{3}) (\S+) (\S+) (\d+) ?(.*)$/.exec(line) || [];
    let body = m[5] || '';
    // escape=json wrote the body as the inside of a JSON string
    try { body = JSON.parse(JSON.parse('"' + body + '"')); } catch (e) { /* not JSON */ }
    return { status: Number(m[1]), method: m[2], uri: m[3], length: Number(m[4]), body };
  });
}

function check(t, since, who) {
  const all = requests(since);
  const bad = all.filter((r) => !(r.status >= 200 && r.status < 400));
  const summary = all.map((r) => `${r.status} ${r.method} ${r.uri}`);
  t.note(`${who}: ${all.length} requests: ${[...new Set(summary)].join(', ')}`);
  return t.ok(all.length > 0 && bad.length === 0,
              `${who}: every request succeeded` + (bad.length ? ': ' + bad.map((r) =>
                `${r.status} ${r.method} ${r.uri} ${typeof r.body === 'string' ? r.body.slice(0, 200) : ''}`).join('; ') : ''));
}

module.exports = { mark, requests, check };
