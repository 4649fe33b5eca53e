/**
 * @-mentions of MCP resources through the controller, against the real `loopd lsp`,
 * the loopback fake model and the fake MCP server (a real child of loopd, given
 * the way the `loopd.mcpServers` setting gives it): the session's resources are
 * listed for `@`; a prompt carrying the chosen one (a `resource_link`) has its text
 * reach the model.
 */

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Controller, type SessionUi } from '../../src/controller';
import { mcpServersFromSettings } from '../../src/mcp';
import { Method, type SessionNotification } from '../../src/protocol';
import { mentionAttachment } from '../../src/webview/composer';
import type { HostMessage } from '../../src/webview/state';
import { type FakeModel, makeHome, PYTHON, REPO, serverEnv, startFakeModel } from '../support/loopd';
import { type Lsp, startLsp } from '../support/lsp';

const FAKE_MCP = join(REPO, 'server', 'loopd', 'testing', 'fake_mcp.py');

class QuietUi implements SessionUi {
  posted: HostMessage[] = [];
  post(message: HostMessage): void {
    this.posted.push(message);
  }
  async ask(): Promise<string | undefined> {
    return undefined;
  }
  activity(): void {}
}

const home = makeHome();
let model: FakeModel;
let lsp: Lsp;

before(async () => {
  model = await startFakeModel(home.root, [{ text: 'The word is PAPAYA.' }]);
  lsp = await startLsp(home.work, serverEnv(home.root, model));
});

after(async () => {
  await lsp.close();
  model.stop();
});

test('the session’s MCP resources are offered by @, and a chosen one reaches the model', { timeout: 60_000 }, async () => {
  const ui = new QuietUi();
  const { servers } = mcpServersFromSettings([{ name: 'notes', command: PYTHON, args: [FAKE_MCP] }]);
  const controller = new Controller(lsp.connection, ui, home.work, { get: () => undefined, set: () => {} }, { mcpServers: servers });
  lsp.connection.onNotification(Method.update, (n: SessionNotification) => controller.onUpdate(n));

  assert.deepEqual(await controller.mentions(), [], 'no session yet: nothing to mention');
  await controller.newSession();
  const mentions = await controller.mentions();
  assert.deepEqual(
    mentions.map((m) => [m.server, m.uri]),
    [
      ['notes', 'mem://notes/readme'],
      ['notes', 'mem://images/dot.png'],
      ['notes', 'mem://data/blob.bin'],
      ['notes', 'mem://notes/big'],
    ],
  );
  assert.deepEqual(controller.state.mentions, mentions, 'the panel got them');
  assert.ok(ui.posted.some((m) => m.type === 'mentions'));

  const chosen = mentionAttachment(mentions[0]);
  const stop = await controller.prompt([
    { type: 'text', text: 'what is the secret word?' },
    { type: 'resource_link', uri: chosen.uri, name: chosen.name, mimeType: chosen.mimeType },
  ]);
  assert.equal(stop, 'end_turn');
  const [request] = await model.requests();
  const sent = JSON.stringify(request.body);
  assert.ok(sent.includes('The secret word is PAPAYA.'), sent);
  assert.ok(sent.includes('<resource uri=\\"mem://notes/readme\\">'), sent);
});
