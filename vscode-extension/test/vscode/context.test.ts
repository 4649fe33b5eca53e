/**
 * The panel's context in a real VS Code (code-server and Chromium, see
 * support/codeserver.ts): an image pasted into the input reaches the model's
 * request as an image block; `@folder…` attaches a folder, which the server lists
 * (its secret left out) into the request; `@changes` attaches each changed file's
 * diff, and the server drops the one of a secret; `@terminal` the active
 * terminal's last output.
 */

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type CodeServer, OUT, startCodeServer, until } from '../support/codeserver';

const SCREENS = process.env.LOOPD_SCREENS ?? OUT;
// An 8x8 PNG, one orange.
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEklEQVR4nGP438CAFWEXHbQSAKmzX8FBxi1QAAAAAElFTkSuQmCC';
const SECRET = 'API_KEY=sk-live-not-for-the-model';

let vscode: CodeServer;

before(async () => {
  mkdirSync(SCREENS, { recursive: true });
  vscode = await startCodeServer({
    files: { 'src/app.py': 'print(1)\n', 'src/.env': SECRET, 'README.md': '# demo\n' },
    // The terminal draws its text in the DOM (not WebGL): the test waits for it.
    settings: { 'security.workspace.trust.enabled': false, 'terminal.integrated.gpuAcceleration': 'off' },
    steps: [{ text: 'A small square.' }, { text: 'The folder holds app.py.' }, { text: 'Two files changed.' }, { text: 'It said hello.' }],
    prepare: (work) => {
      const git = (...args: string[]) =>
        execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: work, stdio: 'pipe' });
      git('init', '-q');
      git('add', '-A');
      git('commit', '-qm', 'start');
      appendFileSync(join(work, 'README.md'), 'a new line\n');
      appendFileSync(join(work, 'src', '.env'), '\nOTHER=sk-live-changed-too\n');
    },
  });
});

after(async () => {
  await vscode?.page.screenshot({ path: join(OUT, 'vscode-context-last.png') }).catch(() => {});
  await vscode?.stop();
});

type Block = { type: string; text?: string; source?: { type: string; media_type: string; data: string } };

async function lastUserContent(): Promise<Block[]> {
  const requests = await vscode.model.requests();
  const messages = requests.at(-1)!.body.messages as { role: string; content: Block[] }[];
  return messages.at(-1)!.content;
}

test('an image pasted into the panel reaches the model; @folder, @changes and @terminal attach what the server lets through', { timeout: 240_000 }, async () => {
  const { page } = vscode;
  await vscode.openPanel();
  const view = vscode.panel();
  await until('the session', async () => (await view.locator('#options select').count()) > 0);

  // A paste of an image file (as the clipboard gives one) becomes a chip with its thumbnail.
  await view.locator('#input').evaluate((input, png) => {
    const bytes = Uint8Array.from(atob(png), (c) => c.charCodeAt(0));
    const data = new DataTransfer();
    data.items.add(new File([bytes], 'square.png', { type: 'image/png' }));
    input.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  }, PNG);
  await view.locator('#attachments .chip.image img.thumb').waitFor();
  await view.locator('#input').fill('what is this?');
  await page.screenshot({ path: join(SCREENS, 'image-attached.png') });
  await view.locator('#input').press('Enter');
  await view.locator('.msg.agent:has-text("A small square.")').waitFor({ timeout: 60_000 });
  const sent = await lastUserContent();
  const image = sent.find((b) => b.type === 'image');
  assert.deepEqual(image?.source, { type: 'base64', media_type: 'image/png', data: PNG });
  assert.ok(sent.some((b) => b.text === 'what is this?'));
  await view.locator('#send:not([hidden])').waitFor();

  // `@` offers the context entries; @folder… picks a folder in VS Code's quick pick.
  await view.locator('#input').fill('list @fol');
  await view.locator('#completions .completion:has-text("@folder…")').waitFor();
  await page.screenshot({ path: join(SCREENS, 'mention-menu.png') });
  await view.locator('#completions .completion:has-text("@folder…")').click();
  await page.locator('.quick-input-widget input').fill('src');
  await page.locator('.quick-input-widget .monaco-list-row:has-text("src")').first().waitFor();
  await page.keyboard.press('Enter');
  await view.locator('#attachments .chip.folder:has-text("src/")').waitFor();
  assert.equal(await view.locator('#input').inputValue(), 'list ');
  await page.screenshot({ path: join(SCREENS, 'mention-attached.png') });
  await view.locator('#input').press('Enter');
  await view.locator('.msg.agent:has-text("The folder holds app.py.")').waitFor({ timeout: 60_000 });
  const listed = (await lastUserContent()).map((b) => b.text ?? '').join('\n');
  assert.match(listed, /Folder src:/);
  assert.match(listed, /app\.py/);
  assert.doesNotMatch(listed, /\.env|sk-live/, 'the secret is not listed');

  // @changes: one chip per changed file; the server sends README's diff, not the secret's.
  await page.locator('.activitybar .action-item:has([aria-label^="Source Control"]) .badge-content:has-text("2")').waitFor({ timeout: 60_000 });
  await view.locator('#send:not([hidden])').waitFor();
  await view.locator('#input').fill('what changed? @chan');
  await view.locator('#completions .completion:has-text("@changes")').click();
  await view.locator('#attachments .chip.changes:has-text("README.md")').waitFor();
  await view.locator('#attachments .chip.changes:has-text(".env")').waitFor();
  await view.locator('#input').press('Enter');
  await view.locator('.msg.agent:has-text("Two files changed.")').waitFor({ timeout: 60_000 });
  const changes = (await lastUserContent()).map((b) => b.text ?? '').join('\n');
  assert.match(changes, /\+a new line/);
  assert.doesNotMatch(changes, /sk-live/, "the secret's diff is not sent");
  assert.match(changes, /\.env was attached but not sent/);

  // @terminal: the active terminal's last output.
  await page.keyboard.press('Control+Backquote');
  const terminal = page.locator('.xterm-helper-textarea').first();
  await terminal.waitFor({ timeout: 30_000 });
  await page.locator('.xterm-rows:has-text("work")').first().waitFor({ timeout: 30_000 }); // the prompt
  await terminal.focus();
  await page.keyboard.type('echo hello-from-the-$((20+3))-terminal');
  await page.keyboard.press('Enter');
  await page.locator('.xterm-rows:has-text("hello-from-the-23-terminal")').first().waitFor();
  await view.locator('#send:not([hidden])').waitFor();
  await view.locator('#input').fill('what did it say? @term');
  await view.locator('#completions .completion:has-text("@terminal")').click();
  await view.locator('#attachments .chip.terminal').waitFor({ timeout: 30_000 });
  await view.locator('#input').press('Enter');
  await view.locator('.msg.agent:has-text("It said hello.")').waitFor({ timeout: 60_000 });
  const said = (await lastUserContent()).map((b) => b.text ?? '').join('\n');
  assert.match(said, /hello-from-the-23-terminal/);
});
