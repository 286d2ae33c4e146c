'use strict';
// Running an agent CLI from t/clients: its binary from this folder's
// node_modules, a home directory of its own in the test's servroot (next to
// the error log; some CLIs refuse helper links under /tmp), and one run with
// stdout and stderr collected.
//   const cli = require('./lib/cli');
//   const r = await cli.run(cli.bin('codex'), args, { env });  // {code, signal, out, err}
//   const dir = cli.home('codex');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');

function bin(name) {
  return path.join(__dirname, '..', 'node_modules', '.bin', name);
}

function home(name) {
  const root = path.dirname(process.env.LLM_ERROR_LOG || os.tmpdir());
  return fs.mkdtempSync(path.join(root, name + '-'));
}

function run(cmd, args, opts) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('close', (code, signal) => resolve({ code, signal, out, err }));
  });
}

module.exports = { bin, home, run };
