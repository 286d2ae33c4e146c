'use strict';
// The chat page (llm_api page) in headless Chromium, driven by playwright-core:
// it loads, lists the models from /v1/models, streams an answer from the
// default model into the conversation, fetches nothing but its own origin,
// and its layout (the boxes of its regions, not pixels: fonts differ between
// machines) matches t/node/page-layout.json.  A screenshot of the finished
// chat is written next to the nginx error log for a person to look at.
//   LLM_PAGE_LAYOUT_UPDATE=1  rewrites page-layout.json from this run.
const fs = require('node:fs');
const path = require('node:path');
const t = require('./lib/harness');

const VIEWPORT = { width: 1024, height: 720 };
const TOLERANCE = 12;        // px: font metrics move text-sized boxes a little
const LAYOUT_FILE = path.join(__dirname, 'page-layout.json');

function chromiumPath() {
  const candidates = [process.env.CHROMIUM, '/usr/bin/chromium-headless-shell', '/usr/bin/chromium'];
  return candidates.find((p) => p && fs.existsSync(p));
}

// The boxes compared: regions whose place does not depend on the answer.
const REGIONS = ['header', '#model', '#chat', '#messages', '#composer', '#input', '#send', '#stop',
                 '#settings', '#system', '#temperature', '#top_p', '#max_tokens'];

t.run(async () => {
  const base = t.baseUrl();
  const exe = chromiumPath();
  if (!exe) t.skipAll('no Chromium (Debian: apt-get install chromium-headless-shell)');
  const { chromium } = require('playwright-core');
  const browser = await chromium.launch({ executablePath: exe, headless: true });
  try {
    const page = await browser.newPage({ viewport: VIEWPORT });
    const requests = [];
    const failures = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('pageerror', (e) => failures.push('page error: ' + e.message));
    page.on('console', (m) => { if (m.type() === 'error') failures.push('console: ' + m.text()); });

    const res = await page.goto(base + '/', { waitUntil: 'load' });
    t.is(res.status(), 200, 'the page loads');
    t.is(await page.title(), 'ngx_llm chat', 'its title');

    await page.waitForFunction(() => document.querySelectorAll('#model option').length > 0,
                               null, { timeout: 10000 });
    const models = await page.$$eval('#model option', (os) => os.map((o) => o.value));
    t.deepEqual(models, [process.env.LLM_MODEL], 'the model list comes from /v1/models');

    // short, deterministic settings; they are kept across reloads
    await page.fill('#system', 'You are brief.');
    await page.fill('#temperature', '0');
    await page.fill('#max_tokens', '24');
    await page.dispatchEvent('#max_tokens', 'change');
    await page.dispatchEvent('#temperature', 'change');
    await page.dispatchEvent('#system', 'change');

    // count the updates of the answer while it streams
    await page.evaluate(() => {
      window.__updates = 0;
      new MutationObserver(() => { window.__updates++; })
        .observe(document.getElementById('messages'), { subtree: true, childList: true, characterData: true });
    });
    let body = null;
    page.on('request', (r) => { if (r.url().endsWith('/v1/chat/completions')) body = r.postDataJSON(); });
    await page.fill('#input', 'Hello! Who are you?');
    await page.press('#input', 'Enter');
    await page.waitForSelector('.msg.assistant .stats', { timeout: 120000 });

    t.ok(body && body.stream === true, 'the request streams');
    t.is(body && body.model, process.env.LLM_MODEL, 'for the chosen model');
    t.deepEqual(body && body.messages, [{ role: 'system', content: 'You are brief.' },
                                        { role: 'user', content: 'Hello! Who are you?' }],
                'with the system prompt and the message');
    t.ok(body && body.temperature === 0 && body.max_tokens === 24, 'and the sampling settings');
    const answer = await page.$eval('.msg.assistant', (d) => ({
      content: d.querySelector('.content').textContent,
      reasoning: d.querySelector('details.reasoning') ? d.querySelector('details.reasoning').textContent : '',
      open: d.querySelector('details.reasoning') ? d.querySelector('details.reasoning').open : false,
      error: d.classList.contains('error'),
      stats: d.querySelector('.stats').textContent,
    }));
    t.ok(!answer.error, 'no error shown');
    t.ok(answer.content.length + answer.reasoning.length > 0, 'an answer is shown');
    t.ok(!answer.open, 'reasoning, if any, stays collapsed');
    t.like(answer.stats, /finish: (stop|length)/, 'the finish reason is shown');
    const updates = await page.evaluate(() => window.__updates);
    t.ok(updates >= 3, `the answer arrived in pieces (${updates} updates)`);
    t.ok(await page.isEnabled('#send'), 'send is enabled again');
    t.is((await page.$$('.msg.user')).length, 1, 'one user message shown');

    const origin = new URL(base).origin;
    const foreign = requests.filter((u) => new URL(u).origin !== origin);
    t.deepEqual(foreign, [], 'nothing is fetched from another origin');
    t.deepEqual(failures, [], 'no script errors');

    // layout
    const layout = await page.evaluate((sels) => {
      const out = {};
      for (const s of sels) {
        const e = document.querySelector(s);
        const r = e.getBoundingClientRect();
        out[s] = [r.x, r.y, r.width, r.height].map(Math.round);
      }
      const m = document.getElementById('messages').getBoundingClientRect();
      const u = document.querySelector('.msg.user').getBoundingClientRect();
      const a = document.querySelector('.msg.assistant').getBoundingClientRect();
      out.bubbles = { userRightAligned: Math.abs(m.right - 16 - u.right) <= 2,
                      assistantLeftAligned: Math.abs(a.left - m.left - 16) <= 2,
                      assistantBelowUser: a.top >= u.bottom };
      return out;
    }, REGIONS);
    const shot = path.join(path.dirname(process.env.LLM_ERROR_LOG || '/tmp/x'), 'page.png');
    await page.screenshot({ path: shot });
    t.note('screenshot: ' + shot);
    t.deepEqual(layout.bubbles, { userRightAligned: true, assistantLeftAligned: true, assistantBelowUser: true },
                'user messages on the right, answers on the left, in order');
    delete layout.bubbles;
    if (process.env.LLM_PAGE_LAYOUT_UPDATE) {
      fs.writeFileSync(LAYOUT_FILE, JSON.stringify(layout, null, 1) + '\n');
      t.note('wrote ' + LAYOUT_FILE);
    }
    const want = JSON.parse(fs.readFileSync(LAYOUT_FILE, 'utf8'));
    for (const s of REGIONS) {
      const got = layout[s], exp = want[s];
      const close = got && exp && got.every((v, i) => Math.abs(v - exp[i]) <= TOLERANCE);
      t.ok(close, `layout of ${s}: [${got}] within ${TOLERANCE}px of [${exp}]`);
    }

    // a tool call is shown (the default model calls get_weather for this)
    await page.click('#clear');
    t.is((await page.$$('.msg')).length, 0, 'New chat clears the conversation');
    await page.fill('#tools', JSON.stringify([{ type: 'function', function: {
      name: 'get_weather', description: 'Get the current weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }]));
    await page.fill('#max_tokens', '64');
    await page.fill('#input', 'What is the weather in Paris?');
    await page.press('#input', 'Enter');
    await page.waitForSelector('.msg.assistant .stats', { timeout: 120000 });
    t.ok(body && Array.isArray(body.tools) && body.tools.length === 1, 'the tools are sent');
    const call = await page.$eval('.msg.assistant', (d) => ({
      calls: [...d.querySelectorAll('.tool-call')].map((e) => e.textContent),
      stats: d.querySelector('.stats').textContent }));
    t.is(call.calls.length, 1, 'one tool call is shown');
    t.like(call.calls[0] || '', /^tool call: get_weather \{.*"city".*\}$/, 'with its name and arguments');
    t.like(call.stats, /finish: tool_calls/, 'and finish: tool_calls');

    // settings are kept (localStorage) and the panel can be hidden
    await page.reload({ waitUntil: 'load' });
    t.is(await page.inputValue('#temperature'), '0', 'settings survive a reload');
    await page.click('#toggle-settings');
    t.ok(!(await page.isVisible('#settings')), 'the settings panel hides');
    const wide = await page.$eval('#messages', (e) => Math.round(e.getBoundingClientRect().width));
    t.is(wide, VIEWPORT.width, 'and the conversation takes the width');
  } finally {
    await browser.close();
  }
});
