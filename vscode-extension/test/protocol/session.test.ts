/**
 * The extension's controller against the real `loopd lsp` and the loopback fake
 * model, over vscode-jsonrpc: a whole session. New, prompt and stream, an edit
 * behind an approval (answered allow once: the file changes; reject: it does
 * not), cancel, list, load on a second connection (the history replays), delete.
 */

import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type Activity, Controller, type SessionUi } from '../../src/controller';
import type { PermissionParams, SessionNotification } from '../../src/protocol';
import { Method } from '../../src/protocol';
import type { Approval, HostMessage } from '../../src/webview/state';
import { type FakeModel, makeHome, serverEnv, startFakeModel } from '../support/loopd';
import { type Lsp, startLsp } from '../support/lsp';

class ScriptedUi implements SessionUi {
  posted: HostMessage[] = [];
  asked: Approval[] = [];
  activities: Activity[] = [];
  answers: (string | undefined)[] = [];
  post(message: HostMessage): void {
    this.posted.push(message);
  }
  async ask(approval: Approval): Promise<string | undefined> {
    this.asked.push(approval);
    const kind = this.answers.shift();
    return approval.options.find((o) => o.kind === kind)?.optionId;
  }
  activity(activity: Activity): void {
    this.activities.push(activity);
  }
}

function connect(lsp: Lsp, controller: Controller): void {
  lsp.connection.onNotification(Method.update, (n: SessionNotification) => controller.onUpdate(n));
  lsp.connection.onRequest(Method.requestPermission, (p: PermissionParams) => controller.onPermission(p));
}

function agentText(controller: Controller): string {
  return controller.state.items
    .map((i) => (i.kind === 'message' && i.role === 'agent' ? i.text : ''))
    .join('');
}

const home = makeHome();
const target = join(home.work, 'app.py');
let model: FakeModel;
let lsp: Lsp;
let remembered: string | undefined;
const memory = {
  get: () => remembered,
  set: (id: string | undefined) => {
    remembered = id;
  },
};

before(async () => {
  writeFileSync(target, 'x = 1\n');
  model = await startFakeModel(home.root, [
    { text: 'Hello from the **fake** model, streamed in words.', pause_after: 6, gate: 'mid' },
    // loopd edits only files the model has read as they are now: read, then edit.
    { thinking: 'Change x.', tool_calls: [{ name: 'read', input: { path: 'app.py' } }] },
    { tool_calls: [{ name: 'edit', input: { path: 'app.py', old_string: 'x = 1', new_string: 'x = 2' } }] },
    { text: 'Changed x to 2.' },
    { tool_calls: [{ name: 'read', input: { path: 'app.py' } }] },
    { tool_calls: [{ name: 'edit', input: { path: 'app.py', old_string: 'x = 2', new_string: 'x = 3' } }] },
    { text: 'Left it alone.' },
    { text: 'A long answer that never', pause_after: 2, gate: 'hold' },
  ]);
  lsp = await startLsp(home.work, serverEnv(home.root, model));
});

after(async () => {
  await model.release('mid');
  await model.release('hold');
  await lsp.close();
  model.stop();
});

test('a whole session through the controller, on the real server', { timeout: 60_000 }, async (t) => {
  const ui = new ScriptedUi();
  const controller = new Controller(lsp.connection, ui, home.work, memory);
  connect(lsp, controller);

  const sessionId = await controller.newSession();
  assert.equal(remembered, sessionId);
  assert.ok(controller.state.configOptions.some((o) => o.id === 'mode'), 'config options for the pickers');

  await t.test('a prompt streams the reply into the panel state', async () => {
    const turn = controller.prompt([{ type: 'text', text: 'say hello' }]);
    // The fake holds the rest of its reply at a gate: what arrived so far is on show.
    while (!agentText(controller)) await new Promise((r) => setTimeout(r, 10));
    const partial = agentText(controller);
    assert.ok(controller.state.turn.running);
    assert.ok(partial.length < 49 && 'Hello from the **fake** model, streamed in words.'.startsWith(partial), partial);
    await model.release('mid');
    assert.equal(await turn, 'end_turn');
    assert.equal(agentText(controller), 'Hello from the **fake** model, streamed in words.');
    assert.deepEqual(ui.activities.slice(-2), ['running', 'idle']);
  });

  await t.test('an edit asks first; allow once changes the file', async () => {
    ui.answers.push('allow_once');
    assert.equal(await controller.prompt([{ type: 'text', text: 'make x 2' }]), 'end_turn');
    const approval = ui.asked.at(-1)!;
    assert.equal(approval.kind, 'edit');
    assert.match(approval.subject ?? '', /app\.py$/);
    assert.equal(approval.diff?.newText, 'x = 2\n');
    assert.deepEqual(
      approval.options.map((o) => o.name),
      ['Allow once', 'Always allow', 'Reject', 'Always reject'],
    );
    assert.ok(ui.activities.includes('waiting'), 'the status bar showed the waiting approval');
    assert.equal(readFileSync(target, 'utf8'), 'x = 2\n');
    const card = Object.values(controller.state.tools).find((c) => c.kind === 'edit')!;
    assert.equal(card.status, 'completed');
    assert.ok(card.content.some((c) => c.type === 'diff'), 'the card carries the diff');
    assert.equal(controller.state.approval, undefined, 'the approval left the panel');
    assert.ok(controller.state.items.some((i) => i.kind === 'message' && i.role === 'thought'));
  });

  await t.test('reject leaves the file alone', async () => {
    ui.answers.push('reject_once');
    await controller.prompt([{ type: 'text', text: 'make x 3' }]);
    assert.equal(readFileSync(target, 'utf8'), 'x = 2\n');
    const card = Object.values(controller.state.tools).at(-1)!;
    assert.equal(card.status, 'failed');
  });

  await t.test('stop cancels a running turn', async () => {
    const turn = controller.prompt([{ type: 'text', text: 'talk for a long time' }]);
    // The model has been asked (its reply is held at the gate): the turn is under way.
    while ((await model.requests()).length < 8) await new Promise((r) => setTimeout(r, 20));
    assert.equal(controller.state.turn.running, true);
    await controller.cancel();
    assert.equal(await turn, 'cancelled');
    assert.equal(controller.state.turn.stopReason, 'cancelled');
    await model.release('hold');
  });

  await t.test('the session is listed, loads on a new connection with its history, and deletes', async () => {
    const listed = await controller.list();
    assert.deepEqual(
      listed.map((s) => s.sessionId),
      [sessionId],
    );
    assert.equal(listed[0].title, 'say hello');

    // A window reload stops the old server first: a live session belongs to one
    // loopd process at a time, and the new one loads it once the old one is gone.
    await lsp.close();
    lsp = await startLsp(home.work, serverEnv(home.root, model));
    const reloaded = new Controller(lsp.connection, new ScriptedUi(), home.work, memory);
    connect(lsp, reloaded);
    assert.equal(await reloaded.resume(), sessionId, 'a window reload loads the remembered session');
    const forgetful = new Controller(lsp.connection, new ScriptedUi(), home.work, { get: () => undefined, set: () => {} });
    connect(lsp, forgetful);
    assert.equal(await forgetful.resume(), sessionId, "without a remembered one, the workspace's latest");
    assert.match(agentText(reloaded), /^Hello from the \*\*fake\*\* model/);
    assert.ok(Object.values(reloaded.state.tools).some((c) => c.kind === 'edit'));
    assert.ok(reloaded.state.configOptions.length > 0);

    await reloaded.delete(sessionId);
    assert.deepEqual(await reloaded.list(), []);
    assert.equal(remembered, undefined);
    assert.equal(reloaded.state.sessionId, undefined);
  });
});
