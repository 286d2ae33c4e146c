'use strict';
// Agent frameworks from npm against the server, as their users call them:
// the Vercel AI SDK (`ai` + @ai-sdk/openai-compatible, /v1/chat/completions)
// and LangChain JS (@langchain/openai over /v1/chat/completions and
// /v1/responses, @langchain/anthropic over /v1/messages): plain text,
// streaming, a tool loop and structured output.  Whatever the answer of the
// tiny default model says, every request the framework sends must succeed
// (t/clients/agents.t checks the access log for 4xx/5xx after this runs).
const t = require('../node/lib/harness');
const log = require('./lib/log');

const weather = {
  name: 'get_weather',
  description: 'Get the current weather for a city',
};
const forecast = { temperature_c: 18, condition: 'cloudy' };

t.run(async () => {
  const base = t.baseUrl();
  const since = log.mark();
  const model = process.env.LLM_MODEL || 'ngxllm-tiny';
  const { z } = require('zod');
  const city = z.object({ city: z.string().describe('City name') });
  const person = z.object({ name: z.string(), age: z.number().int() });
  const ask = 'What is the weather in Paris?';

  // ---- Vercel AI SDK ----
  {
    const ai = require('ai');
    const { createOpenAICompatible } = require('@ai-sdk/openai-compatible');
    const provider = createOpenAICompatible({
      name: 'ngx_llm', baseURL: base + '/v1', apiKey: 'unused',
      supportsStructuredOutputs: true, includeUsage: true,
    });
    const m = provider(model);

    const text = await ai.generateText({ model: m, prompt: 'Say hello.', maxOutputTokens: 24, temperature: 0 });
    t.ok(typeof text.text === 'string' && text.usage.outputTokens > 0, 'ai: generateText: ' + JSON.stringify(text.text.slice(0, 40)));

    const stream = ai.streamText({ model: m, prompt: 'Say hello.', maxOutputTokens: 24, temperature: 0 });
    let parts = 0, streamed = '';
    for await (const d of stream.textStream) { parts++; streamed += d; }
    t.ok(parts > 1 && (await stream.finishReason) !== undefined, `ai: streamText (${parts} parts)`);
    t.is(streamed, text.text, 'ai: the streamed text is the generated text (temperature 0)');

    let called = null;
    const loop = await ai.generateText({
      model: m, prompt: ask, temperature: 0, maxOutputTokens: 128,
      tools: { get_weather: ai.tool({ ...weather, inputSchema: city,
        execute: async (args) => { called = args; return forecast; } }) },
      stopWhen: ai.stepCountIs(3),
    });
    t.ok(called && typeof called.city === 'string', 'ai: the tool ran with ' + JSON.stringify(called));
    t.ok(loop.steps.length >= 2, `ai: the loop went on after the tool (${loop.steps.length} steps, finish ${loop.finishReason})`);

    // The tiny model may run out of tokens inside a string: the request
    // must succeed; the object must parse when the model finished.
    try {
      const obj = await ai.generateText({
        model: m, temperature: 0, maxOutputTokens: 96,
        prompt: 'Invent a person: reply with their name and age.',
        output: ai.Output.object({ schema: person }),
      });
      const o = obj.output;
      t.ok(o && typeof o.name === 'string' && Number.isInteger(o.age), 'ai: Output.object follows the schema: ' + JSON.stringify(o));
    } catch (e) {
      t.is(e.finishReason, 'length', 'ai: Output.object: no object only because the output was cut (' + e.name + ')');
    }
  }

  // ---- LangChain JS ----
  {
    const { ChatOpenAI } = require('@langchain/openai');
    const { ChatAnthropic } = require('@langchain/anthropic');
    const { tool } = require('@langchain/core/tools');
    const { HumanMessage, ToolMessage } = require('@langchain/core/messages');
    const getWeather = tool(async () => JSON.stringify(forecast), { ...weather, schema: city });

    const chats = {
      'langchain openai (chat completions)': new ChatOpenAI({
        model, apiKey: 'unused', temperature: 0, maxTokens: 96, maxRetries: 0,
        configuration: { baseURL: base + '/v1' } }),
      'langchain openai (responses)': new ChatOpenAI({
        model, apiKey: 'unused', temperature: 0, maxTokens: 96, maxRetries: 0, useResponsesApi: true,
        configuration: { baseURL: base + '/v1' } }),
      'langchain anthropic': new ChatAnthropic({
        model, apiKey: 'unused', temperature: 0, maxTokens: 96, maxRetries: 0,
        anthropicApiUrl: base }),
    };
    for (const [name, chat] of Object.entries(chats)) {
      const r = await chat.invoke('Say hello.');
      t.ok(typeof r.content === 'string' || Array.isArray(r.content), `${name}: invoke`);

      let chunks = 0;
      for await (const c of await chat.stream('Say hello.')) { if (c) chunks++; }
      t.ok(chunks > 1, `${name}: stream (${chunks} chunks)`);

      const withTools = chat.bindTools([getWeather]);
      const first = await withTools.invoke([new HumanMessage(ask)]);
      const tc = first.tool_calls && first.tool_calls[0];
      t.is(tc && tc.name, 'get_weather', `${name}: a tool call`);
      if (tc) {
        const answer = await withTools.invoke([new HumanMessage(ask), first,
          new ToolMessage({ tool_call_id: tc.id, content: JSON.stringify(forecast) })]);
        t.ok(answer && answer.content !== undefined, `${name}: the tool result is taken`);
      } else {
        t.fail(`${name}: the tool result is taken`, 'no tool call');
      }

      const structured = chat.withStructuredOutput(person, { name: 'person' });
      try {
        const p = await structured.invoke('Invent a person: reply with their name and age.');
        t.ok(p && typeof p.name === 'string' && Number.isInteger(p.age), `${name}: withStructuredOutput: ` + JSON.stringify(p));
      } catch (e) {
        // a cut answer (maxTokens) cannot parse; a refused request would be in the log check
        t.note(`${name}: withStructuredOutput did not parse: ${String(e.message).slice(0, 160)}`);
        t.pass(`${name}: withStructuredOutput sent (output cut by max tokens)`);
      }
    }
  }

  log.check(t, since, 'ai sdk + langchain');
});
