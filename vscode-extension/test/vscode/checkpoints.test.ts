/**
 * Checkpoints in the panel, in a real VS Code (code-server and Chromium, see
 * support/codeserver.ts): three turns, the second changing files with bash, each
 * user message with its checkpoint marker; Restore (code and conversation) to
 * before the first puts every file back and the model's next request has nothing
 * of the undone turns; Redo; after a window reload a restore again, over a file
 * changed outside the agent, which a dialog names first; then Edit and Fork.
 */

import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type CodeServer, OUT, startCodeServer, until } from '../support/codeserver';
import { anthropicTexts, BASH_TURNS } from '../support/rewind';

const SCREENS = process.env.LOOPD_SCREENS ?? OUT;
const START = { 'a.txt': 'original\n', 'keep.txt': 'kept\n' };

let vscode: CodeServer;

function files(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(vscode.home.work, { recursive: true }).map(String)) {
    try {
      out[name] = readFileSync(join(vscode.home.work, name), 'utf8');
    } catch {
      // a folder
    }
  }
  return out;
}

const same = (want: Record<string, string>) => () => JSON.stringify(files()) === JSON.stringify(want) || undefined;

before(async () => {
  mkdirSync(SCREENS, { recursive: true });
  vscode = await startCodeServer({
    files: START,
    // A trusted folder, and commands run without asking (the turns' bash). The
    // agent's edit of an open file goes to its buffer; auto save (on by default in
    // the browser, off on the desktop) would save it after the turn's checkpoint,
    // which then reads as a change outside the agent: off, as on the desktop.
    settings: {
      'security.workspace.trust.enabled': false,
      'loopd.defaults.mode': 'full_auto',
      'files.autoSave': 'off',
      // The edits land unreviewed: review has its own test (review.test.ts).
      'loopd.review.enabled': false,
    },
    steps: [...BASH_TURNS, { text: 'from the start' }, { text: 'edited from the start' }],
  });
});

after(async () => {
  await vscode?.page.screenshot({ path: join(OUT, 'vscode-checkpoints-last.png') }).catch(() => {});
  await vscode?.stop();
});

async function send(text: string, reply: string): Promise<void> {
  const view = vscode.panel();
  await view.locator('#input').fill(text);
  await view.locator('#input').press('Enter');
  await view.locator(`.msg.agent:has-text("${reply}")`).waitFor({ timeout: 60_000 });
  await view.locator('#send:not([hidden])').waitFor();
}

async function lastRequest(): Promise<string[]> {
  const requests = await vscode.model.requests();
  return anthropicTexts(requests.at(-1)!.body);
}

async function restore(message: number, scope: string): Promise<void> {
  const marker = vscode.panel().locator('.msg.user').nth(message).locator('.checkpoint');
  await marker.locator('.checkpoint-restore:not([disabled])').click();
  await marker.locator(`.restore-scope[data-scope="${scope}"]`).click();
}

test('checkpoints in the panel: restore code and conversation, redo, reload and restore again, edit, fork', { timeout: 300_000 }, async () => {
  const { page } = vscode;
  await vscode.openPanel();
  const view = vscode.panel();
  await until('the session', async () => (await view.locator('#options select').count()) > 0);
  const before = files();
  await send('one', 'wrote notes');
  await send('two', 'ran bash');
  await send('three', 'edited notes');
  const done = files();
  assert.equal(done['b.txt'], 'bash\n', 'the second turn ran bash');
  assert.equal(done['keep.txt'], undefined);

  // One marker per user message, numbered by its prompt.
  await until('three markers', async () => (await view.locator('.msg.user .checkpoint').count()) === 3);
  assert.deepEqual(await view.locator('.msg.user .checkpoint').evaluateAll((n) => n.map((e) => (e as HTMLElement).dataset.prompt)), ['1', '2', '3']);
  await view.locator('.msg.user').first().locator('.checkpoint-restore').click();
  await view.locator('.msg.user').first().locator('.restore-choices:not([hidden])').waitFor();
  await page.screenshot({ path: join(SCREENS, 'checkpoint-markers.png') });

  // Restore both to before the first prompt: every file back, the context empty.
  await view.locator('.msg.user').first().locator('.restore-scope[data-scope="both"]').click();
  await until('the files as they were', same(before));
  await view.locator('.msg.agent:has-text("Restored the code and the conversation")').waitFor();
  await view.locator('#redo:not([hidden])').waitFor();
  await page.screenshot({ path: join(SCREENS, 'checkpoint-restored.png') });
  await send('fresh', 'from the start');
  assert.deepEqual(await lastRequest(), ['fresh'], 'the model sees none of the undone turns');

  // Redo puts back what the restore replaced.
  await view.locator('#redo button.redo').click();
  await until('the files as the turns left them', same(done));

  // A window reload: the markers are back and a restore works again. A file
  // changed outside the agent since is named in a dialog before it is overwritten.
  await page.reload();
  await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
  await vscode.openPanel();
  await until('four markers after the reload', async () => (await vscode.panel().locator('.msg.user .checkpoint').count()) === 4);
  writeFileSync(join(vscode.home.work, 'notes.txt'), 'mine\n');
  await restore(0, 'both');
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ timeout: 30_000 });
  assert.match((await dialog.textContent()) ?? '', /changed outside the agent/);
  assert.match((await dialog.textContent()) ?? '', /notes\.txt/);
  await page.screenshot({ path: join(SCREENS, 'checkpoint-changed-outside.png') });
  assert.equal(readFileSync(join(vscode.home.work, 'notes.txt'), 'utf8'), 'mine\n', 'nothing overwritten while asking');
  await dialog.getByRole('button', { name: 'Overwrite', exact: true }).click();
  await until('the files as they were, again', same(before));

  // Edit the prompt sent after the first restore: back to before it, the new text alone.
  const fresh = vscode.panel().locator('.msg.user').nth(3);
  await fresh.locator('.checkpoint-edit').click();
  assert.equal(await vscode.panel().locator('#input').inputValue(), 'fresh');
  await vscode.panel().locator('#editing:not([hidden])').waitFor();
  await send('fresh, edited', 'edited from the start');
  assert.deepEqual(await lastRequest(), ['fresh, edited']);

  // Fork from before the second prompt: the panel shows the new session.
  await vscode.panel().locator('.msg.user').nth(1).locator('.checkpoint-fork').click();
  await vscode.panel().locator('.msg.agent:has-text("Restored the conversation")').last().waitFor();
  await vscode.panel().locator('#sessions-button').click();
  await vscode.panel().locator('.session.current .session-open:has-text("Fork of one")').waitFor();
});
