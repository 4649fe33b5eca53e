/**
 * Review of the agent's edits in a real VS Code (code-server + Chromium, the
 * packaged extension, the real `loopd lsp` on the fake model): a write opens as
 * pending changes; the person rejects one hunk and accepts the other, and the disk
 * has exactly the accepted one (the open document is saved) while the model's next
 * request says which hunk was rejected. With `loopd.review.autoAccept` on, a plain
 * path is accepted by the timer, an alwaysAsk path (reached through a symlink) is
 * not: it waits for the person. Approvals ask in the panel's card only.
 * Screenshots go to $LOOPD_SCREENS (default .test-output).
 */

import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { FrameLocator, Locator } from 'playwright-core';
import { type CodeServer, OUT, startCodeServer, until } from '../support/codeserver';
import type { Step } from '../support/loopd';

const SHOTS = process.env.LOOPD_SCREENS ?? OUT;
const OLD = 'a = 1\nkeep = True\nb = 2\n';
const NEW = 'a = 10\nkeep = True\nb = 20\n';

let vs: CodeServer;
let view: FrameLocator;
const open: CodeServer[] = [];

/** A code-server whose model writes as `steps` say, with these user settings. */
async function launch(steps: Step[], settings: Record<string, unknown>): Promise<void> {
  vs = await startCodeServer({
    steps,
    settings: { 'security.workspace.trust.enabled': false, 'loopd.defaults.mode': 'accept_edits', ...settings },
    files: { 'app.py': OLD, '.vscode/.keep': '' },
  });
  open.push(vs);
  symlinkSync(join(vs.home.work, '.vscode'), join(vs.home.work, 'cfg'));
  await vs.openPanel();
  view = vs.panel();
  await until('the session', async () => (await view.locator('#options select').count()) > 0);
}

before(() => mkdirSync(SHOTS, { recursive: true }));

after(async () => {
  await vs?.page.screenshot({ path: join(SHOTS, 'review-last.png') }).catch(() => {});
  for (const server of open) await server.stop();
});

/** A CodeLens to click, by its title. */
function codeLens(title: string): Locator {
  return vs.page.locator('.codelens-decoration a', { hasText: title }).first();
}

/** The line of CodeLenses that shows `text` (a title without a command is no link). */
function lensLine(text: string): Locator {
  return vs.page.locator('.codelens-decoration', { hasText: text }).first();
}

async function prompt(text: string): Promise<void> {
  await view.locator('#input').fill(text);
  await view.locator('#input').press('Enter');
}

test('reject one hunk, accept the other: the disk has exactly the accepted one and the model is told', { timeout: 180_000 }, async () => {
  await launch(
    [
      { tool_calls: [{ name: 'read', input: { path: 'app.py' } }] },
      { tool_calls: [{ name: 'write', input: { path: 'app.py', content: NEW } }] },
      { text: 'Kept the change to a.' },
      { tool_calls: [{ name: 'write', input: { path: 'app.py', content: 'a = 3\n' } }] },
      { text: 'Left it.' },
    ],
    { 'loopd.review.autoAccept': 0 },
  );
  const page = vs.page;
  const target = join(vs.home.work, 'app.py');
  // app.py is open: the accepted hunk lands in its buffer, and accepting saves it.
  await page.locator('.activitybar [aria-label^="Explorer"]').first().click();
  await page.locator('.explorer-folders-view').getByText('app.py').click();
  await page.waitForSelector('.monaco-editor .view-lines:has-text("a = 1")');
  await vs.openPanel();

  await prompt('change a and b');
  await codeLens('Reject hunk 2').waitFor({ timeout: 60_000 });
  await codeLens('Accept hunk 1').waitFor();
  await lensLine('app.py: 2 of 2 hunks to review').waitFor();
  assert.equal(readFileSync(target, 'utf8'), OLD, 'nothing lands while the review is pending');
  await page.screenshot({ path: join(SHOTS, 'review-pending.png') });

  await codeLens('Reject hunk 2').click();
  await lensLine('Hunk 2 rejected').waitFor();
  await lensLine('1 of 2 hunks to review').waitFor();
  await page.screenshot({ path: join(SHOTS, 'review-hunk-rejected.png') });
  assert.equal(readFileSync(target, 'utf8'), OLD);

  await codeLens('Accept hunk 1').click();
  await view.locator('.msg.agent:has-text("Kept the change to a.")').waitFor({ timeout: 60_000 });
  await until('the saved file', () => readFileSync(target, 'utf8') === 'a = 10\nkeep = True\nb = 2\n' || undefined, 30_000);
  const told = (await vs.model.requests()).map((r) => JSON.stringify(r.body)).find((b) => b.includes('Rejected hunk 2'));
  assert.ok(told, 'a request to the model carries the rejection');
  assert.match(told, /rejected 1 of its 2 hunks/);
  assert.match(told, /\+b = 20/);
  await page.screenshot({ path: join(SHOTS, 'review-done.png') });

  // Closing a pending review's tab rejects it: nothing lands, the model is told.
  await prompt('try again');
  await codeLens('Reject hunk 1').waitFor({ timeout: 60_000 });
  await page.locator('.tab.active .tab-actions .action-label').first().click();
  await view.locator('.msg.agent:has-text("Left it.")').waitFor({ timeout: 60_000 });
  assert.equal(readFileSync(target, 'utf8'), 'a = 10\nkeep = True\nb = 2\n');
  const last = (await vs.model.requests()).at(-1);
  assert.match(JSON.stringify(last?.body), /rejected this change to app.py: the file is unchanged/);
});

test('with autoAccept on, a plain path is accepted by the timer; an alwaysAsk path waits for the person', { timeout: 180_000 }, async () => {
  await vs.stop();
  open.pop();
  await launch(
    [
      { tool_calls: [{ name: 'write', input: { path: 'notes.txt', content: 'hello\n' } }] },
      { tool_calls: [{ name: 'write', input: { path: 'cfg/extra.json', content: '{}\n' } }] },
      { text: 'Wrote both.' },
    ],
    { 'loopd.review.autoAccept': 1 },
  );
  const page = vs.page;

  await prompt('write notes and settings');
  // notes.txt: nobody clicks; the timer accepts it.
  await until('notes.txt from the timer', () => (existsSync(join(vs.home.work, 'notes.txt')) ? true : undefined));
  assert.equal(readFileSync(join(vs.home.work, 'notes.txt'), 'utf8'), 'hello\n');

  // cfg/extra.json is .vscode/extra.json (a protected path): the approval asks in the
  // panel's card alone, no modal dialog.
  const card = view.locator('#approval:not([hidden])');
  await card.waitFor({ timeout: 60_000 });
  assert.equal(await page.locator('.monaco-dialog-box').count(), 0, 'no modal dialog');
  await page.screenshot({ path: join(SHOTS, 'review-approval-card.png') });
  await card.locator('button.allow_once').click();

  // Its review says it always asks, and so it waits for the person.
  await lensLine('extra.json: 1 of 1 hunks to review (always asks)').waitFor({ timeout: 60_000 });
  await page.screenshot({ path: join(SHOTS, 'review-always-asks.png') });
  const planted = join(vs.home.work, '.vscode', 'extra.json');
  assert.equal(existsSync(planted), false);
  await codeLens('Accept file').click();
  await view.locator('.msg.agent:has-text("Wrote both.")').waitFor({ timeout: 60_000 });
  assert.equal(readFileSync(planted, 'utf8'), '{}\n');
});
