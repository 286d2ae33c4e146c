'use strict';
// 100 streaming clients disconnect mid-stream; afterwards no sequence is
// left in the scheduler (/health live_sequences and running return to 0).
const t = require('./lib/harness');

async function health(base) {
  const r = await fetch(base + '/health');
  return (await r.json()).models[0];
}

t.run(async () => {
  const base = t.baseUrl();
  const before = await health(base);

  let aborted = 0;
  for (let round = 0; round < 10; round++) {
    await Promise.all(Array.from({ length: 10 }, async (_, i) => {
      const ac = new AbortController();
      const r = await fetch(base + '/v1/chat/completions', {
        method: 'POST', signal: ac.signal,
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({
          messages: [{ role: 'user', content: `stream ${round}.${i}` }],
          max_tokens: 1500, temperature: 0.8, stream: true,
          logit_bias: { 2: -100 },   // no end-of-sequence: every stream is cut
        }),
      });
      const reader = r.body.getReader();
      await reader.read();          // the first chunk has arrived: mid-stream
      ac.abort();
      aborted++;
    }));
  }
  t.is(aborted, 100, '100 streams disconnected mid-stream');

  // the scheduler notices at its next step boundaries
  let h;
  for (let i = 0; i < 100; i++) {
    h = await health(base);
    if (h.live_sequences === 0 && h.running === 0 && h.waiting === 0) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  t.is(h.live_sequences, 0, 'no live sequences remain');
  t.is(h.running, 0, 'no sequence is running');
  t.is(h.cancelled - before.cancelled, 100, 'every disconnect was counted as a cancellation');

  // the server still answers normally
  const r = await fetch(base + '/v1/chat/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
  });
  t.is(r.status, 200, 'a later request is served');
});
