'use strict';
// The official @anthropic-ai/sdk client against a fixture model:
// messages.create, messages.stream (final message equals the non-stream one
// under greedy decoding), countTokens, errors, and 529 when overloaded.
const t = require('./lib/harness');

t.run(async () => {
  const sdk = require('@anthropic-ai/sdk');
  const Anthropic = sdk.Anthropic || sdk.default || sdk;
  const client = new Anthropic({ baseURL: t.baseUrl(), apiKey: 'unused', maxRetries: 0 });
  const model = process.env.LLM_MODEL || 'tiny';
  const messages = [{ role: 'user', content: 'tell me something' }];

  const msg = await client.messages.create({ model, max_tokens: 10, temperature: 0, messages });
  t.is(msg.type, 'message', 'message type');
  t.is(msg.role, 'assistant', 'assistant role');
  t.ok(msg.id.startsWith('msg_'), 'msg_ id');
  t.is(msg.stop_reason, 'max_tokens', 'stop_reason max_tokens');
  t.is(msg.usage.output_tokens, 10, 'usage.output_tokens');
  t.is(msg.content[0].type, 'text', 'a text block');

  const stream = client.messages.stream({ model, max_tokens: 10, temperature: 0, messages });
  const events = [];
  stream.on('streamEvent', (e) => events.push(e.type));
  const final = await stream.finalMessage();
  t.is(final.content[0].text, msg.content[0].text, 'streamed text equals the non-stream text');
  t.is(final.stop_reason, 'max_tokens', 'streamed stop_reason');
  t.is(final.usage.output_tokens, 10, 'streamed output_tokens');
  t.is(events[0], 'message_start', 'first event message_start');
  t.is(events[events.length - 1], 'message_stop', 'last event message_stop');
  t.ok(events.includes('content_block_delta'), 'content_block_delta events');

  const count = await client.messages.countTokens({ model, messages });
  t.ok(count.input_tokens > 0, `countTokens: ${count.input_tokens}`);
  t.is(count.input_tokens, msg.usage.input_tokens + (msg.usage.cache_read_input_tokens || 0),
       'countTokens equals the prompt the message used');

  const failure = (p) => p.then(() => null, (e) => e);
  const e404 = await failure(client.messages.create({ model: 'nope', max_tokens: 5, messages }));
  t.ok(e404 instanceof sdk.NotFoundError && e404.status === 404, 'unknown model: NotFoundError 404');
  t.is(e404 && e404.error && e404.error.error && e404.error.error.type, 'not_found_error',
       'Anthropic error body');
  const e400 = await failure(client.messages.create({ model, max_tokens: 5, messages: [] }));
  t.ok(e400 instanceof sdk.BadRequestError && e400.status === 400, 'empty messages: BadRequestError 400');

  // the "busy" model has one slot and no queue: concurrent requests overflow
  const busy = process.env.LLM_BUSY_MODEL;
  if (busy) {
    const results = await Promise.all(Array.from({ length: 4 }, () =>
      failure(client.messages.create({ model: busy, max_tokens: 64, messages }))));
    const over = results.filter((e) => e && e.status === 529);
    t.ok(over.length >= 1, `529 overloaded_error when the queue is full (${over.length} of 4)`);
    t.is(over[0] && over[0].error && over[0].error.error && over[0].error.error.type,
         'overloaded_error', 'overloaded_error type');
  }
});
