'use strict';
// The official openai client against a fixture model: greedy stream equals
// non-stream, seeds reproduce, concurrent streams equal sequential runs,
// completions, embeddings and error classes.
const t = require('./lib/harness');

t.run(async () => {
  const openai = require('openai');
  const OpenAI = openai.OpenAI || openai.default || openai;
  const client = new OpenAI({ baseURL: t.baseUrl() + '/v1', apiKey: 'unused', maxRetries: 0 });
  const model = process.env.LLM_MODEL || 'tiny';

  const models = await client.models.list();
  t.is(models.data[0].id, model, 'models.list names the model');

  const messages = [{ role: 'user', content: 'tell me something' }];
  const plain = await client.chat.completions.create({
    model, messages, max_tokens: 12, temperature: 0,
  });
  t.is(plain.object, 'chat.completion', 'non-stream object');
  t.is(plain.choices[0].finish_reason, 'length', 'finish_reason length');
  t.is(plain.usage.completion_tokens, 12, 'usage counts 12 tokens');

  const stream = await client.chat.completions.create({
    model, messages, max_tokens: 12, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  });
  let text = '', finish = null, usage = null, role = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) role = c.delta.role;
      text += c.delta.content || '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  t.is(role, 'assistant', 'stream starts with the assistant role');
  t.is(text, plain.choices[0].message.content, 'greedy stream text equals non-stream text');
  t.is(finish, 'length', 'stream finish_reason');
  t.is(usage && usage.completion_tokens, 12, 'stream usage chunk');

  // same seed, same sample
  const seeded = () => client.chat.completions.create({
    model, messages, max_tokens: 16, temperature: 1.0, seed: 1234,
  }).then((r) => r.choices[0].message.content);
  const [s1, s2] = [await seeded(), await seeded()];
  t.is(s1, s2, 'the same seed gives the same sample');

  // 8 concurrent greedy streams give what 8 sequential runs give
  const prompts = Array.from({ length: 8 }, (_, i) => `prompt number ${i} ${'x'.repeat(i * 3)}`);
  const body = (p) => ({ model, messages: [{ role: 'user', content: p }], max_tokens: 10, temperature: 0 });
  const sequential = [];
  for (const p of prompts) {
    sequential.push((await client.chat.completions.create(body(p))).choices[0].message.content);
  }
  const concurrent = await Promise.all(prompts.map(async (p) => {
    const s = await client.chat.completions.create({ ...body(p), stream: true });
    let out = '';
    for await (const chunk of s) out += chunk.choices[0]?.delta?.content || '';
    return out;
  }));
  t.deepEqual(concurrent, sequential, '8 concurrent streams equal 8 sequential runs');

  const comp = await client.completions.create({ model, prompt: 'abc', max_tokens: 5, temperature: 0 });
  t.is(comp.object, 'text_completion', 'completions object');
  t.is(comp.usage.prompt_tokens, 3, 'completions prompt tokens');

  const emb = await client.embeddings.create({ model, input: ['hello', 'world'] });
  t.is(emb.data.length, 2, 'two embeddings');
  const v = emb.data[0].embedding;
  t.ok(Array.isArray(v) && v.length === 64, 'embedding has the hidden size');
  const norm = Math.sqrt(v.reduce((a, x) => a + x * x, 0));
  t.ok(Math.abs(norm - 1) < 1e-3, 'embedding is unit length');
  const emb64 = await client.embeddings.create({ model, input: 'hello' });
  t.ok(emb64.data[0].embedding.every((x, i) => Math.abs(x - v[i]) < 1e-6),
       'the SDK default (base64) decodes to the same vector');

  const failure = (p) => p.then(() => null, (e) => e);
  const e404 = await failure(client.chat.completions.create({ model: 'nope', messages }));
  t.ok(e404 instanceof openai.NotFoundError && e404.status === 404, 'unknown model: NotFoundError 404');
  t.is(e404 && e404.code, 'model_not_found', 'error code model_not_found');
  const e400 = await failure(client.chat.completions.create({ model, messages: [] }));
  t.ok(e400 instanceof openai.BadRequestError && e400.status === 400, 'empty messages: BadRequestError 400');
  t.is(e400 && e400.param, 'messages', 'error param names the field');
});
