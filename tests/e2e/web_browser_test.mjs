// The dashboard in a real browser (issue 32): Debian's chromium, headless, driven by
// puppeteer-core (pinned by web_browser/package-lock.json, installed by scripts/setup test;
// no browser is ever downloaded) against a real `deskd serve` with two desks on the script
// model, logged in over loopback TCP with the link `deskctl web-url` prints. It watches a
// turn stream to its end, steers it, accepts a proposal and sees the file change, reads the
// journal by kind, pauses and resumes a desk, approves a call the API gate held (to a broker
// of its own, web_browser/gated_api.mjs) and sees it reach the API with the key put in, and
// finds a desk's <script> and <img onerror> output shown as text with nothing run.
// Screenshots of the overview, a desk, the decisions and the spend page go to
// DESKD_WEB_SCREENSHOTS (ctest: the build's tests/e2e/web_screenshots/).

import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { BROKER_KEY, startBroker } from './web_browser/gated_api.mjs';
import { importPuppeteer, startServe } from './web_browser/serve_harness.mjs';

const STEERING = 'also look at the README, please';
// What a hostile desk prints: were any of it run, it would set the page-level flag.
const HOSTILE = '<script>window.__deskdInjected = "script"</script><img src=x onerror="window.__deskdInjected = \'img\'">';

const step = (text, tool) => ({ text, tool_calls: tool ? [tool] : [] });
const bash = (command) => ({ name: 'bash', input: { command } });
const line = (turn) => `${JSON.stringify(turn)}\n`;

// alpha: a turn whose tool runs long enough to be steered, then a proposal to plan.md.
const ALPHA = line({ steps: [step('reading the plan', bash('echo started; sleep 4; echo slept')), step('the plan is read')] }) +
  line({ steps: [step('', { name: 'propose_file_change', input: { path: 'plan.md', content: 'plan v2\n', reason: 'a tighter plan' } }), step('proposed')] });
// beta: model text and tool output that are markup; then an order through the API gate,
// which holds it for a person.
const betaScript = (broker) => line({ steps: [step(`here it is: ${HOSTILE}`, bash(`printf '%s\\n' '${HOSTILE.replaceAll("'", "'\\''")}'`)), step('printed')] }) +
  line({ steps: [step('placing the order', bash(`curl -sS -m 60 -w ' status=%{http_code}\\n' -X POST ${broker.origin}/orders/co -d quantity=1`)), step('order placed')] });

const screenshots = process.env.DESKD_WEB_SCREENSHOTS ?? join(process.cwd(), 'web_screenshots');
let serve;
let broker;
let browser;
let page;
const problems = [];  // what the page's console and errors said: the page must run clean under its CSP

before(async () => {
  mkdirSync(screenshots, { recursive: true });
  broker = await startBroker();
  serve = await startServe([{ name: 'alpha', script: ALPHA },
    { name: 'beta', script: betaScript(broker), settings: 'apis = ["broker"]\n', tables: '[desk.sandbox]\nnetwork = "allowlist"\n' }],
  broker.table);
  const puppeteer = await importPuppeteer();
  browser = await puppeteer.launch({
    executablePath: process.env.DESKD_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    // Chromium refuses to start as root with its own sandbox on (it needs user namespaces
    // it will not set up for uid 0); the tests run as root on CI. Only then is it turned off:
    // the browser loads nothing but deskd's own loopback page.
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
  page = await browser.newPage();
  await page.setViewport({ width: 390, height: 844 });  // a phone first
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`HTTP ${response.status()} for ${response.url()}`);
  });
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') problems.push(`console ${message.type()}: ${message.text()}`);
  });
});

after(async () => {
  await browser?.close();
  if (serve && process.exitCode && process.exitCode !== 0) console.error(`deskd's log:\n${serve.log()}`);
  await serve?.stop();
  await broker?.close();
});

const text = (selector) => page.$$eval(selector, (elements) => elements.map((element) => element.textContent).join('\n'));
const waitForText = (selector, wanted, timeout = 30000) => page.waitForFunction(
  (css, expected) => [...document.querySelectorAll(css)].some((element) => element.textContent.includes(expected)),
  { timeout }, selector, wanted);

// Clicks the element once it is on the page and visible: a view draws itself after its
// route's fetches, and a click on a node not laid out yet fails ("not clickable").
async function click(selector) {
  const element = await page.waitForSelector(selector, { visible: true, timeout: 10000 });
  await element.click();
}

async function sendFromDeskPage(message) {
  // The line under the box names the new trigger once deskd has it; empty it first, so that
  // the previous send's line is not read as this one's.
  await page.$eval('.sent', (line) => { line.textContent = ''; });
  await page.$eval('form.send textarea', (area) => { area.value = ''; });
  await page.type('form.send textarea', message);
  await click('form.send button[type=submit]');
  await page.waitForFunction(() => /trigger \S+/.test(document.querySelector('.sent')?.textContent ?? ''), { timeout: 10000 });
  return /trigger (\S+)/.exec(await text('.sent'))[1];
}

test('without a login deskd serves nothing over TCP, and the link from deskctl web-url logs in', async () => {
  const refused = await page.goto(serve.origin, { waitUntil: 'domcontentloaded' });
  assert.equal(refused.status(), 401);
  assert.equal(await page.$('#view'), null, 'the page was served without a login');
  await page.goto(await serve.loginUrl(), { waitUntil: 'domcontentloaded' });
  assert.equal(new URL(page.url()).pathname, '/');
  const cookies = await browser.defaultBrowserContext().cookies();
  const session = cookies.find((cookie) => cookie.name === 'deskd_session');
  assert.ok(session, 'no session cookie');
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, 'Strict');
});

test('the overview shows both desks, and its first load is small', async (context) => {
  await page.setCacheEnabled(false);
  await page.goto(`${serve.origin}/#/`, { waitUntil: 'networkidle2' });
  await page.setCacheEnabled(true);
  // What crossed the wire (compressed, with headers) for the page and its assets: the issue
  // allows 300 KB for a slow phone link.
  const loaded = await page.evaluate(() => [...performance.getEntriesByType('navigation'),
    ...performance.getEntriesByType('resource')].filter((entry) => !entry.name.includes('/api/'))
    .reduce((sum, entry) => sum + entry.transferSize, 0));
  assert.ok(loaded > 0 && loaded <= 300 * 1024, `the first load took ${loaded} bytes`);
  context.diagnostic(`the first load took ${loaded} bytes (compressed, with headers)`);
  await page.waitForSelector('li.card[data-desk="alpha"]', { timeout: 15000 });
  await page.waitForSelector('li.card[data-desk="beta"]', { timeout: 15000 });
  const overview = await text('ul.desks');
  assert.match(overview, /idle/);
  assert.match(overview, /script/);
});

test('a turn streams to its end, and a message sent during it steers it', async () => {
  await page.goto(`${serve.origin}/#/desk/alpha`, { waitUntil: 'domcontentloaded' });
  await waitForText('.stream-state', 'live', 10000);
  await sendFromDeskPage('read the plan');
  await waitForText('ol.live .event.tool', 'sleep 4');
  await waitForText('ol.live .event.model', 'reading the plan');
  const steering = await sendFromDeskPage(STEERING);
  await waitForText('ol.live .event.steer', 'delivered to the running turn');
  await waitForText('ol.live .event.turn-end', 'turn finished');
  const live = await text('ol.live');
  assert.match(live, /started\s+slept/, 'the tool output streamed');
  assert.match(live, /the plan is read/);
  // The model's next request carried the message: the desk's session has it.
  assert.ok(readFileSync(serve.sessionPath('alpha'), 'utf8').includes(STEERING), `steering ${steering} is not in the session`);
  await waitForText('.desk-state', 'idle');  // the facts follow the stream
  await page.screenshot({ path: join(screenshots, 'desk.png'), fullPage: true });
});

test('a proposal is accepted on the Decisions page and the file changes on disk', async () => {
  await sendFromDeskPage('propose a tighter plan');
  await waitForText('ol.live .event.turn-end', 'turn finished');
  await page.goto(`${serve.origin}/#/decisions`, { waitUntil: 'domcontentloaded' });
  await waitForText('ul.proposals .proposal', '+plan v2');
  assert.equal(readFileSync(join(serve.deskDirectory('alpha'), 'plan.md'), 'utf8'), 'plan v1\n');
  await click('ul.proposals .proposal button.accept');
  await waitForText('.outcome', 'accepted');
  assert.equal(readFileSync(join(serve.deskDirectory('alpha'), 'plan.md'), 'utf8'), 'plan v2\n');
});

test('the journal is read by kind, and Pause and Resume switch the desk', async () => {
  await page.goto(`${serve.origin}/#/desk/alpha`, { waitUntil: 'domcontentloaded' });
  await waitForText('.stream-state', 'live', 10000);
  await page.type('.journal-ask input', 'TOOL_CALLED');
  await click('.journal-ask button');
  await waitForText('pre.journal', 'propose_file_change');
  assert.doesNotMatch(await text('pre.journal'), /MODEL_TEXT/);
  await click('form.send button.pause');
  await waitForText('.desk-state', 'paused');
  await click('form.send button.resume');
  await page.waitForFunction(() => !document.querySelector('.desk-state')?.textContent.includes('paused'), { timeout: 15000 });
});

test('a desk\'s <script> and <img onerror> are shown as text, and nothing of them runs', async () => {
  await page.goto(`${serve.origin}/#/desk/beta`, { waitUntil: 'domcontentloaded' });
  await waitForText('.stream-state', 'live', 10000);
  await sendFromDeskPage('print some markup');
  await waitForText('ol.live .event.turn-end', 'turn finished');
  await waitForText('ol.live .event.tool-output', HOSTILE);
  await waitForText('ol.live .event.model', HOSTILE);
  assert.equal(await page.evaluate(() => window.__deskdInjected), undefined, 'the desk\'s markup ran');
  assert.equal(await page.$$eval('main img, main script', (found) => found.length), 0);
  await page.goto(`${serve.origin}/#/`, { waitUntil: 'domcontentloaded' });
  await waitForText('li.card[data-desk="beta"] .last-lines', 'printf');
  assert.equal(await page.evaluate(() => window.__deskdInjected), undefined, 'the desk\'s markup ran on the overview');
  await waitForText('li.card[data-desk="alpha"] .last-lines', 'proposed');
  await page.screenshot({ path: join(screenshots, 'overview.png'), fullPage: true });
});

test('an API call the gate holds is approved on the Decisions page and reaches the API with its key', async () => {
  await page.goto(`${serve.origin}/#/desk/beta`, { waitUntil: 'domcontentloaded' });
  await waitForText('.stream-state', 'live', 10000);
  await sendFromDeskPage('place the order');
  await waitForText('ol.live .event', 'waits for approval');
  await page.goto(`${serve.origin}/#/decisions`, { waitUntil: 'domcontentloaded' });
  await waitForText('ul.approvals .approval', 'POST');
  const card = await text('ul.approvals .approval');
  assert.match(card, /orders\/co/);
  assert.match(card, /sha256 [0-9a-f]{64}/);
  assert.equal(broker.requests.length, 0, 'the order went out before it was approved');
  await page.screenshot({ path: join(screenshots, 'decisions.png'), fullPage: true });
  await click('ul.approvals .approval button.approve');
  await waitForText('.outcome', 'approve');
  await page.goto(`${serve.origin}/#/desk/beta`, { waitUntil: 'domcontentloaded' });
  await waitForText('ol.live .event.tool-output', 'status=200');
  assert.equal(broker.requests.length, 1);
  assert.equal(broker.requests[0].authorization, `token ${BROKER_KEY}`);
});

test('the other pages draw, and the page ran clean under its Content-Security-Policy', async () => {
  await page.goto(`${serve.origin}/#/refusals`, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('ul.refusals li', { timeout: 10000 });
  await page.goto(`${serve.origin}/#/spend`, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('svg.chart rect.bar', { timeout: 10000 });
  // Each running desk has its days and its split by model (the spend op's, by India day).
  await page.waitForSelector('section.card h2 a[href="#/desk/alpha"]', { timeout: 10000 });
  await page.screenshot({ path: join(screenshots, 'spend.png'), fullPage: true });
  // Only the logged-out visit's 401 (and the browser's console line for it).
  const unexpected = problems.filter((problem) => !/401/.test(problem));
  assert.deepEqual(unexpected, []);
});
