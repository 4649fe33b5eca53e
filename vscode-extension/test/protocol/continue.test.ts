/**
 * A turn cut off by a crash, through the extension's controller and the real
 * `loopd lsp`: the server is killed (SIGKILL) while its turn waits on an approval;
 * a new server loads the session marked interrupted, the panel's Continue
 * (`Controller.continue`, `loopd/session/continue`) carries the turn on as a new
 * one, and the panel offers it no more.
 */

import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { type Activity, Controller, type SessionUi } from '../../src/controller';
import type { PermissionParams, SessionNotification } from '../../src/protocol';
import { Method } from '../../src/protocol';
import type { HostMessage } from '../../src/webview/state';
import { makeHome, serverEnv, startFakeModel } from '../support/loopd';
import { type Lsp, startLsp } from '../support/lsp';

class QuietUi implements SessionUi {
  post(_message: HostMessage): void {}
  activity(_activity: Activity): void {}
}

/** A panel's controller on `lsp`; approvals go to `onPermission`. */
function attach(lsp: Lsp, cwd: string, onPermission: (p: PermissionParams) => Promise<unknown>): Controller {
  const controller = new Controller(lsp.connection, new QuietUi(), cwd, { get: () => undefined, set: () => {} });
  lsp.connection.onNotification(Method.update, (n: SessionNotification) => controller.onUpdate(n));
  lsp.connection.onRequest(Method.requestPermission, onPermission);
  return controller;
}

async function until(predicate: () => boolean): Promise<void> {
  while (!predicate()) await new Promise((r) => setTimeout(r, 10));
}

test('a turn cut off by a crash loads interrupted; Continue carries it on', { timeout: 60_000 }, async () => {
  const home = makeHome();
  const model = await startFakeModel(home.root, [
    { text: 'writing now', tool_calls: [{ name: 'write', input: { path: 'a.py', content: '2\n' } }] },
    { text: 'carried on' },
  ]);
  // In-process (no daemon), so the kill takes the running turn with it.
  const env = { ...serverEnv(home.root, model), LOOPD_DAEMON: 'off' };
  const first = await startLsp(home.work, env);
  let asked = false;
  const cut = attach(first, home.work, () => {
    asked = true;
    return new Promise(() => {}); // never answered: the process dies first
  });
  const sessionId = await cut.newSession();
  void cut.prompt([{ type: 'text', text: 'go' }]).catch(() => {});
  await until(() => asked);
  first.proc.kill('SIGKILL');
  await once(first.proc, 'exit');
  first.connection.dispose();

  const second = await startLsp(home.work, env);
  try {
    const controller = attach(second, home.work, async () => ({ outcome: { outcome: 'cancelled' } }));
    await controller.load(sessionId);
    await until(() => controller.state.interrupted);
    assert.equal(await controller.continue(), 'end_turn');
    assert.equal(controller.state.interrupted, false, 'a turn ran: nothing to continue now');
    const requests = await model.requests();
    assert.equal(requests.length, 2);
    assert.match(JSON.stringify(requests[1].body.messages), /previous turn was cut off/);
  } finally {
    await second.close();
    model.stop();
  }
});
