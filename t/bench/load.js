'use strict';
// Streaming load against /v1/completions: for each concurrency level, that
// many clients send a prompt of random token ids and read the SSE stream
// (with logprobs, so that every generated token arrives as its own chunk).
// Prints TTFT p50/p99, per-stream decode tok/s, aggregate tok/s and the p99
// time between tokens.  usage: node load.js 1 4 16
const { sseData } = require('./sse.js');

const base = process.env.LLM_BASE_URL;
const promptLen = Number(process.env.BENCH_PROMPT || 128);
const gen = Number(process.env.BENCH_GEN || 32);
const levels = process.argv.slice(2).map(Number);

function pct(a, p) {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))];
}

async function one(seed) {
  const prompt = Array.from({ length: promptLen }, (_, i) => 1000 + ((seed * 7919 + i * 104729) % 50000));
  const t0 = performance.now();
  const r = await fetch(base + '/v1/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      prompt, max_tokens: gen, temperature: 0, stream: true,
      stream_options: { include_usage: true },
      logprobs: 0,   // every token then sends a chunk, even one with no complete text
      logit_bias: { 151643: -100, 151645: -100 },   // keep going to max_tokens
    }),
  });
  let first = null, last = null, tokens = 0;
  const gaps = [];
  for await (const j of sseData(r)) {
    if (j.usage) tokens = j.usage.completion_tokens;
    if (j.choices && j.choices.length) {
      const now = performance.now();
      if (first === null) first = now; else gaps.push(now - last);
      last = now;
    }
  }
  return { ttft: first - t0, decode: tokens > 1 ? (tokens - 1) / ((last - first) / 1000) : 0,
           tokens, gaps, end: performance.now() };
}

(async () => {
  console.log(`prompt ${promptLen} tokens, ${gen} generated per stream`);
  console.log('streams  TTFT p50 ms  TTFT p99 ms  per-stream tok/s  aggregate tok/s  gap p99 ms');
  for (const c of levels) {
    const t0 = performance.now();
    const res = await Promise.all(Array.from({ length: c }, (_, k) => one(c * 100 + k)));
    const wall = (Math.max(...res.map((x) => x.end)) - t0) / 1000;
    const total = res.reduce((a, x) => a + x.tokens, 0);
    const ttft = res.map((x) => x.ttft);
    const per = res.map((x) => x.decode);
    const gaps = res.flatMap((x) => x.gaps);
    console.log(`${String(c).padStart(7)}  ${pct(ttft, 0.5).toFixed(0).padStart(11)}  ${pct(ttft, 0.99).toFixed(0).padStart(11)}  `
      + `${(per.reduce((a, x) => a + x, 0) / per.length).toFixed(2).padStart(16)}  ${(total / wall).toFixed(2).padStart(15)}  `
      + `${pct(gaps, 0.99).toFixed(0).padStart(10)}`);
  }
})().catch((e) => { console.error(e); process.exit(1); });
