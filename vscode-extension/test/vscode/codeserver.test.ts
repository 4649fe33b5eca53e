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
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { FrameLocator, Page } from 'playwright-core';
import { type CodeServer, OUT, startCodeServer, until } from '../support/codeserver';
import type { FakeModel } from '../support/loopd';

const REPLY = 'Hello from the fake model, streamed into VS Code.';

let vscode: CodeServer;
let model: FakeModel;
let page: Page;
let home: { root: string; work: string };
let target = '';

before(async () => {
  vscode = await startCodeServer({
    files: { 'app.py': 'x = 1\n' },
    // The modal approval and the edit through applyEdit, as opted into (review.test.ts has the defaults).
    settings: { 'loopd.approvals.modal': true, 'loopd.review.enabled': false },
    steps: [
      { text: REPLY, pause_after: 6, gate: 'mid' },
      // loopd edits only files the model has read as they are now: read, then edit.
      { tool_calls: [{ name: 'read', input: { path: 'app.py' } }] },
      { tool_calls: [{ name: 'edit', input: { path: 'app.py', old_string: 'x = 1', new_string: 'x = 2' } }] },
      { text: 'Changed x to 2.' },
    ],
  });
  ({ model, page, home } = vscode);
  target = join(home.work, 'app.py');
});

after(async () => {
  if (page) await page.screenshot({ path: join(OUT, 'vscode-last.png') }).catch(() => {});
  await model?.release('mid');
  await vscode?.stop();
});

const openPanel = () => vscode.openPanel();
const panel = (): FrameLocator => vscode.panel();
const loopdLog = () => vscode.loopdLog();
const exthostLog = () => vscode.exthostLog();

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
  assert.match(exthostLog(), /loopd\.loopd/);
});

