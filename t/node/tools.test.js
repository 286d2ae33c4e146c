'use strict';
// Agent-style tool loops with both official SDKs against the shipped default
// model: call -> tool result -> final answer, streamed and not; a streamed
// Anthropic message accumulates to the same message as the non-stream one.
const t = require('./lib/harness');

const weather = {
  name: 'get_weather',
  description: 'Get the current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string', description: 'City name' } }, required: ['city'] },
};
const result = JSON.stringify({ temperature_c: 18, condition: 'cloudy' });

t.run(async () => {
  const model = process.env.LLM_MODEL || 'tiny';
  const openai = require('openai');
  const OpenAI = openai.OpenAI || openai.default || openai;
  const oc = new OpenAI({ baseURL: t.baseUrl() + '/v1', apiKey: 'unused', maxRetries: 0 });
  const tools = [{ type: 'function', function: weather }];
  const ask = { role: 'user', content: 'What is the weather in Paris?' };

  // non-stream
  const first = await oc.chat.completions.create({ model, messages: [ask], tools, temperature: 0 });
  const msg = first.choices[0].message;
  t.is(first.choices[0].finish_reason, 'tool_calls', 'openai: finish_reason tool_calls');
  t.is(msg.tool_calls && msg.tool_calls[0].function.name, 'get_weather', 'openai: calls get_weather');
  const args = JSON.parse(msg.tool_calls[0].function.arguments);
  t.is(typeof args.city, 'string', 'openai: arguments parse to an object with a city');

  const answer = await oc.chat.completions.create({
    model, tools, temperature: 0,
    messages: [ask, msg, { role: 'tool', tool_call_id: msg.tool_calls[0].id, content: result }],
  });
  t.is(answer.choices[0].finish_reason, 'stop', 'openai: the round trip ends with an answer');
  t.like(answer.choices[0].message.content, /18/, 'openai: the answer uses the tool result');

  // stream: accumulate the tool call from deltas as agents do
  const stream = await oc.chat.completions.create({ model, messages: [ask], tools, temperature: 0, stream: true });
  const calls = [];
  let finish = null, reasoning = '';
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    if (c.delta.reasoning_content) reasoning += c.delta.reasoning_content;
    for (const d of c.delta.tool_calls || []) {
      calls[d.index] = calls[d.index] || { id: '', name: '', arguments: '' };
      if (d.id) calls[d.index].id = d.id;
      if (d.function && d.function.name) calls[d.index].name += d.function.name;
      if (d.function && d.function.arguments) calls[d.index].arguments += d.function.arguments;
    }
    if (c.finish_reason) finish = c.finish_reason;
  }
  t.is(finish, 'tool_calls', 'openai stream: finish_reason tool_calls');
  t.is(calls.length, msg.tool_calls.length, 'openai stream: as many calls as non-stream');
  t.is(calls[0].name, 'get_weather', 'openai stream: the name');
  t.is(calls[0].arguments, msg.tool_calls[0].function.arguments, 'openai stream: arguments equal the non-stream ones');
  t.is(reasoning, msg.reasoning_content, 'openai stream: reasoning equals the non-stream reasoning');

  // the openai helper that runs tools itself
  if (oc.chat.completions.runTools) {
    const runner = oc.chat.completions.runTools({
      model, messages: [ask], temperature: 0,
      tools: [{ type: 'function', function: { ...weather, function: async () => result, parse: JSON.parse } }],
    });
    const final = await runner.finalContent();
    t.like(final || '', /18/, 'openai runTools: the tool loop ends in an answer using the result');
  }

  // Anthropic
  const sdk = require('@anthropic-ai/sdk');
  const Anthropic = sdk.Anthropic || sdk.default || sdk;
  const ac = new Anthropic({ baseURL: t.baseUrl(), apiKey: 'unused', maxRetries: 0 });
  const atools = [{ name: weather.name, description: weather.description, input_schema: weather.parameters }];
  const a1 = await ac.messages.create({ model, max_tokens: 300, temperature: 0, tools: atools, messages: [ask] });
  const use = a1.content.find((b) => b.type === 'tool_use');
  t.is(a1.stop_reason, 'tool_use', 'anthropic: stop_reason tool_use');
  t.ok(use && use.id.startsWith('toolu_') && use.name === 'get_weather', 'anthropic: a tool_use block');

  const s = ac.messages.stream({ model, max_tokens: 300, temperature: 0, tools: atools, messages: [ask] });
  const a1s = await s.finalMessage();
  const strip = (m) => m.content.map((b) => (b.type === 'tool_use' ? { ...b, id: 'x' } : b));
  t.deepEqual(strip(a1s), strip(a1), 'anthropic: the streamed message accumulates to the non-stream one');
  t.is(a1s.stop_reason, a1.stop_reason, 'anthropic: same stop_reason streamed');

  const a2 = await ac.messages.create({
    model, max_tokens: 300, temperature: 0, tools: atools,
    messages: [ask, { role: 'assistant', content: a1.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: result }] }],
  });
  t.is(a2.stop_reason, 'end_turn', 'anthropic: the round trip ends the turn');
  t.like(a2.content.filter((b) => b.type === 'text').map((b) => b.text).join(''), /18/,
         'anthropic: the answer uses the tool result');
});
