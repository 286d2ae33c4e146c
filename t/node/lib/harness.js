'use strict';
// A tiny TAP producer for node client tests, so prove can run them:
//   prove --exec node t/node/*.test.js
// Usage:
//   const t = require('./lib/harness');
//   t.run(async () => {
//     t.plan(2);                       // optional; else the plan is printed at the end
//     const base = t.baseUrl();        // LLM_BASE_URL, e.g. http://127.0.0.1:1984
//     t.is(await f(), 42, 'answer');
//     t.deepEqual(obj, { a: 1 }, 'shape');
//   });
// Failures print their details as '#' lines on stderr (like Test::More), and
// the exit status is the number of failures (255 for a wrong plan), so a
// driver can trust the status alone.

const util = require('node:util');
const assert = require('node:assert');

const state = { planned: null, count: 0, failed: 0, finished: false };

function out(line) {
  process.stdout.write(line + '\n');
}

function diag(msg) {
  for (const line of String(msg).split('\n')) process.stderr.write('# ' + line + '\n');
}

function note(msg) {
  for (const line of String(msg).split('\n')) out('# ' + line);
}

function show(v) {
  return util.inspect(v, { depth: 6, breakLength: Infinity });
}

function plan(n) {
  if (state.planned !== null || state.count > 0) throw new Error('plan() must come first, once');
  state.planned = n;
  out('1..' + n);
}

function ok(cond, name) {
  state.count++;
  const pass = !!cond;
  if (!pass) state.failed++;
  const label = name ? ' - ' + String(name).replace(/#/g, '\\#').replace(/\n/g, ' ') : '';
  out(`${pass ? 'ok' : 'not ok'} ${state.count}${label}`);
  if (!pass) diag(`  Failed test${name ? " '" + name + "'" : ''}`);
  return pass;
}

const pass = (name) => ok(true, name);

function fail(name, why) {
  const r = ok(false, name);
  if (why !== undefined) diag(why instanceof Error ? why.stack : String(why));
  return r;
}

function is(got, want, name) {
  const r = ok(Object.is(got, want), name);
  if (!r) diag(`         got: ${show(got)}\n    expected: ${show(want)}`);
  return r;
}

function isnt(got, unwanted, name) {
  const r = ok(!Object.is(got, unwanted), name);
  if (!r) diag(`         got: ${show(got)}\n    expected: anything else`);
  return r;
}

function like(str, re, name) {
  const r = ok(typeof str === 'string' && re.test(str), name);
  if (!r) diag(`    ${show(str)}\n    doesn't match ${re}`);
  return r;
}

function deepEqual(got, want, name) {
  try {
    assert.deepStrictEqual(got, want);
    return ok(true, name);
  } catch (e) {
    ok(false, name);
    diag(e.message);
    return false;
  }
}

// Awaits fn and checks that it rejects (optionally with a matching message).
async function rejects(fn, re, name) {
  try {
    await fn();
  } catch (e) {
    if (!re) return ok(true, name);
    const r = ok(re.test(String(e && e.message)), name);
    if (!r) diag(`    error ${show(String(e && e.message))}\n    doesn't match ${re}`);
    return r;
  }
  return fail(name, 'no error was thrown');
}

function skip(why, n = 1) {
  for (let i = 0; i < n; i++) {
    state.count++;
    out(`ok ${state.count} # skip ${why}`);
  }
}

function skipAll(why) {
  out('1..0 # SKIP ' + why);
  state.finished = true;
  process.exit(0);
}

function bailOut(why) {
  out('Bail out! ' + why);
  state.finished = true;
  process.exit(255);
}

function done() {
  if (state.finished) return;
  state.finished = true;
  if (state.planned === null) out('1..' + state.count);
  let code = Math.min(state.failed, 254);
  if (state.planned !== null && state.planned !== state.count) {
    diag(`Looks like you planned ${state.planned} tests but ran ${state.count}.`);
    code = 255;
  }
  process.exitCode = code;
}

// Runs an async test body; an exception becomes a failed test.
async function run(fn) {
  try {
    await fn();
  } catch (e) {
    fail('no exception', e);
  } finally {
    done();
  }
}

// The server under test, from LLM_BASE_URL (no trailing slash).  Without
// it the whole script is skipped, unless a fallback is given.
function baseUrl(fallback) {
  const url = process.env.LLM_BASE_URL || fallback;
  if (!url) skipAll('LLM_BASE_URL is not set (run me through a .t driver or export it)');
  return url.replace(/\/+$/, '');
}

process.on('beforeExit', done);

module.exports = {
  plan, ok, pass, fail, is, isnt, like, deepEqual, rejects,
  skip, skipAll, bailOut, diag, note, done, run, baseUrl,
};
