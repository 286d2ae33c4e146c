'use strict';
// Codex CLI (@openai/codex, `codex exec --json`) over /v1/responses, with its
// default prompt (about 40 KB: instructions, developer messages, function
// tools, a `namespace` tool and `web_search`), streamed.
//
// Codex sends no max_output_tokens, and the tiny default model does not end
// an answer to Codex's prompt by itself (its reasoning repeats until the
// context is full, minutes here; Codex treats a response cut at a token limit
// as an error).  So the turn asks for what a script asks Codex for: an answer
// in a JSON schema (`--output-schema`, sent as text.format json_schema, which
// the server enforces and ends when the object is complete) with low
// reasoning effort (reasoning.effort: a bounded thinking budget).  The test
// asserts on the protocol: every request succeeded, the turn completed with
// usage, the final message parses against the schema; then a second turn
// sends the first back with its sealed reasoning (encrypted_content).
const t = require('../node/lib/harness');
const log = require('./lib/log');
const fs = require('node:fs');
const path = require('node:path');
const cli = require('./lib/cli');

t.run(async () => {
  const base = t.baseUrl();
  const since = log.mark();
  const model = process.env.LLM_MODEL || 'ngxllm-tiny';
  const bin = cli.bin('codex');

  // Codex refuses to make its helper links under /tmp: its home lives in
  // the test's servroot (next to the error log).
  const dir = cli.home('codex');
  const home = path.join(dir, 'home'), work = path.join(dir, 'work');
  fs.mkdirSync(home); fs.mkdirSync(work);
  fs.writeFileSync(path.join(home, 'config.toml'), [
    `model = "${model}"`,
    'model_provider = "ngx"',
    'model_reasoning_effort = "low"',
    '[model_providers.ngx]',
    'name = "ngx_llm"',
    `base_url = "${base}/v1"`,
    'wire_api = "responses"',
    'stream_max_retries = 0',
    'request_max_retries = 0',
    // the prompt takes minutes to prefill on a loaded 2-core machine
    'stream_idle_timeout_ms = 900000',
    '',
  ].join('\n'));
  const schema = path.join(dir, 'schema.json');
  fs.writeFileSync(schema, JSON.stringify({
    type: 'object',
    properties: { answer: { type: 'string', maxLength: 40 } },
    required: ['answer'], additionalProperties: false,
  }));

  const r = await cli.run(bin, ['exec', '--json', '--skip-git-repo-check',
                            '--output-schema', schema, 'Say hello.'],
                      { cwd: work, env: { ...process.env, CODEX_HOME: home } });
  const events = r.out.split('\n').filter(Boolean).map((l) => {
    try { return JSON.parse(l); } catch (e) { return { unparsed: l }; }
  });
  const types = events.map((e) => e.type || 'unparsed');
  t.note('codex events: ' + types.join(' '));
  t.is(r.code, 0, 'codex exec exits 0' + (r.code ? ': ' + r.err.slice(-600) : ''));

  const done = events.find((e) => e.type === 'turn.completed');
  t.ok(done && done.usage && done.usage.input_tokens > 1000 && done.usage.output_tokens > 0,
       'the turn completed with usage ' + JSON.stringify(done && done.usage));
  t.ok(!events.some((e) => e.type === 'turn.failed' || e.type === 'error'),
       'no turn.failed / error event');

  const msg = events.filter((e) => e.type === 'item.completed' && e.item
                            && e.item.type === 'agent_message').pop();
  let answer = null;
  try { answer = JSON.parse(msg.item.text); } catch (e) { /* below */ }
  t.ok(answer && typeof answer.answer === 'string' && Object.keys(answer).length === 1,
       'the final message is the schema\'s object: ' + (msg ? msg.item.text.slice(0, 80) : 'none'));

  const posts = log.requests(since).filter((q) => q.method === 'POST');
  const req = posts.length ? posts[0].body : {};
  t.ok(posts.length >= 1 && posts.every((q) => q.uri === '/v1/responses'),
       `${posts.length} POST /v1/responses`);
  t.ok(req.stream === true && req.store === false && Array.isArray(req.tools)
       && req.tools.some((x) => x.type === 'namespace')
       && req.text && req.text.format && req.text.format.type === 'json_schema'
       && req.reasoning && req.reasoning.effort === 'low',
       'the request: streamed, store false, a namespace tool, text.format json_schema, reasoning.effort low');
  log.check(t, since, 'codex');

  // A second turn of the same session (`codex exec resume --last`): Codex
  // sends the first turn back in `input`, its reasoning item with the
  // encrypted_content this server sealed (include reasoning.encrypted_content,
  // docs/api.md "Encrypted reasoning"), which must open (else a 400).
  const since2 = log.mark();
  const r2 = await cli.run(bin, ['exec', 'resume', '--last', '--json', '--skip-git-repo-check',
                             '--output-schema', schema, 'Say it again.'],
                       { cwd: work, env: { ...process.env, CODEX_HOME: home } });
  const events2 = r2.out.split('\n').filter(Boolean).map((l) => {
    try { return JSON.parse(l); } catch (e) { return { unparsed: l }; }
  });
  t.note('codex resume events: ' + events2.map((e) => e.type || 'unparsed').join(' '));
  t.ok(r2.code === 0 && events2.some((e) => e.type === 'turn.completed'),
       'the second turn completed' + (r2.code ? ': ' + r2.err.slice(-400) : ''));
  const posts2 = log.requests(since2).filter((q) => q.method === 'POST');
  const sent = posts2.length ? posts2[0].body.input || [] : [];
  const sealed = sent.filter((i) => i.type === 'reasoning' && typeof i.encrypted_content === 'string');
  t.ok(sealed.length >= 1 && posts2.every((q) => q.status === 200),
       `its request sent ${sealed.length} sealed reasoning item(s) back, answered ${posts2.map((q) => q.status).join(',')}`);
  log.check(t, since2, 'codex resume');
  fs.rmSync(dir, { recursive: true, force: true });
});
