'use strict';
// Structured output checked by an independent validator (ajv, with
// ajv-formats): for 22 real tool APIs (t/fixtures/tools/real-tools.json)
// the shipped model is made to call each tool (tool_choice naming it) at
// temperature 1.0 and 1.5, and to answer with every other tool's parameters
// as response_format json_schema; every finished output must validate.
const fs = require('node:fs');
const path = require('node:path');
const t = require('./lib/harness');

t.run(async () => {
  // prefixItems (tuples) are draft 2020-12, the draft the grammar compiles
  const Ajv = require('ajv/dist/2020');
  const addFormats = require('ajv-formats');
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  const model = process.env.LLM_MODEL || 'tiny';
  const tools = JSON.parse(fs.readFileSync(path.join(__dirname, '../fixtures/tools/real-tools.json'), 'utf8'));
  const url = t.baseUrl() + '/v1/chat/completions';
  const post = async (body) => {
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: r.status, json: await r.json() };
  };
  let calls = 0, valid = 0, cut = 0, formats = 0, fvalid = 0, fcut = 0;
  const bad = [];

  for (const [i, tool] of tools.entries()) {
    const fn = tool.function;
    const validate = ajv.compile(fn.parameters);
    const temperature = i % 2 ? 1.5 : 1.0;
    const r = await post({
      model, temperature, seed: i, max_tokens: 600,
      messages: [{ role: 'user', content: 'Use the tool.' }],
      tools, tool_choice: { type: 'function', function: { name: fn.name } },
    });
    const c = r.json.choices && r.json.choices[0];
    if (r.status !== 200 || !c) { bad.push([fn.name, 'status ' + r.status, r.json]); continue; }
    if (c.finish_reason === 'length') { cut++; continue; }
    calls++;
    const tc = c.message.tool_calls && c.message.tool_calls[0];
    let args;
    try { args = JSON.parse(tc.function.arguments); } catch (e) { args = undefined; }
    if (tc && tc.function.name === fn.name && args !== undefined && validate(args)) valid++;
    else bad.push([fn.name, tc && tc.function.arguments, validate.errors]);

    if (i % 2) continue;   /* response_format for half of them: CI time */
    const f = await post({
      model, temperature, seed: 100 + i, max_tokens: 600,
      messages: [{ role: 'user', content: 'Answer in JSON.' }],
      chat_template_kwargs: { enable_thinking: false },
      response_format: { type: 'json_schema', json_schema: { name: fn.name, strict: true, schema: fn.parameters } },
    });
    const fc = f.json.choices && f.json.choices[0];
    if (f.status !== 200 || !fc) { bad.push([fn.name, 'response_format status ' + f.status, f.json]); continue; }
    if (fc.finish_reason === 'length') { fcut++; continue; }
    formats++;
    let v;
    try { v = JSON.parse(fc.message.content); } catch (e) { v = undefined; }
    if (v !== undefined && validate(v)) fvalid++;
    else bad.push([fn.name, 'response_format', fc.message.content, validate.errors]);
  }
  t.note(`tool calls: ${valid}/${calls} valid (${cut} cut by max_tokens); response_format: ${fvalid}/${formats} valid (${fcut} cut)`);
  t.deepEqual(bad, [], 'every finished output is valid per ajv');
  t.ok(calls > 0, 'calls finish within max_tokens');
  t.ok(formats > 0, 'response_format answers finish within max_tokens');
});
