'use strict';
// A coding-agent CLI over /v1/chat/completions: opencode (`opencode run
// --format json`), with a provider of its own for the server through the
// AI SDK's OpenAI-compatible package (bundled in its binary), its default
// agent, tools and system prompt, streamed.
//
// npm's opencode-ai package only picks one of its platform packages at
// install time, and the registry reachable here lacks most of them, so a
// lock file of it cannot be written; t/clients/package.json installs the
// linux-x64 binary package as an optional dependency instead (skipped on
// other platforms, where this script skips).  Nothing is fetched at run
// time: models.dev, updates, LSP servers and plugins are turned off.
//
// The tiny model does not end an answer to opencode's prompt by itself, so
// the model's output limit (opencode sends it as max_tokens) is small; the
// assertions are on the protocol: every request succeeded, a step finished
// with its usage and no error event.
const t = require('../node/lib/harness');
const log = require('./lib/log');
const fs = require('node:fs');
const path = require('node:path');
const cli = require('./lib/cli');

t.run(async () => {
  const base = t.baseUrl();
  const model = process.env.LLM_MODEL || 'ngxllm-tiny';
  const bin = path.join(__dirname, 'node_modules', 'opencode-linux-x64', 'bin', 'opencode');
  if (!fs.existsSync(bin)) {
    t.skipAll('opencode-linux-x64 is not installed (another platform)');
    return;
  }
  const since = log.mark();
  const dir = cli.home('opencode');
  const home = path.join(dir, 'home'), work = path.join(dir, 'work');
  fs.mkdirSync(home); fs.mkdirSync(work);
  const config = {
    $schema: 'https://opencode.ai/config.json',
    model: `ngx/${model}`,
    small_model: `ngx/${model}`,
    autoupdate: false,
    share: 'disabled',
    provider: {
      ngx: {
        npm: '@ai-sdk/openai-compatible',
        name: 'ngx_llm',
        options: { baseURL: `${base}/v1`, apiKey: 'sk-unused' },
        models: { [model]: { name: model, tool_call: true, reasoning: true,
                             limit: { context: 32768, output: 400 } } },
      },
    },
  };
  const r = await cli.run(bin, ['run', '--format', 'json', '--pure', 'Say hello.'], {
    cwd: work,
    env: { ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'),
           XDG_DATA_HOME: path.join(home, '.local', 'share'),
           XDG_CACHE_HOME: path.join(home, '.cache'), XDG_STATE_HOME: path.join(home, '.local', 'state'),
           OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
           OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_AUTOUPDATE: '1',
           OPENCODE_DISABLE_LSP_DOWNLOAD: '1', OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
           OPENCODE_DISABLE_SHARE: '1', OPENCODE_DISABLE_CLAUDE_CODE: '1' },
  });
  const events = r.out.split('\n').filter(Boolean).map((l) => {
    try { return JSON.parse(l); } catch (e) { return { type: 'unparsed', line: l }; }
  });
  t.note('opencode events: ' + events.map((e) => e.type).join(' '));
  t.is(r.code, 0, 'opencode run exits 0' + (r.code ? ': ' + (r.err || r.out).slice(-600) : ''));
  t.ok(!events.some((e) => e.type === 'error'),
       'no error event' + (events.find((e) => e.type === 'error') ? ': '
         + JSON.stringify(events.find((e) => e.type === 'error')).slice(0, 300) : ''));
  const finish = events.filter((e) => e.type === 'step_finish').pop();
  const tokens = finish && finish.part && finish.part.tokens;
  t.ok(tokens && tokens.input > 1000 && tokens.output > 0,
       'a step finished with its usage ' + JSON.stringify(tokens));

  const posts = log.requests(since).filter((q) => q.method === 'POST');
  const chats = posts.filter((q) => q.uri === '/v1/chat/completions');
  t.ok(chats.length >= 1 && chats.length === posts.length,
       `${posts.length} POST, all /v1/chat/completions`);
  const agent = chats.map((q) => q.body).find((b) => Array.isArray(b.tools) && b.tools.length > 0) || {};
  t.ok(agent.stream === true && agent.max_tokens === 400 && agent.tools.length >= 5
       && agent.messages && agent.messages[0].role === 'system',
       `the agent's request: streamed, max_tokens 400, ${(agent.tools || []).length} tools, a system prompt`);
  log.check(t, since, 'opencode');
  fs.rmSync(dir, { recursive: true, force: true });
});
