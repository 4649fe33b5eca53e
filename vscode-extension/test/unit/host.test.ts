import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { askApproval, dialogFor, SHOW_DIFF } from '../../src/approval';
import { Controller } from '../../src/controller';
import { findServer, INSTALL_LINE, loginCommand, MISSING_MESSAGE, type Probes, which } from '../../src/discovery';
import { diffLines } from '../../src/webview/diff';
import type { Approval } from '../../src/webview/state';

const options = [
  { optionId: 'allow_once', name: 'Allow once', kind: 'allow_once' as const },
  { optionId: 'allow_always', name: 'Always allow', kind: 'allow_always' as const },
  { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' as const },
  { optionId: 'reject_always', name: 'Always reject', kind: 'reject_always' as const },
];
const edit: Approval = {
  id: 'a1',
  title: 'Edit app.py',
  kind: 'edit',
  subject: '/w/app.py',
  diff: { path: '/w/app.py', oldText: 'x = 1\n', newText: 'x = 2\n' },
  options,
};

test('the dialog names the path, offers every option and Show diff for edits', () => {
  const dialog = dialogFor(edit);
  assert.equal(dialog.message, 'loopd asks: Edit app.py');
  assert.match(dialog.detail, /Path: \/w\/app\.py/);
  assert.deepEqual(dialog.buttons, ['Allow once', 'Always allow', 'Reject', 'Always reject', SHOW_DIFF]);
  const run = dialogFor({ ...edit, kind: 'execute', subject: 'make test', diff: undefined });
  assert.match(run.detail, /Command: make test/);
  assert.ok(!run.buttons.includes(SHOW_DIFF));
});

test('Show diff opens the diff and asks again; a dismissed dialog rejects once', async () => {
  const answers = [SHOW_DIFF, 'Always reject'];
  const shown: string[] = [];
  const picked = await askApproval(edit, async () => answers.shift(), async (a) => void shown.push(a.diff!.path));
  assert.deepEqual([picked, shown], ['reject_always', ['/w/app.py']]);
  assert.equal(await askApproval(edit, async () => undefined, async () => {}), 'reject_once');
});

test('server not found: the install line is the package on PyPI, which works outside a checkout', () => {
  const pyproject = readFileSync(resolve(__dirname, '..', '..', '..', '..', 'pyproject.toml'), 'utf8');
  const name = /^name = "([^"]+)"/m.exec(pyproject)?.[1];
  assert.equal(INSTALL_LINE, `uv tool install ${name}`);
  assert.ok(MISSING_MESSAGE.includes(INSTALL_LINE) && MISSING_MESSAGE.includes(`pipx install ${name}`));
  assert.doesNotMatch(MISSING_MESSAGE, /install \./);
});

test('server discovery: the setting, else PATH, else the Python extension interpreter with loopd', async () => {
  const probes = (over: Partial<Probes>): Probes => ({
    settingPath: '',
    extraArgs: ['-v'],
    which: () => undefined,
    pythonInterpreter: async () => undefined,
    hasLoopd: async () => true,
    ...over,
  });
  assert.deepEqual(await findServer(probes({ settingPath: '/opt/loopd', which: () => '/usr/bin/loopd' })), {
    command: '/opt/loopd',
    args: ['lsp', '-v'],
    source: 'setting',
  });
  assert.equal((await findServer(probes({ which: () => '/usr/bin/loopd' })))?.command, '/usr/bin/loopd');
  assert.deepEqual(await findServer(probes({ pythonInterpreter: async () => '/venv/bin/python' })), {
    command: '/venv/bin/python',
    args: ['-m', 'loopd', 'lsp', '-v'],
    source: 'python',
  });
  assert.equal(await findServer(probes({ pythonInterpreter: async () => '/venv/bin/python', hasLoopd: async () => false })), undefined);
});

test('which finds executables only', () => {
  const dir = mkdtempSync(join(tmpdir(), 'which-'));
  mkdirSync(join(dir, 'a'));
  writeFileSync(join(dir, 'a', 'loopd'), '');
  mkdirSync(join(dir, 'b'));
  writeFileSync(join(dir, 'b', 'loopd'), '#!/bin/sh\n');
  chmodSync(join(dir, 'b', 'loopd'), 0o755);
  assert.equal(which('loopd', `${join(dir, 'a')}:${join(dir, 'b')}`), join(dir, 'b', 'loopd'));
  assert.equal(which('loopd', join(dir, 'a')), undefined);
});

test('line diffs show changes with context, and new files as all added', () => {
  const old = Array.from({ length: 10 }, (_, i) => `line ${i}`).join('\n');
  const lines = diffLines(old, old.replace('line 5', 'LINE 5'), 1);
  assert.deepEqual(
    lines.map((l) => `${l.op}${l.text}`),
    ['…4 unchanged lines', ' line 4', '-line 5', '+LINE 5', ' line 6', '…3 unchanged lines'],
  );
  assert.deepEqual(diffLines(null, 'a\nb\n').map((l) => l.op), ['+', '+']);
});

test('an approval nobody answers in time is rejected; one the server withdraws is cancelled', async () => {
  const ui = { post: () => {}, ask: () => new Promise<string | undefined>(() => {}), activity: () => {} };
  const rpc = { sendRequest: async () => ({}) as never, sendNotification: () => {} };
  const memory = { get: () => undefined, set: () => {} };
  const params = { sessionId: 's', toolCall: { toolCallId: 't', kind: 'execute' as const, title: 'Run `ls`' }, options };
  const timed = new Controller(rpc, ui, '/w', memory, { approvalTimeoutMs: 5 });
  assert.deepEqual(await timed.onPermission(params), { outcome: { outcome: 'selected', optionId: 'reject_once' } });
  assert.deepEqual(timed.waiting, []);
  const patient = new Controller(rpc, ui, '/w', memory);
  let withdraw: () => void = () => {};
  const answer = patient.onPermission(params, new Promise((resolve) => (withdraw = resolve)));
  assert.equal(patient.waiting.length, 1);
  assert.equal(patient.state.approval?.title, 'Run `ls`', 'the panel shows the question');
  withdraw();
  assert.deepEqual(await answer, { outcome: { outcome: 'cancelled' } });
  assert.equal(patient.state.approval, undefined);
});

test('the panel can answer an approval the modal is still showing', async () => {
  const ui = { post: () => {}, ask: () => new Promise<string | undefined>(() => {}), activity: () => {} };
  const rpc = { sendRequest: async () => ({}) as never, sendNotification: () => {} };
  const controller = new Controller(rpc, ui, '/w', { get: () => undefined, set: () => {} });
  const answer = controller.onPermission({ sessionId: 's', toolCall: { toolCallId: 't' }, options });
  controller.answer(controller.waiting[0].id, 'allow_always');
  assert.deepEqual(await answer, { outcome: { outcome: 'selected', optionId: 'allow_always' } });
});

test('log in runs the server program with login in place of lsp and its arguments', () => {
  const onPath = { command: '/usr/bin/loopd', args: ['lsp', '--tcp', 'h:1'], source: 'path' as const };
  assert.deepEqual(loginCommand(onPath).args, ['login']);
  const python = { command: '/usr/bin/python3', args: ['-m', 'loopd', 'lsp'], source: 'python' as const };
  assert.deepEqual(loginCommand(python), { ...python, args: ['-m', 'loopd', 'login'] });
});
