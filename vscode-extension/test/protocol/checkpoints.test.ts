/**
 * The controller's checkpoints against the real `loopd lsp` and the loopback fake
 * model: three turns (the second changes files with bash), then restore to before
 * the first (a file changed outside the agent is named and kept until the person
 * says yes), the next request has nothing of the undone turns, redo, fork from a
 * prompt (its conversation is the one before it) and edit an earlier prompt.
 */

import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Controller, type SessionUi } from '../../src/controller';
import { Method, type PermissionParams, type SessionNotification } from '../../src/protocol';
import { markersOf } from '../../src/webview/checkpoints';
import { type FakeModel, makeHome, serverEnv, startFakeModel } from '../support/loopd';
import { type Lsp, startLsp } from '../support/lsp';
import { anthropicTexts, BASH_TURNS } from '../support/rewind';

const quiet: SessionUi = { post: () => {}, ask: async () => undefined, activity: () => {} };

function files(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(root, { recursive: true }).map(String)) {
    const path = join(root, name);
    try {
      out[name] = readFileSync(path, 'utf8');
    } catch {
      // a folder
    }
  }
  return out;
}

const home = makeHome();
let model: FakeModel;
let lsp: Lsp;

before(async () => {
  model = await startFakeModel(home.root, [
    ...BASH_TURNS,
    { text: 'from the start' },
    { text: 'forked' },
    { text: 'edited' },
  ]);
  lsp = await startLsp(home.work, serverEnv(home.root, model));
});

after(async () => {
  await lsp?.close();
  model?.stop();
});

test('restore, redo, fork and edit from checkpoints, through the controller', { timeout: 120_000 }, async () => {
  writeFileSync(join(home.work, 'a.txt'), 'original\n');
  writeFileSync(join(home.work, 'keep.txt'), 'kept\n');
  const start = files(home.work);
  const asked: string[][] = [];
  let answer = false;
  const confirmOverwrite = async (paths: string[]) => {
    asked.push(paths);
    return answer;
  };
  const controller = new Controller(lsp.connection, quiet, home.work, { get: () => undefined, set: () => {} }, {
    confirmOverwrite,
  });
  lsp.connection.onNotification(Method.update, (n: SessionNotification) => controller.onUpdate(n));
  lsp.connection.onRequest(Method.requestPermission, (p: PermissionParams) => controller.onPermission(p));
  const source = await controller.newSession();
  await controller.setConfig('mode', 'full_auto');
  for (const text of ['one', 'two', 'three']) assert.equal(await controller.prompt([{ type: 'text', text }]), 'end_turn');
  const done = files(home.work);
  assert.equal(done['b.txt'], 'bash\n');

  const points = controller.state.checkpoints.checkpoints;
  assert.deepEqual(
    points.map((p) => [p.prompt, p.label]),
    [
      [1, 'one'],
      [2, 'two'],
      [3, 'three'],
    ],
  );
  assert.deepEqual(
    markersOf(controller.state.items, points).map((p) => p?.prompt),
    [1, 2, 3],
    'each user message has its checkpoint',
  );

  // Changed outside the agent: named, and kept while the person says no.
  writeFileSync(join(home.work, 'notes.txt'), 'mine\n');
  assert.equal(await controller.restore(1, 'both'), false);
  assert.deepEqual(asked, [[join(home.work, 'notes.txt')]]);
  assert.equal(readFileSync(join(home.work, 'notes.txt'), 'utf8'), 'mine\n', 'not overwritten unasked');
  answer = true;
  assert.equal(await controller.restore(1, 'both'), true);
  assert.deepEqual(files(home.work), start, 'every file is back');
  assert.equal(controller.state.checkpoints.redo, true, 'the restore can be redone');

  await controller.prompt([{ type: 'text', text: 'fresh' }]);
  const requests = await model.requests();
  assert.deepEqual(anthropicTexts(requests.at(-1)!.body), ['fresh'], 'none of the undone turns is in the context');

  assert.equal(await controller.restore(undefined), true, 'redo');
  assert.deepEqual(files(home.work), { ...done, 'notes.txt': 'mine\n' }, 'redo puts back what the restore replaced');

  // Fork from before prompt 2: a new session whose conversation is the first turn's.
  const fork = await controller.fork(2);
  assert.notEqual(fork, source);
  assert.equal(controller.state.sessionId, fork);
  await controller.prompt([{ type: 'text', text: 'in the fork' }]);
  const forked = anthropicTexts((await model.requests()).at(-1)!.body);
  assert.equal(forked[0], 'one');
  assert.equal(forked.at(-1), 'in the fork');
  assert.ok(!forked.includes('two') && !forked.includes('three'), `the fork's context: ${forked}`);

  // Edit the fork's first prompt: back to before it, then the new text runs alone.
  await controller.load(source);
  const fresh = controller.state.checkpoints.checkpoints.find((p) => p.label === 'fresh');
  assert.ok(fresh, 'the prompt after the restore has its checkpoint');
  assert.equal(await controller.edit(fresh.prompt, [{ type: 'text', text: 'fresh, edited' }]), 'end_turn');
  assert.deepEqual(anthropicTexts((await model.requests()).at(-1)!.body), ['fresh, edited']);
});
