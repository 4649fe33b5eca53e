import assert from 'node:assert/strict';
import { test } from 'node:test';
import { alwaysAsks, globMatches, lines, shown } from '../../src/hunks';
import type { ReviewHunk } from '../../src/protocol';

const OLD = 'a = 1\nkeep = True\nb = 2\n';
// As the server sends them for 'a = 10\nkeep = True\nb = 20\n' (loopd.lsp.hunks).
const HUNKS: ReviewHunk[] = [
  { index: 0, oldStart: 0, oldLines: 1, newStart: 0, newLines: 1, oldText: 'a = 1\n', newText: 'a = 10\n' },
  { index: 1, oldStart: 2, oldLines: 1, newStart: 2, newLines: 2, oldText: 'b = 2\n', newText: 'b = 20\nc = 3\n' },
];

test('lines keep their endings and break at line feeds only, as the server splits them', () => {
  assert.deepEqual(lines('a\r\nb\rc\nd'), ['a\r\n', 'b\rc\n', 'd']);
  assert.deepEqual(lines(null), []);
  assert.deepEqual(lines(''), []);
});

test('the view shows undecided and accepted hunks, puts a rejected one back, and says where each is', () => {
  const pending = shown(OLD, HUNKS, [undefined, undefined]);
  assert.equal(pending.text, 'a = 10\nkeep = True\nb = 20\nc = 3\n');
  assert.deepEqual(
    pending.placed.map((p) => [p.line, p.count]),
    [
      [0, 1],
      [2, 2],
    ],
  );
  const decided = shown(OLD, HUNKS, ['accept', 'reject']);
  assert.equal(decided.text, 'a = 10\nkeep = True\nb = 2\n');
  assert.deepEqual(
    decided.placed.map((p) => [p.line, p.count, p.decision]),
    [
      [0, 1, 'accept'],
      [2, 1, 'reject'],
    ],
  );
  assert.equal(shown(null, [{ ...HUNKS[0], oldStart: 0, oldLines: 0, oldText: '' }], ['reject']).text, '');
});

test('alwaysAsk globs: a name glob at any depth, a path glob from the folder, case folded; outside always asks', () => {
  const globs = ['.env*', '.vscode/**', '.git/**', '.loopd/**'];
  for (const path of ['.env', '.env.local', 'config/.env', '.vscode/settings.json', '.VSCode/tasks.json', '.git/hooks/pre-commit']) {
    assert.equal(alwaysAsks(path, globs), true, path);
  }
  for (const path of ['app.py', 'src/.vscode.py', 'docs/git/x', 'env']) assert.equal(alwaysAsks(path, globs), false, path);
  assert.equal(alwaysAsks(undefined, globs), true);
  assert.equal(alwaysAsks('../elsewhere/app.py', globs), true);
  assert.equal(globMatches('src/**/*.ts', 'src/a/b/c.ts'), true);
  assert.equal(globMatches('src/**/*.ts', 'src/c.ts'), true);
  assert.equal(globMatches('src/*.ts', 'src/a/c.ts'), false);
  assert.equal(globMatches('a+b(1).txt', 'a+b(1).txt'), true, 'regex characters are literal');
});
