'use strict';
// Both official client SDKs load and build clients aimed at the server.
// Needs no running server:  prove --exec node t/node/smoke.js
const t = require('./lib/harness');

t.run(async () => {
  t.plan(6);
  const base = t.baseUrl('http://127.0.0.1:8080');

  const openai = require('openai');
  const OpenAI = openai.OpenAI || openai.default || openai;
  t.is(typeof OpenAI, 'function', 'openai exports the client class');
  const oc = new OpenAI({ baseURL: base + '/v1', apiKey: 'unused' });
  t.is(oc.baseURL, base + '/v1', 'openai client uses the base URL');
  t.is(typeof oc.chat.completions.create, 'function', 'openai has chat.completions.create');

  const anthropic = require('@anthropic-ai/sdk');
  const Anthropic = anthropic.Anthropic || anthropic.default || anthropic;
  t.is(typeof Anthropic, 'function', '@anthropic-ai/sdk exports the client class');
  const ac = new Anthropic({ baseURL: base, apiKey: 'unused' });
  t.is(ac.baseURL, base, 'anthropic client uses the base URL');
  t.is(typeof ac.messages.create, 'function', 'anthropic has messages.create');
});
