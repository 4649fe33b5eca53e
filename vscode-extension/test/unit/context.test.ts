import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lastLines, problemsText, toBlock } from '../../src/attachments';
import { contextChoices } from '../../src/webview/composer';

test('files and folders go as links for the server to read; what only the editor knows is embedded; images as image blocks', () => {
  assert.deepEqual(toBlock({ kind: 'folder', uri: 'file:///w/src', name: 'src/' }), {
    type: 'resource_link',
    uri: 'file:///w/src',
    name: 'src/',
  });
  assert.deepEqual(toBlock({ kind: 'problems', uri: 'file:///w/a.py#problems', name: 'problems: a.py', text: 'L1:1 error: x' }), {
    type: 'resource',
    resource: { uri: 'file:///w/a.py#problems', text: 'L1:1 error: x' },
  });
  assert.deepEqual(toBlock({ kind: 'image', uri: '', name: 'a.png', mimeType: 'image/png', data: 'iVBOR' }), {
    type: 'image',
    data: 'iVBOR',
    mimeType: 'image/png',
  });
});

test("a file's Problems read one a line, 1-based, with their source", () => {
  const text = problemsText('a.py', [
    { message: 'undefined name x', severity: 0, source: 'pyflakes', range: { start: { line: 2, character: 4 } } },
    { message: 'line too long', severity: 1, range: { start: { line: 9, character: 0 } } },
  ]);
  assert.equal(text, 'Problems in a.py:\nL3:5 error: undefined name x (pyflakes)\nL10:1 warning: line too long');
});

test("a terminal's last output: its last lines, without the blank tail", () => {
  assert.equal(lastLines('a\nb\r\nc\n\n  \n', 2), 'b\nc');
  assert.equal(lastLines('only'), 'only');
});

test('the @ menu offers the context entries by what was typed after the @', () => {
  assert.deepEqual(
    contextChoices('look at @').map((c) => c.kind),
    ['folder', 'problems', 'terminal', 'changes'],
  );
  assert.deepEqual(
    contextChoices('why @pro').map((c) => c.kind),
    ['problems'],
  );
  assert.deepEqual(contextChoices('no mention'), []);
  assert.deepEqual(contextChoices('mail@example'), [], 'an @ inside a word is no mention');
});
