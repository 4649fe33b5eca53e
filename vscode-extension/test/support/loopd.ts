/**
 * Real processes for the tests: the loopback fake model
 * (`python -m loopd.testing.fake_llm`) and `loopd lsp` pointed at it, each with
 * a private home so nothing of the developer's leaks in. The interpreter is
 * `$LOOPD_PYTHON`, else the checkout's `.venv/bin/python`.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

export const REPO = resolve(__dirname, '..', '..', '..', '..');
export const PYTHON = process.env.LOOPD_PYTHON ?? join(REPO, '.venv', 'bin', 'python');

export type Step = Record<string, unknown>;

export interface FakeModel {
  baseUrl: string;
  release(gate: string): Promise<void>;
  requests(): Promise<{ path: string; body: Record<string, unknown> }[]>;
  stop(): void;
}

export async function startFakeModel(dir: string, steps: Step[]): Promise<FakeModel> {
  const script = join(dir, 'fake-model.json');
  writeFileSync(script, JSON.stringify({ '*': steps }));
  const proc = spawn(PYTHON, ['-m', 'loopd.testing.fake_llm', '--script', script], {
    env: { ...process.env, PYTHONPATH: join(REPO, 'server') },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const baseUrl = await firstLine(proc);
  return {
    baseUrl,
    release: async (gate) => {
      await fetch(`${baseUrl}/_fake/release/${gate}`, { method: 'POST' });
    },
    requests: async () => (await (await fetch(`${baseUrl}/_fake/requests`)).json()) as never,
    stop: () => proc.kill(),
  };
}

function firstLine(proc: ChildProcess): Promise<string> {
  return new Promise((resolveLine, reject) => {
    const lines = createInterface({ input: proc.stdout! });
    lines.once('line', (line) => resolveLine(line.trim()));
    proc.once('exit', (code) => reject(new Error(`fake model exited with ${code}`)));
  });
}

/** A private home for one test: workspace, data dir, config dir. */
export function makeHome(): { root: string; work: string } {
  const root = mkdtempSync(join(tmpdir(), 'loopd-vscode-'));
  const work = join(root, 'work');
  mkdirSync(work);
  return { root, work };
}

/** The environment `loopd lsp` gets: the fake model as Anthropic, a private home. */
export function serverEnv(root: string, model: FakeModel): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: root,
    LOOPD_HOME: join(root, 'data'),
    XDG_CONFIG_HOME: join(root, 'config'),
    PYTHONPATH: join(REPO, 'server'),
    ANTHROPIC_BASE_URL: model.baseUrl,
    ANTHROPIC_API_KEY: 'test-key',
    LANG: 'C.UTF-8',
    // as VS Code users get it: editors share a daemon (one per LOOPD_HOME, so per
    // test), which exits soon after the test's last window
    LOOPD_DAEMON: process.env.LOOPD_DAEMON ?? 'on',
    LOOPD_DAEMON_IDLE: '3',
  };
}
