'use strict';
// make soak (t/bench/soak.sh runs one phase per call: node soak.js PHASE).
//
//   mixed   SOAK_SECONDS of mixed load: OpenAI and Anthropic, streamed and
//           not, tool calls, thinking, n=2, logprobs, stop strings, bad
//           requests, over-long prompts, clients hanging up mid-stream; at
//           the end the scheduler must hold no sequence
//   bad     one bad request (token ids past the vocabulary, for embeddings
//           and completions) among 8 streams: it gets its 400, every stream
//           ends normally
//   stall   clients that stop reading: their sequences pause with a bounded
//           backlog and are cancelled after send_timeout, freeing their slots
//   reload  mixed load (no hang-ups) while nginx -s reload runs every 2 s:
//           zero truncated responses
//   quit    mixed load, then nginx -s quit: every accepted request completes
//
// Env: LLM_BASE_URL, LLM_STALL_PORT (a server with sndbuf=16k and a short
// send_timeout), NGINX_PREFIX (for -s reload / -s quit), SOAK_SECONDS.
// Exits 1 on a failure.
const fs = require('fs');
const http = require('http');
const net = require('net');
const path = require('path');
const { execFileSync } = require('child_process');

const base = process.env.LLM_BASE_URL;
const seconds = Number(process.env.SOAK_SECONDS || 60);
const phase = process.argv[2] || 'mixed';
const nginx = (...args) => execFileSync('/usr/sbin/nginx',
  ['-p', process.env.NGINX_PREFIX, '-c', 'conf/nginx.conf', ...args], { stdio: 'pipe' });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// logit_bias that keeps models/ngxllm-tiny from ending a stream early
const model = path.join(__dirname, '../../models/ngxllm-tiny');
const noEos = Object.fromEntries([].concat(
  JSON.parse(fs.readFileSync(path.join(model, 'generation_config.json'))).eos_token_id)
  .map((id) => [String(id), -100]));
const vocab = JSON.parse(fs.readFileSync(path.join(model, 'config.json'))).vocab_size;

const W = {
  type: 'function',
  function: { name: 'get_weather', description: 'Get the current weather for a city',
              parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};
const openai = [
  { messages: [{ role: 'user', content: 'What is the weather in Paris?' }], tools: [W], stream: true },
  { messages: [{ role: 'user', content: 'Hello there!' }], stream: true, n: 2, max_tokens: 40 },
  { messages: [{ role: 'user', content: 'Hello there!' }], logprobs: true, top_logprobs: 3, max_tokens: 30 },
  { messages: [{ role: 'user', content: 'What is 2+2?' }], stop: ['4', ' '], stream: true },
  { messages: [] },
  { messages: [{ role: 'user', content: 'x'.repeat(20000) }], max_tokens: 5 },
  { messages: [{ role: 'user', content: 'Tell me a long story.' }], max_tokens: 300, stream: true },
  { messages: [{ role: 'user', content: 'Tell me a long story.' }], max_tokens: 200, n: 2 },
];
const anthropic = [
  { max_tokens: 2000, stream: true, messages: [{ role: 'user', content: 'Hi!' }],
    thinking: { type: 'enabled', budget_tokens: 1024 } },
  { max_tokens: 100, messages: [{ role: 'user', content: 'Weather in Rome?' }],
    tools: [{ name: 'get_weather', input_schema: W.function.parameters }] },
];

async function health() {
  return (await (await fetch(base + '/health')).json()).models[0];
}

// One request to its end, on a connection of its own (no keep-alive, so a
// connection that closes is this request's): 'complete' when the response
// ended as its kind ends ([DONE], message_stop, a whole JSON body),
// 'truncated' when it did not (or the connection closed without a
// response), 'refused' when no connection was made, 'hung up' for hang-ups.
function one(i, hangUps) {
  const isA = i % 3 === 0;
  const body = isA ? anthropic[i % anthropic.length] : openai[i % openai.length];
  const hangUp = hangUps && i % 4 === 1;
  const data = JSON.stringify({ temperature: 0.7, ...body });
  const url = new URL(base + (isA ? '/v1/messages' : '/v1/chat/completions'));
  return new Promise((resolve) => {
    let connected = false;
    const req = http.request({
      host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent: false,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
    }, (r) => {
      if (hangUp) {
        r.once('data', () => { req.destroy(); resolve('hung up'); });
        r.on('error', () => {});
        return;
      }
      let text = '';
      r.setEncoding('utf8');
      r.on('data', (d) => { text += d; });
      r.on('error', () => resolve('truncated'));
      r.on('aborted', () => resolve('truncated'));
      r.on('end', () => {
        if (!r.complete) return resolve('truncated');
        if (r.statusCode === 200 && body.stream) {
          if (isA) return resolve(/event: message_stop\n/.test(text) ? 'complete' : 'truncated');
          return resolve(/data: \[DONE\]\n\n$/.test(text) && !/"error":/.test(text) ? 'complete' : 'truncated');
        }
        try { JSON.parse(text); resolve('complete'); } catch (e) { resolve('truncated'); }
      });
    });
    req.on('socket', (sock) => sock.on('connect', () => { connected = true; }));
    req.on('error', () => resolve(hangUp ? 'hung up' : connected ? 'truncated' : 'refused'));
    req.end(data);
  });
}

async function waitIdle() {
  let h;
  for (let i = 0; i < 100; i++) {
    h = await health();
    if (h.live_sequences === 0) break;
    await sleep(100);
  }
  return h;
}

function fail(msg) {
  console.log(`FAIL (${phase}): ${msg}`);
  process.exit(1);
}

async function mixed() {
  const t0 = Date.now();
  const seen = {};
  let n = 0;
  while (Date.now() - t0 < seconds * 1000) {
    const res = await Promise.all(Array.from({ length: 12 }, (_, k) => one(n + k, true)));
    n += 12;
    for (const x of res) seen[x] = (seen[x] || 0) + 1;
  }
  const h = await waitIdle();
  console.log(`mixed: ${n} requests in ${seconds} s: ${JSON.stringify(seen)}`);
  console.log(`health: ${JSON.stringify(h)}`);
  if (h.live_sequences !== 0 || h.running !== 0) fail('sequences left behind');
  if (seen.truncated || seen.refused) fail('truncated or refused responses');
}

async function stream(content) {
  const r = await fetch(base + '/v1/chat/completions', {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content }], max_tokens: 300,
                           stream: true, logit_bias: noEos }),
  });
  const text = await r.text();
  return r.status === 200 && /data: \[DONE\]\n\n$/.test(text) && !/"error":/.test(text);
}

async function bad() {
  const streams = Array.from({ length: 8 }, (_, k) => stream(`stream ${k}`));
  await sleep(50);
  const post = (path, body) => fetch(base + path, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const e = await post('/v1/embeddings', { input: [vocab + 100] });
  const c = await post('/v1/completions', { prompt: [1, 2, vocab], max_tokens: 5 });
  const ok = await Promise.all(streams);
  console.log(`bad: embeddings ${e.status}, completions ${c.status}, ` +
              `${ok.filter(Boolean).length}/8 streams ended with [DONE]`);
  if (e.status !== 400 || c.status !== 400) fail('a bad token id was not a 400');
  if (!ok.every(Boolean)) fail('a stream next to the bad request failed');
}

// A client that sends a streaming request and never reads.
function stalled(port, k) {
  const body = JSON.stringify({ messages: [{ role: 'user', content: `stalled ${k}` }],
                                max_tokens: 2000, stream: true, logprobs: true, top_logprobs: 20,
                                logit_bias: noEos });
  const s = net.connect(port, '127.0.0.1', () => {
    s.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  });
  s.on('error', () => {});
  s.once('data', () => s.pause());   // the stream started; read no more
  return s;
}

async function stall() {
  const port = Number(process.env.LLM_STALL_PORT);
  const before = await health();
  const socks = Array.from({ length: 4 }, (_, k) => stalled(port, k));
  let h;
  for (let i = 0; i < 600; i++) {
    h = await health();
    if (h.paused === 4 || h.live_sequences === 0) break;
    await sleep(100);
  }
  const paused = h.paused;
  const generated = h.generated_tokens - before.generated_tokens;
  // meanwhile the other slots serve
  const r = await stream('while stalled');
  for (let i = 0; i < 600; i++) {
    h = await health();
    if (h.live_sequences === 0) break;
    await sleep(100);
  }
  socks.forEach((s) => s.destroy());
  console.log(`stall: ${paused} paused after ${generated} tokens for 4 x 2000 asked; ` +
              `another stream ${r ? 'completed' : 'failed'}; after send_timeout: live ` +
              `${h.live_sequences}, cancelled +${h.cancelled - before.cancelled}`);
  if (paused !== 4) fail('the stalled streams did not pause');
  if (generated >= 4 * 1000) fail('the stalled streams generated without bound');
  if (!r) fail('a stream next to the stalled ones failed');
  if (h.live_sequences !== 0 || h.cancelled - before.cancelled < 4) fail('the stalled streams kept their slots');
}

async function underSignals(what) {
  const seen = {};
  const pending = [];
  let n = 0;
  const t0 = Date.now();
  const dur = what === 'quit' ? 3 : Math.max(10, Math.min(seconds, 30));
  let signals = 0;
  let quitAt = 0;
  while (Date.now() - t0 < dur * 1000) {
    for (let k = 0; k < 4; k++) pending.push(one(n++, false).then((x) => { seen[x] = (seen[x] || 0) + 1; }));
    await sleep(250);
    if (what === 'reload' && (Date.now() - t0) > (signals + 1) * 2000) {
      nginx('-s', 'reload');
      signals++;
    }
  }
  if (what === 'quit') {
    nginx('-s', 'quit');
    signals++;
    quitAt = n;
    // requests sent after the quit may be refused: they were never accepted
    for (let k = 0; k < 4; k++) pending.push(one(n++, false).then((x) => { seen[`${x} after quit`] = (seen[`${x} after quit`] || 0) + 1; }));
  }
  await Promise.all(pending);
  console.log(`${what}: ${n} requests, ${signals} signal(s): ${JSON.stringify(seen)}`);
  if (seen.truncated || seen['truncated after quit']) fail('truncated responses');
  if (seen.refused) fail('refused connections before the quit');
  if (what === 'reload') {
    const h = await waitIdle();
    if (h.live_sequences !== 0) fail('sequences left behind');
  }
  return quitAt;
}

(async () => {
  switch (phase) {
  case 'mixed': await mixed(); break;
  case 'bad': await bad(); break;
  case 'stall': await stall(); break;
  case 'reload': await underSignals('reload'); break;
  case 'quit': await underSignals('quit'); break;
  default: fail(`unknown phase ${phase}`);
  }
})().catch((e) => { console.error(e); process.exit(1); });
