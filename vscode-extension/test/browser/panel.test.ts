/**
 * The panel's real bundle (dist/webview.js, dist/panel.css) in real headless
 * Chromium, under the panel's real HTML and CSP, fed a recorded session. A stub
 * `acquireVsCodeApi` records what the panel posts to the extension host.
 */

import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { makeNonce, panelHtml } from '../../src/html';
import type { HostMessage, WebviewMessage } from '../../src/webview/state';
import { launchChromium } from '../support/browser';

const ROOT = resolve(__dirname, '..', '..', '..');
const OUT = join(ROOT, '.test-output');
const session = JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'session.json'), 'utf8')) as HostMessage[];

let browser: Browser;
let page: Page;

async function posted(): Promise<WebviewMessage[]> {
  return page.evaluate(() => (window as unknown as { __posted: WebviewMessage[] }).__posted);
}

async function lastPosted(): Promise<WebviewMessage | undefined> {
  return (await posted()).at(-1);
}

before(async () => {
  mkdirSync(OUT, { recursive: true });
  const dist = pathToFileURL(join(ROOT, 'dist')).href;
  const html = panelHtml({
    scriptUri: `${dist}/webview.js`,
    styleUri: `${dist}/panel.css`,
    cspSource: 'file:',
    nonce: makeNonce(),
  });
  writeFileSync(join(OUT, 'panel.html'), html);
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 460, height: 1100 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.addInitScript(() => {
    const w = window as unknown as { __posted: unknown[]; acquireVsCodeApi: () => unknown };
    w.__posted = [];
    let saved: unknown;
    w.acquireVsCodeApi = () => ({
      postMessage: (m: unknown) => w.__posted.push(m),
      getState: () => saved,
      setState: (s: unknown) => {
        saved = s;
      },
    });
  });
  await page.goto(pathToFileURL(join(OUT, 'panel.html')).href);
  await page.waitForFunction(() => (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === 'ready'));
  for (const message of session) await page.evaluate((m) => window.postMessage(m, '*'), message);
  await page.waitForSelector('#approval:not([hidden])');
  assert.deepEqual(errors, []);
});

after(async () => {
  await browser?.close();
});

test('the conversation: user text, folded thoughts, markdown with highlighted, copyable code', async () => {
  assert.equal(await page.textContent('#title'), 'Fix the failing test');
  assert.equal(await page.textContent('.msg.user .markdown'), 'tests/test_app.py fails: fix it');
  assert.equal(await page.textContent('.msg.user .chip'), 'app.py');
  const thought = page.locator('details.thought');
  assert.equal(await thought.getAttribute('open'), null, 'thoughts are folded');
  assert.match((await thought.textContent()) ?? '', /run it first/);
  const agent = page.locator('.msg.agent').first();
  assert.match((await agent.textContent()) ?? '', /The test fails because x is 1\./);
  assert.equal(await agent.locator('strong').textContent(), '1');
  assert.equal(await agent.locator('.code-block .hljs-keyword').first().textContent(), 'def');
  await agent.locator('button.copy').click();
  assert.deepEqual(await lastPosted(), { type: 'copy', text: 'def value():\n    return 2  # was 1' });
  assert.equal(await agent.locator('a[href="https://docs.pytest.org/"]').count(), 1);
});

test('model text carrying script is inert in the real DOM', async () => {
  const conversation = page.locator('#conversation');
  assert.equal(await conversation.locator('script, img, iframe').count(), 0);
  assert.match((await conversation.textContent()) ?? '', /<script>window.__pwned = 'script'<\/script>/);
  await conversation.getByText('a javascript link').click();
  assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: string }).__pwned), undefined);
  assert.equal(await conversation.locator('a[href^="javascript"]').count(), 0);
});

test('a tool card shows kind, title, status, the exact command and its output', async () => {
  const card = page.locator('.tool-card[data-kind="execute"]');
  assert.equal(await card.getAttribute('data-status'), 'completed');
  assert.equal(await card.locator('.tool-title').textContent(), 'Run `pytest -q tests/test_app.py`');
  assert.equal(await card.locator('.tool-subject').textContent(), 'pytest -q tests/test_app.py');
  assert.match((await card.locator('.tool-output pre').textContent()) ?? '', /1 failed in 0.02s/);
});

test('an edit card shows its diff, opens it in the diff editor and its location at the line', async () => {
  const card = page.locator('.tool-card[data-kind="edit"]');
  assert.deepEqual(await card.locator('.diff .line.del').allTextContents(), ['- x = 1']);
  assert.deepEqual(await card.locator('.diff .line.add').allTextContents(), ['+ x = 2']);
  await card.locator('button.open-diff').click();
  const open = await lastPosted();
  assert.equal(open?.type, 'openDiff');
  assert.equal(open?.type === 'openDiff' && open.newText.includes('x = 2'), true);
  await card.locator('a.location').click();
  assert.deepEqual(await lastPosted(), { type: 'openLocation', path: '/work/app.py', line: 3 });
});

test('the plan is a checklist; status shows usage and mode; pickers come from config options', async () => {
  const entries = page.locator('#plan li');
  assert.equal(await entries.count(), 3);
  assert.deepEqual(await entries.evaluateAll((els) => els.map((e) => (e.querySelector('input') as HTMLInputElement).checked)), [true, false, false]);
  assert.equal(await page.textContent('#plan .plan-head'), 'Plan · 1/3');
  assert.equal(await page.textContent('#status .usage'), '9% of 200k context · 0.04 USD');
  assert.equal(await page.textContent('#status .mode'), 'mode: Default');
  assert.equal(await page.textContent('#status .tier'), 'Commands run in the bwrap sandbox');
  assert.deepEqual(await page.locator('#options select').evaluateAll((els) => els.map((e) => (e as HTMLSelectElement).dataset.configId)), ['runtime', 'mode', 'model', 'thought_level']);
  await page.selectOption('select[data-config-id="mode"]', 'plan');
  assert.deepEqual(await lastPosted(), { type: 'setConfig', configId: 'mode', value: 'plan' });
});

test('an approval prompt names the path, shows the diff and answers with the chosen option', async () => {
  const approval = page.locator('#approval');
  assert.equal(await approval.locator('.approval-title').textContent(), 'loopd asks: Edit app.py');
  assert.equal(await approval.locator('.approval-subject').textContent(), 'app.py');
  assert.deepEqual(await approval.locator('button.answer').allTextContents(), ['Allow once', 'Always allow', 'Reject', 'Always reject']);
  assert.equal(await approval.locator('.diff .line.add').count(), 1);
  await mkdirAndShoot();
  await approval.getByRole('button', { name: 'Allow once' }).click();
  assert.deepEqual(await lastPosted(), { type: 'answer', approvalId: 'approval-1', optionId: 'allow_once' });
  await page.evaluate(() => window.postMessage({ type: 'approval' }, '*'));
  await page.waitForSelector('#approval', { state: 'hidden' });
});

async function mkdirAndShoot(): Promise<void> {
  await page.screenshot({ path: join(OUT, 'panel-browser.png'), fullPage: true });
}

test('stop while running; Enter sends, Shift+Enter adds a line; slash commands complete', async () => {
  assert.equal(await page.isVisible('#stop'), true);
  assert.equal(await page.isVisible('#send'), false);
  await page.click('#stop');
  assert.deepEqual(await lastPosted(), { type: 'stop' });
  await page.evaluate(() =>
    window.postMessage(
      { type: 'turn', turn: { running: false, stopReason: 'cancelled', verification: { seal: 'failed', summary: 'verification failed: tests' } } },
      '*',
    ),
  );
  await page.waitForSelector('#send:not([hidden])');
  assert.equal(await page.textContent('#status .stop-reason'), 'last turn: cancelled');
  assert.equal(await page.textContent('#status .seal-failed'), 'seal: failed');
  assert.equal(await page.getAttribute('#status .seal', 'title'), 'verification failed: tests');

  await page.click('#input');
  await page.keyboard.type('/c');
  assert.deepEqual(await page.locator('#completions .completion-name').allTextContents(), ['/compact', '/clear']);
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  assert.equal(await page.inputValue('#input'), '/clear ');
  await page.fill('#input', '');
  await page.keyboard.type('first line');
  await page.keyboard.press('Shift+Enter');
  await page.keyboard.type('second line');
  assert.equal(await page.inputValue('#input'), 'first line\nsecond line');
  await page.keyboard.press('Enter');
  assert.deepEqual(await lastPosted(), { type: 'prompt', text: 'first line\nsecond line', attachments: [] });
  assert.equal(await page.inputValue('#input'), '');
});

test('@ offers files and the session’s MCP resources; a chosen resource rides with the prompt', async () => {
  const names = () => page.locator('#completions .completion-name').allTextContents();
  await page.fill('#input', '');
  await page.click('#input');
  await page.keyboard.type('summarise @');
  assert.deepEqual(await lastPosted(), { type: 'listMentions' }, 'the list is asked for as @ is typed');
  await page.evaluate(() =>
    window.postMessage(
      {
        type: 'mentions',
        mentions: [
          { server: 'notes', uri: 'mem://notes/readme', name: 'readme', title: 'The readme', description: 'What the project is about.' },
          { server: 'notes', uri: 'mem://images/dot.png', name: 'dot', mimeType: 'image/png' },
        ],
      },
      '*',
    ),
  );
  await page.waitForSelector('#completions .completion >> nth=6');
  assert.deepEqual(await names(), ['@file…', '@folder…', '@problems', '@terminal', '@changes', '@The readme', '@dot']);
  assert.equal(await page.locator('#completions .completion-desc').nth(5).textContent(), 'What the project is about. (MCP: notes)');
  await page.keyboard.type('rea');
  assert.deepEqual(await names(), ['@file…', '@The readme']);
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  assert.equal(await page.inputValue('#input'), 'summarise ');
  assert.equal(await page.textContent('#attachments .chip.resource'), 'The readme✕');
  assert.equal(await page.isVisible('#completions'), false);

  await page.keyboard.type('and @');
  await page.keyboard.press('Enter');
  assert.deepEqual(await lastPosted(), { type: 'mention' }, '@file… opens the file picker');
  assert.equal(await page.inputValue('#input'), 'summarise and ');
  await page.keyboard.press('Enter');
  assert.deepEqual(await lastPosted(), {
    type: 'prompt',
    text: 'summarise and',
    attachments: [{ kind: 'resource', uri: 'mem://notes/readme', name: 'The readme' }],
  });
});

test('an image pasted into the input rides with the prompt as its data; another file type is refused', async () => {
  const paste = (type: string, name: string) =>
    page.locator('#input').evaluate(
      (input, [t, n]) => {
        const data = new DataTransfer();
        data.items.add(new File([Uint8Array.from([137, 80, 78, 71])], n, { type: t }));
        input.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
      },
      [type, name],
    );
  await paste('image/bmp', 'old.bmp');
  await page.waitForSelector('#attachments .chip.refused');
  assert.match((await page.textContent('#attachments .chip.refused')) ?? '', /image\/bmp is not an image loopd can send/);
  await paste('image/png', 'shot.png');
  await page.waitForSelector('#attachments .chip.image img.thumb');
  await page.fill('#input', 'see?');
  await page.click('#send');
  assert.deepEqual(await lastPosted(), {
    type: 'prompt',
    text: 'see?',
    attachments: [{ kind: 'image', uri: '', name: 'shot.png', mimeType: 'image/png', data: 'iVBORw==' }],
  });
});

test('attachments ride with the prompt; an untrusted workspace cannot send', async () => {
  await page.evaluate(() =>
    window.postMessage({ type: 'attach', attachment: { kind: 'selection', uri: 'file:///work/app.py#L3', name: 'app.py:3', text: 'x = 1' } }, '*'),
  );
  await page.waitForSelector('#attachments .chip');
  await page.fill('#input', 'why?');
  await page.click('#send');
  assert.deepEqual(await lastPosted(), {
    type: 'prompt',
    text: 'why?',
    attachments: [{ kind: 'selection', uri: 'file:///work/app.py#L3', name: 'app.py:3', text: 'x = 1' }],
  });
  await page.evaluate(() => window.postMessage({ type: 'trust', trusted: false }, '*'));
  await page.waitForSelector('#untrusted:not([hidden])');
  const before = (await posted()).length;
  await page.fill('#input', 'do something');
  await page.keyboard.press('Enter');
  assert.equal((await posted()).length, before, 'nothing is sent from an untrusted workspace');
});

test('the session list loads and deletes sessions', async () => {
  await page.click('#sessions-button');
  assert.deepEqual(await lastPosted(), { type: 'listSessions' });
  await page.evaluate(() =>
    window.postMessage({ type: 'sessions', sessions: [{ sessionId: 'sess_demo', cwd: '/work', title: 'Fix the failing test' }, { sessionId: 'sess_old', cwd: '/work', title: 'Older work' }] }, '*'),
  );
  await page.waitForSelector('#sessions .session >> nth=1');
  await page.locator('#sessions .session').nth(1).locator('.session-delete').click();
  assert.deepEqual(await lastPosted(), { type: 'deleteSession', sessionId: 'sess_old' });
  await page.getByText('Older work').click();
  assert.deepEqual(await lastPosted(), { type: 'loadSession', sessionId: 'sess_old' });
});

test('a session loaded cut off by a crash offers Continue until a turn runs', async () => {
  assert.equal(await page.locator('#status button.continue').count(), 0);
  const note = {
    sessionUpdate: 'agent_message_chunk',
    content: { type: 'text', text: '[The last turn was cut off. Send /continue to continue it.]' },
    messageId: 'msg_cut',
    _meta: { loopd: { interrupted: true } },
  };
  await page.evaluate((update) => window.postMessage({ type: 'update', sessionId: 'sess_demo', update }, '*'), note);
  await page.waitForSelector('#status button.continue');
  await page.click('#status button.continue');
  assert.deepEqual(await lastPosted(), { type: 'continue' });
  await page.evaluate(() => window.postMessage({ type: 'turn', turn: { running: true } }, '*'));
  await page.waitForSelector('#status button.continue', { state: 'detached' });
  await page.evaluate(() => window.postMessage({ type: 'turn', turn: { running: false, stopReason: 'end_turn' } }, '*'));
  await page.waitForSelector('#status .stop-reason');
  assert.equal(await page.locator('#status button.continue').count(), 0, 'a turn ran: nothing is cut off now');
});
