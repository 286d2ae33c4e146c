'use strict';
// The guarantee in every native tool-call format, checked by an independent
// validator (ajv, with ajv-formats): a random-weight model (the worst case:
// only the grammar makes its output a call) is made to call real tool APIs
// (t/fixtures/tools/real-tools.json) by name at temperature 1.0 and 1.5, one
// location per tool parser; the server's own parser reads each call back and
// every finished call's arguments must validate against the tool's schema.
// To stay cheap each format gets three tools, rotating so that the formats
// together call all 22.  A request the format cannot enforce (qwen3_coder
// reads an untyped parameter as text: $ref / anyOf) must be a 400 naming
// what cannot be enforced; a call cut by max_tokens is counted apart.
const fs = require('node:fs');
const path = require('node:path');
const t = require('./lib/harness');

const FORMATS = ['hermes', 'llama3_json', 'mistral', 'deepseek_v3', 'harmony',
                 'qwen3_coder', 'glm4', 'pythonic', 'glm4_0414'];
const PER_FORMAT = 3;

t.run(async () => {
  const Ajv = require('ajv/dist/2020');
  const addFormats = require('ajv-formats');
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  const model = process.env.LLM_MODEL || 'rnd';
  const tools = JSON.parse(fs.readFileSync(path.join(__dirname, '../fixtures/tools/real-tools.json'), 'utf8'));
  const post = async (format, body) => {
    const r = await fetch(t.baseUrl() + '/' + format + '/v1/chat/completions', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: r.status, json: await r.json() };
  };
  const bad = [], called = new Set();
  let n = 0, valid = 0, cut = 0, refused = 0;

  for (const [fi, format] of FORMATS.entries()) {
    for (let k = 0; k < PER_FORMAT; k++) {
      const i = (fi * PER_FORMAT + k) % tools.length;
      const fn = tools[i].function;
      const validate = ajv.compile(fn.parameters);
      const temperature = (fi + k) % 2 ? 1.5 : 1.0;
      const r = await post(format, {
        model, temperature, seed: 7 * fi + k, max_tokens: 600,
        messages: [{ role: 'user', content: 'Use the tool.' }],
        tools: [tools[i]], tool_choice: { type: 'function', function: { name: fn.name } },
        parallel_tool_calls: false,
      });
      const c = r.json.choices && r.json.choices[0];
      if (r.status === 400 && format === 'qwen3_coder'
          && /cannot be enforced on a text value/.test(JSON.stringify(r.json))) { refused++; continue; }
      if (r.status !== 200 || !c) { bad.push([format, fn.name, 'status ' + r.status, r.json]); continue; }
      if (c.finish_reason === 'length') { cut++; continue; }
      n++;
      called.add(fn.name);
      const tc = c.message.tool_calls && c.message.tool_calls[0];
      let args;
      try { args = JSON.parse(tc.function.arguments); } catch (e) { args = undefined; }
      if (c.finish_reason === 'tool_calls' && tc && tc.function.name === fn.name && args !== undefined
          && validate(args)) valid++;
      else bad.push([format, fn.name, c.finish_reason, c.message, validate.errors]);
    }
  }
  t.note(`${valid}/${n} finished calls valid over ${FORMATS.length} formats, ${called.size} tools; `
         + `${cut} cut by max_tokens, ${refused} refused (400)`);
  t.deepEqual(bad, [], 'every finished call is read back by the format\'s parser and valid per ajv');
  t.ok(n >= FORMATS.length, `calls finish within max_tokens (${n})`);
});
