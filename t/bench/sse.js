'use strict';
// The JSON payloads of a streaming response's server-sent events, in order (load.js, agent.js).
async function* sseData(res) {
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const d = ev.split('\n').find((l) => l.startsWith('data: {'));
      if (d) yield JSON.parse(d.slice(6));
    }
  }
}
module.exports = { sseData };
