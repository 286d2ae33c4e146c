'use strict';
// Agent-loop replay against /v1/messages (make bench, docs/operations.md "Prefix cache"): the
// shape of a coding-agent session as Claude Code sends it, generated here from a seed (nothing
// recorded is committed).  A system prompt of about AGENT_SYSTEM_TOKENS tokens whose first line
// is a billing header with a fresh nonce on every request (as Claude Code's
// "x-anthropic-billing-header: ... cch=...;" line), a tool list, then AGENT_TURNS turns, each
// appending the previous answer, a tool result and a new user message.
//
// Phases (one server, started fresh by the caller):
//   1. KV memory: one session's first turn, then 7 more sessions' first turns (same system
//      prompt and tools, their own user message): /health blocks held (used + cached) after
//      1 and after 8.
//   2. One client, every turn twice: as sent (the prefix cache reuses the conversation so far)
//      and uncached (the same prompt behind a line of its own that nothing strips, so no block
//      matches): TTFT of each and their ratio, cache_read_input_tokens.
//   3. AGENT_CLIENTS concurrent clients (8), each its own session: TTFT per turn (median and
//      worst over the clients) against phase 2's uncached TTFT of the same turn, and at the turns
//      AGENT_UNCACHED_AT lists against the same turn sent uncached by all the clients at once.
//   4. With AGENT_NGINX_PID (the server's pid file) and llm_kv_cache_path set: nginx -s reload
//      (SIGHUP), wait for the old worker to exit (it writes its KV blocks to disk first), then
//      phase 2's session's first turn again (a new billing nonce) and the same turn uncached:
//      TTFT of the first turn of a known session after a reload against the uncached TTFT.
// usage: LLM_BASE_URL=http://127.0.0.1:PORT node t/bench/agent.js
const { sseData } = require('./sse.js');

const base = process.env.LLM_BASE_URL;
const turns = Number(process.env.AGENT_TURNS || 20);
const systemTokens = Number(process.env.AGENT_SYSTEM_TOKENS || 12000);
const gen = Number(process.env.AGENT_GEN || 16);
const clients = Number(process.env.AGENT_CLIENTS || 8);

// deterministic text: words from syllables, a xorshift generator per purpose
function rng(seed) {
  let s = (seed * 2654435761) >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return s / 4294967296;
  };
}
const SYL = ['ka', 'lo', 're', 'mi', 'tu', 'sen', 'dor', 'va', 'pel', 'gri', 'on', 'ex', 'fa', 'bu', 'ni', 'stra', 'quo', 'zet'];
function words(r, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const k = 1 + Math.floor(r() * 3);
    let w = '';
    for (let j = 0; j < k; j++) w += SYL[Math.floor(r() * SYL.length)];
    out.push(w);
  }
  return out.join(' ');
}
function nonce(r) {
  return Math.floor(r() * 0xffffffff).toString(16).padStart(8, '0');
}

// about 2.4 tokens per generated word with Qwen's tokenizer, tools included; the run prints the real count
const r0 = rng(1);
const systemBody = Array.from({ length: Math.ceil(systemTokens / 3.0 / 60) },
  (_, i) => `Rule ${i + 1}: ${words(r0, 60)}.`).join('\n');
const tools = Array.from({ length: 16 }, (_, i) => ({
  name: `tool_${i}_${words(r0, 1)}`,
  description: words(r0, 40),
  input_schema: {
    type: 'object',
    properties: { path: { type: 'string', description: words(r0, 12) },
                  query: { type: 'string', description: words(r0, 12) } },
    required: ['path'],
  },
}));

function system(r, extra) {
  // the billing line changes on every request; `extra` is a line nothing strips (uncached runs)
  return (extra ? extra + '\n' : '')
    + `x-anthropic-billing-header: cc_version=2.0.14.abc; cc_entrypoint=cli; cch=${nonce(r)};\n`
    + 'You are an interactive coding agent. Use the tools to answer.\n' + systemBody;
}

function userMessage(session, turn) {
  const r = rng(1000 + session * 97 + turn);
  return `Task ${turn} of session ${session}: ${words(r, 25)}`;
}
function toolResult(session, turn) {
  const r = rng(5000 + session * 89 + turn);
  return `Tool output:\n${Array.from({ length: 12 }, () => words(r, 14)).join('\n')}`;
}

async function request(msgs, sys) {
  const t0 = performance.now();
  const res = await fetch(base + '/v1/messages', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'bench', max_tokens: gen, stream: true, temperature: 0,
                           system: sys, tools, messages: msgs }),
  });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  let first = null, text = '', usage = null;
  for await (const j of sseData(res)) {
    if (j.type === 'content_block_delta') {
      if (first === null) first = performance.now();
      if (j.delta && typeof j.delta.text === 'string') text += j.delta.text;
      if (j.delta && typeof j.delta.thinking === 'string') text += j.delta.thinking;
    }
    if (j.type === 'message_delta' && j.usage) usage = j.usage;
  }
  if (first === null) first = performance.now();
  return { ttft: first - t0, text: text || '(no text)', usage };
}

class Session {
  constructor(id) { this.id = id; this.msgs = []; this.r = rng(77 + id); }
  next(turn) {
    // turn 1: the first user message; later: the previous answer, then a tool result and a
    // new user message
    this.msgs.push({ role: 'user', content: turn === 1 ? userMessage(this.id, turn)
      : [{ type: 'text', text: toolResult(this.id, turn) }, { type: 'text', text: userMessage(this.id, turn) }] });
  }
  async turn(turn, uncached) {
    this.next(turn);
    const res = await request(this.msgs, system(this.r));
    let un = null;
    if (uncached) un = await request(this.msgs, system(this.r, `session-salt: ${nonce(this.r)}${turn}`));
    this.msgs.push({ role: 'assistant', content: res.text });
    return { res, un };
  }
}

async function healthJson() {
  return (await fetch(base + '/health')).json();
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch (e) { return false; } };

async function health() {
  const h = await healthJson();
  const m = h.models ? Object.values(h.models)[0] || h : h;
  const pick = (k) => (m[k] !== undefined ? m[k] : h[k]);
  return { used: pick('kv_blocks_used'), cached: pick('kv_blocks_cached'), tokens: pick('kv_block_tokens') };
}

function pct(a, p) {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))];
}

(async () => {
  console.log(`agent replay: system ~${systemTokens} tokens + ${tools.length} tools, ${turns} turns, `
    + `${gen} tokens per answer, billing nonce per request`);

  // 1. KV memory of sessions sharing the prefix
  const h0 = await health();
  const s1 = new Session(100);
  const first = await s1.turn(1, false);
  const h1 = await health();
  await Promise.all(Array.from({ length: 7 }, (_, k) => new Session(101 + k).turn(1, false)));
  const h8 = await health();
  const held = (h) => h.used + h.cached;
  const one = held(h1) - held(h0), eight = held(h8) - held(h0);
  console.log(`KV blocks held (used + cached, ${h1.tokens} tokens each): 1 session ${one}, 8 sessions ${eight}, `
    + `ratio ${(eight / one).toFixed(2)} (prompt ${first.res.usage ? first.res.usage.input_tokens
      + first.res.usage.cache_read_input_tokens + first.res.usage.cache_creation_input_tokens : '?'} tokens)`);

  // 2. one client, cached and uncached
  console.log('1 client:\nturn  prompt  cache_read  TTFT ms  uncached TTFT ms  ratio');
  const s = new Session(1);
  const uncachedTtft = [];
  const ratios = [];
  for (let t = 1; t <= turns; t++) {
    const { res, un } = await s.turn(t, true);
    const u = res.usage || {};
    const prompt = (u.input_tokens || 0) + (u.cache_read_input_tokens || 0) + (u.cache_creation_input_tokens || 0);
    uncachedTtft[t] = un.ttft;
    if (t > 1) ratios.push(res.ttft / un.ttft);
    console.log(`${String(t).padStart(4)}  ${String(prompt).padStart(6)}  ${String(u.cache_read_input_tokens).padStart(10)}  `
      + `${res.ttft.toFixed(0).padStart(7)}  ${un.ttft.toFixed(0).padStart(16)}  ${(res.ttft / un.ttft).toFixed(3)}`);
  }
  if (turns > 1) {
    console.log(`turns 2..${turns}: cached/uncached TTFT ratio max ${Math.max(...ratios).toFixed(3)}, `
      + `median ${pct(ratios, 0.5).toFixed(3)}`);
  }

  // 3. concurrent clients, each its own session.  The uncached reference of a turn under the
  // same load is the same turn sent uncached by all the clients at once (every client salts its
  // prompt): measured at the turns AGENT_UNCACHED_AT lists (default the second and the last;
  // each costs `clients` uncached prefills), after the cached round of that turn.
  const at = (process.env.AGENT_UNCACHED_AT || `2,${turns}`).split(',').map(Number)
    .filter((t) => t > 1 && t <= turns);
  console.log(`${clients} clients:\nturn  TTFT p50 ms  TTFT max ms  max / 1-client uncached  `
    + `uncached p50 ms  uncached max ms  p50 ratio  max ratio`);
  const ss = Array.from({ length: clients }, (_, k) => new Session(200 + k));
  const worst = [], same = [];
  for (let t = 1; t <= turns; t++) {
    const res = await Promise.all(ss.map((x) => x.turn(t, at.includes(t))));
    const tt = res.map((x) => x.res.ttft);
    const mx = Math.max(...tt);
    if (t > 1) worst.push(mx / uncachedTtft[t]);
    let line = `${String(t).padStart(4)}  ${pct(tt, 0.5).toFixed(0).padStart(11)}  ${mx.toFixed(0).padStart(11)}  `
      + `${(mx / uncachedTtft[t]).toFixed(3).padStart(23)}`;
    if (res[0].un) {
      const ut = res.map((x) => x.un.ttft);
      const umx = Math.max(...ut);
      same.push({ t, p50: pct(tt, 0.5) / pct(ut, 0.5), max: mx / umx });
      line += `  ${pct(ut, 0.5).toFixed(0).padStart(15)}  ${umx.toFixed(0).padStart(15)}  `
        + `${(pct(tt, 0.5) / pct(ut, 0.5)).toFixed(3).padStart(9)}  ${(mx / umx).toFixed(3).padStart(9)}`;
    }
    console.log(line);
  }
  if (turns > 1) {
    console.log(`turns 2..${turns}, ${clients} clients: worst TTFT / 1-client uncached TTFT max `
      + `${Math.max(...worst).toFixed(3)}, median ${pct(worst, 0.5).toFixed(3)}`);
  }
  for (const x of same) {
    console.log(`turn ${x.t}, ${clients} clients: cached / uncached TTFT under the same load: `
      + `p50 ${x.p50.toFixed(3)}, worst ${x.max.toFixed(3)}`);
  }

  // 4. a reload, then the first turn of a known session (disk tier)
  if (!process.env.AGENT_NGINX_PID) return;
  const master = Number(require('fs').readFileSync(process.env.AGENT_NGINX_PID, 'utf8'));
  const old = (await healthJson()).pid;
  process.kill(master, 'SIGHUP');
  for (let i = 0; i < 600; i++) {
    const h = await healthJson().catch(() => ({}));
    if (h.pid && h.pid !== old && !alive(old)) break;
    await sleep(100);
  }
  const known = [{ role: 'user', content: userMessage(1, 1) }];
  const r = rng(4242);
  const warm = await request(known, system(r));
  const cold = await request(known, system(r, `session-salt: ${nonce(r)}`));
  const u = warm.usage || {};
  const m = Object.values((await healthJson()).models || {})[0] || {};
  console.log(`after reload: first turn of a known session TTFT ${warm.ttft.toFixed(0)} ms `
    + `(cache_read ${u.cache_read_input_tokens}, ${m.kv_disk ? m.kv_disk.tokens_read : '?'} tokens read from disk), `
    + `uncached ${cold.ttft.toFixed(0)} ms, ratio ${(warm.ttft / cold.ttft).toFixed(3)}`);
})().catch((e) => { console.error(e); process.exit(1); });
