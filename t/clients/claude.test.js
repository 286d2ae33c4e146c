'use strict';
// A coding-agent CLI over /v1/messages: Claude Code (@anthropic-ai/claude-code,
// headless `claude -p --output-format stream-json`) with ANTHROPIC_BASE_URL at
// the server, thinking on (Claude Code sends thinking: adaptive with
// output_config.effort).
//
// Claude Code's default prompt is about 77 KB (24 tools, ~30k tokens of the
// tiny model: several minutes of prefill on a 2-core machine), so the run
// keeps two of its tools (--tools Read Bash) and a one-line system prompt;
// every other field is what it sends by default.  The tiny model does not end
// its answer, so each response stops at max_tokens (CLAUDE_CODE_MAX_OUTPUT_TOKENS)
// and Claude Code asks it to resume, sending the turn back with the signed
// thinking block: those requests must verify (200), and the run ends with
// Claude Code's own "exceeded the output token maximum" result, not an API
// error.  The assertions are on the protocol, not on the answer.  A second
// run without tools finishes its turn (see there).
const t = require('../node/lib/harness');
const log = require('./lib/log');
const fs = require('node:fs');
const path = require('node:path');
const cli = require('./lib/cli');

t.run(async () => {
  const base = t.baseUrl();
  const since = log.mark();
  const model = process.env.LLM_MODEL || 'ngxllm-tiny';
  const bin = cli.bin('claude');
  const dir = cli.home('claude');
  const home = path.join(dir, 'home'), work = path.join(dir, 'work');
  fs.mkdirSync(home); fs.mkdirSync(work);

  // one headless Claude Code turn with the given --tools values; its
  // stream-json lines parsed (a line that is not JSON is kept as 'unparsed')
  const turn = async (tools) => {
    const run = await cli.run(bin, ['-p', 'Say hello.', '--model', model, '--tools', ...tools,
                                    '--system-prompt', 'You are a coding agent. Answer briefly.',
                                    '--effort', 'low', '--max-turns', '3',
                                    '--output-format', 'stream-json', '--verbose'], {
      cwd: work,
      env: { ...process.env, HOME: home, ANTHROPIC_BASE_URL: base,
             ANTHROPIC_API_KEY: 'sk-unused', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
             CLAUDE_CODE_MAX_OUTPUT_TOKENS: '600' },
    });
    return [run, run.out.split('\n').filter(Boolean).map((l) => {
      try { return JSON.parse(l); } catch (e) { return { type: 'unparsed', line: l }; }
    })];
  };

  const [r, events] = await turn(['Read', 'Bash']);
  t.note('claude events: ' + [...new Set(events.map((e) => e.type + (e.subtype ? '/' + e.subtype : '')))].join(' '));

  const result = events.find((e) => e.type === 'result');
  t.ok(result && result.api_error_status == null,
       'a result, and no API error status: ' + (result ? String(result.result).slice(0, 120) : r.err.slice(-400)));
  t.ok(result && (!result.is_error || /output token maximum/.test(result.result)),
       'the turn ended, or stopped at Claude Code\'s own output-token limit (the tiny model does not end its answer)');

  const blocks = events.filter((e) => e.type === 'assistant')
    .flatMap((e) => e.message.content || []);
  const thinking = blocks.find((b) => b.type === 'thinking');
  t.ok(thinking && thinking.thinking.length > 0 && /^[A-Za-z0-9+/]{43}=$/.test(thinking.signature || ''),
       'a streamed thinking block with its signature');

  // Claude Code reports each message's usage from its message_start: a request
  // after the first reads the conversation's head from the prefix cache, and
  // message_start says so (issue 21 item 8; the billing-header line that would
  // change the prompt's first line per request is stripped, llm_prompt_strip)
  const usages = [];
  for (const e of events.filter((x) => x.type === 'assistant')) {
    if (!usages.some((u) => u.id === e.message.id)) usages.push({ id: e.message.id, usage: e.message.usage || {} });
  }
  t.note('assistant messages\' usage: ' + usages.map((u) => JSON.stringify(u.usage && {
    input: u.usage.input_tokens, cache_read: u.usage.cache_read_input_tokens })).join(' '));
  t.ok(usages.length < 2 || usages.slice(1).some((u) => u.usage.cache_read_input_tokens > 0),
       'a later request\'s message_start reports cache reads (' + usages.length + ' messages)');

  const posts = log.requests(since).filter((q) => q.method === 'POST');
  t.ok(posts.length >= 1 && posts.every((q) => q.uri.startsWith('/v1/messages')),
       `${posts.length} POST /v1/messages (${[...new Set(posts.map((q) => q.uri))].join(', ')})`);
  const first = posts.length ? posts[0].body : {};
  t.ok(first.stream === true && first.thinking && first.thinking.type === 'adaptive'
       && first.output_config && first.output_config.effort === 'low'
       && Array.isArray(first.tools) && first.tools.length >= 2 && first.max_tokens === 600,
       'the request: streamed, thinking adaptive with effort low, its tools, max_tokens 600');
  // a resumed turn sends the signed thinking block back: the server verified it
  const back = posts.slice(1).find((q) => (q.body.messages || []).some((m) =>
    m.role === 'assistant' && Array.isArray(m.content)
    && m.content.some((c) => c.type === 'thinking' && c.signature)));
  t.ok(!result || !result.is_error || back,
       'a turn sent back with its signed thinking block' + (back ? ' (answered ' + back.status + ')' : ''));
  log.check(t, since, 'claude');

  // A turn that finishes: the same run without tools.  Claude Code's two tool
  // schemas are about 1.8k tokens of long descriptions, unlike anything the
  // tiny model was trained on, and with them it repeats itself until
  // max_tokens whatever the sampling (temperature 1, thinking off: the same);
  // with no tools it ends its answer (end_turn), and Claude Code's result is a
  // success.  The model's answers are sampled (its temperature 0.3), so this
  // is what it did in every run here, not a guarantee.
  const since2 = log.mark();
  const [r2, events2] = await turn(['']);
  const result2 = events2.find((e) => e.type === 'result');
  t.ok(r2.code === 0 && result2 && result2.subtype === 'success' && result2.is_error === false
       && result2.usage && result2.usage.output_tokens > 0,
       'without tools the turn finishes: ' + (result2 ? JSON.stringify({ subtype: result2.subtype,
         is_error: result2.is_error, stop: result2.stop_reason, result: String(result2.result).slice(0, 80) })
         : r2.err.slice(-300)));
  const posts2 = log.requests(since2).filter((q) => q.method === 'POST');
  t.ok(posts2.length >= 1 && !posts2.some((q) => Array.isArray(q.body.tools) && q.body.tools.length),
       `${posts2.length} POST /v1/messages without tools`);
  log.check(t, since2, 'claude without tools');
  fs.rmSync(dir, { recursive: true, force: true });
});
