'use strict';
// The official openai client's Responses API against /v1/responses with the
// shipped default model: responses.create, responses.stream (the SDK
// accumulates the semantic events into the same response), a function-call
// round trip that sends the output items back with a function_call_output,
// structured output through text.format, previous_response_id with
// responses.retrieve / responses.delete (llm_responses_store), and a refused
// field as an APIError.
const t = require('./lib/harness');

const weather = {
  type: 'function',
  name: 'get_weather',
  description: 'Get the current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string', description: 'City name' } }, required: ['city'] },
};
const result = JSON.stringify({ temperature_c: 18, condition: 'cloudy' });

t.run(async () => {
  const model = process.env.LLM_MODEL || 'tiny';
  const openai = require('openai');
  const OpenAI = openai.OpenAI || openai.default || openai;
  const client = new OpenAI({ baseURL: t.baseUrl() + '/v1', apiKey: 'unused', maxRetries: 0 });

  // responses.create
  const r = await client.responses.create({ model, input: 'Hello there!', instructions: 'You are a helpful assistant.', temperature: 0 });
  t.is(r.object, 'response', 'create: object response');
  t.like(r.id, /^resp_\w{24}$/, 'create: a resp_ id');
  t.is(r.status, 'completed', 'create: completed');
  t.like(r.output_text, /\S/, 'create: the SDK finds the output text');
  t.is(r.output[0].type, 'reasoning', 'create: the reasoning item first');
  t.ok(r.usage.output_tokens > 0 && r.usage.output_tokens_details.reasoning_tokens > 0
       && r.usage.output_tokens_details.reasoning_tokens < r.usage.output_tokens,
       'create: reasoning tokens are part of the output tokens');
  t.is(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens, 'create: total_tokens');

  // responses.stream: the events, and the response the SDK builds from them
  const stream = client.responses.stream({ model, input: 'Hello there!', instructions: 'You are a helpful assistant.', temperature: 0 });
  const types = [];
  let text = '', seqOk = true;
  for await (const ev of stream) {
    if (ev.sequence_number !== types.length) seqOk = false;
    types.push(ev.type);
    if (ev.type === 'response.output_text.delta') text += ev.delta;
  }
  const final = await stream.finalResponse();
  t.is(types[0], 'response.created', 'stream: response.created first');
  t.is(types[1], 'response.in_progress', 'stream: then response.in_progress');
  t.is(types[types.length - 1], 'response.completed', 'stream: response.completed last');
  t.ok(seqOk, 'stream: sequence_number counts the events from 0');
  t.ok(types.includes('response.reasoning_text.delta') && types.includes('response.output_text.done')
       && types.includes('response.content_part.done') && types.includes('response.output_item.done'),
       'stream: reasoning, text, part and item events');
  t.is(text, final.output_text, 'stream: the deltas make the final text');
  t.is(final.output_text, r.output_text, 'stream: the same answer as create');
  t.is(final.status, 'completed', 'stream: the final response is completed');

  // a function-call round trip
  const input = [{ role: 'user', content: 'What is the weather in Paris?' }];
  const first = await client.responses.create({ model, input, tools: [weather], temperature: 0 });
  const call = first.output.find((i) => i.type === 'function_call');
  t.ok(call && call.name === 'get_weather', 'tools: a get_weather function_call item');
  t.like(call && call.call_id, /^call_\w+$/, 'tools: with a call_id');
  t.is(call && JSON.parse(call.arguments).city, 'Paris', 'tools: the arguments name Paris');

  const answer = await client.responses.create({
    model, tools: [weather], temperature: 0,
    input: [...input, ...first.output, { type: 'function_call_output', call_id: call.call_id, output: result }],
  });
  t.is(answer.status, 'completed', 'round trip: completed');
  t.ok(!answer.output.some((i) => i.type === 'function_call'), 'round trip: no new call');
  t.like(answer.output_text, /18/, 'round trip: the answer uses the function output');

  // the same call streamed
  const cs = client.responses.stream({ model, input, tools: [weather], temperature: 0 });
  let args = '', argsDone = null;
  for await (const ev of cs) {
    if (ev.type === 'response.function_call_arguments.delta') args += ev.delta;
    if (ev.type === 'response.function_call_arguments.done') argsDone = ev.arguments;
  }
  const cfinal = await cs.finalResponse();
  const scall = cfinal.output.find((i) => i.type === 'function_call');
  t.is(args, call.arguments, 'stream tools: the deltas make the arguments');
  t.is(argsDone, call.arguments, 'stream tools: .done carries them whole');
  t.is(scall && scall.name, 'get_weather', 'stream tools: the final response has the call');

  // structured output
  const s = await client.responses.create({
    model, input: 'Give me a number.', temperature: 0, max_output_tokens: 40, reasoning: { effort: 'none' },
    text: { format: { type: 'json_schema', name: 'n', strict: true,
                      schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false } } },
  });
  let parsed = null;
  try { parsed = JSON.parse(s.output_text); } catch (e) { /* reported below */ }
  t.ok(parsed && Number.isInteger(parsed.n), 'text.format: the output follows the schema');

  // kept responses (llm_responses_store): the function-call round trip again,
  // continued by previous_response_id instead of sending the output back
  const kept = await client.responses.create({ model, input, tools: [weather], temperature: 0 });
  t.is(kept.store, true, 'store: the response says it is kept');
  const kcall = kept.output.find((i) => i.type === 'function_call');
  t.ok(kcall, 'store: the kept response has the call');
  const next = await client.responses.create({
    model, tools: [weather], temperature: 0, previous_response_id: kept.id,
    input: [{ type: 'function_call_output', call_id: kcall.call_id, output: result }],
  });
  t.is(next.previous_response_id, kept.id, 'previous_response_id: repeated in the response');
  t.is(next.status, 'completed', 'previous_response_id: completed');
  t.is(next.output_text, answer.output_text, 'previous_response_id: the same answer as sending the items back');
  t.is(next.usage.input_tokens, answer.usage.input_tokens, 'previous_response_id: the same prompt');
  const got = await client.responses.retrieve(kept.id);
  t.is(got.id, kept.id, 'responses.retrieve: the kept response');
  t.is(JSON.stringify(got.output), JSON.stringify(kept.output), 'responses.retrieve: its output as answered');
  await client.responses.delete(next.id);
  try {
    await client.responses.retrieve(next.id);
    t.fail('responses.delete: the response is gone');
  } catch (e) {
    t.is(e.status, 404, 'responses.delete: then retrieve is a 404 (NotFoundError)');
  }
  try {
    await client.responses.create({ model, input: 'hi', previous_response_id: next.id });
    t.fail('previous_response_id of a deleted response: refused');
  } catch (e) {
    t.is(e.status, 404, 'previous_response_id of a deleted response: 404');
    t.is(e.param, 'previous_response_id', 'previous_response_id: the param is named');
    t.is(e.code, 'previous_response_not_found', 'previous_response_id: code previous_response_not_found');
  }

  // a refused field is an APIError with OpenAI's fields
  try {
    await client.responses.create({ model, input: 'hi', conversation: 'conv_1' });
    t.fail('conversation: refused');
  } catch (e) {
    t.is(e.status, 400, 'conversation: 400');
    t.is(e.param, 'conversation', 'conversation: the param is named');
  }
});
