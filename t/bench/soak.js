'use strict';
// Mixed load against a running server for SOAK_SECONDS: OpenAI and Anthropic,
// streamed and not, tool calls, thinking, n=2, logprobs, stop strings, bad
// requests, over-long prompts, and clients that hang up mid-stream.  At the
// end the scheduler must hold no sequence.  Exits 1 if it does.
const base = process.env.LLM_BASE_URL;
const seconds = Number(process.env.SOAK_SECONDS || 60);
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
];
const anthropic = [
  { max_tokens: 2000, stream: true, messages: [{ role: 'user', content: 'Hi!' }],
    thinking: { type: 'enabled', budget_tokens: 1024 } },
  { max_tokens: 100, messages: [{ role: 'user', content: 'Weather in Rome?' }],
    tools: [{ name: 'get_weather', input_schema: W.function.parameters }] },
];

async function one(i) {
  const isA = i % 3 === 0;
  const body = isA ? anthropic[i % anthropic.length] : openai[i % openai.length];
  const hangUp = i % 4 === 1;
  const ac = new AbortController();
  try {
    const r = await fetch(base + (isA ? '/v1/messages' : '/v1/chat/completions'), {
      method: 'POST', signal: ac.signal, headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ temperature: 0.7, ...body }),
    });
    if (hangUp) {
      await r.body.getReader().read();
      ac.abort();
      return 'hung up';
    }
    await r.text();
    return String(r.status);
  } catch (e) {
    return hangUp ? 'hung up' : 'client error';
  }
}

(async () => {
  const t0 = Date.now();
  const seen = {};
  let n = 0;
  while (Date.now() - t0 < seconds * 1000) {
    const res = await Promise.all(Array.from({ length: 12 }, (_, k) => one(n + k)));
    n += 12;
    for (const x of res) seen[x] = (seen[x] || 0) + 1;
  }
  let h;
  for (let i = 0; i < 50; i++) {
    h = (await (await fetch(base + '/health')).json()).models[0];
    if (h.live_sequences === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  console.log(`${n} requests in ${seconds} s: ${JSON.stringify(seen)}`);
  console.log(`health: ${JSON.stringify(h)}`);
  if (h.live_sequences !== 0 || h.running !== 0 || seen['client error']) {
    console.log('FAIL: sequences left behind or failed connections');
    process.exit(1);
  }
})().catch((e) => { console.error(e); process.exit(1); });
