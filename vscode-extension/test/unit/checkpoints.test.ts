import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Checkpoint } from '../../src/protocol';
import { markersOf, titleOf } from '../../src/webview/checkpoints';
import type { Item } from '../../src/webview/state';

const user = (text: string): Item => ({ kind: 'message', role: 'user', text, attachments: [] });
const agent = (text: string): Item => ({ kind: 'message', role: 'agent', text, attachments: [] });
const point = (prompt: number, label: string): Checkpoint => ({
  prompt,
  label,
  createdAt: '2026-01-01T00:00:00Z',
  conversation: true,
  leftOut: [],
});

test("a checkpoint's label is the prompt's first line, cut as the server cuts titles", () => {
  assert.equal(titleOf('  fix the bug\nin app.py '), 'fix the bug');
  assert.equal(titleOf('x'.repeat(80)), 'x'.repeat(80));
  assert.equal(titleOf('y'.repeat(81)), `${'y'.repeat(77)}...`);
});

test('markers follow the user messages in order; a slash command has none; a repeated prompt takes the next one', () => {
  const items = [user('one'), agent('ok'), user('/rewind'), agent('listed'), user('one'), user('two')];
  const markers = markersOf(items, [point(1, 'one'), point(2, 'one'), point(3, 'two')]);
  assert.deepEqual(
    markers.map((m) => m?.prompt),
    [1, undefined, 2, 3],
  );
});

test('a checkpoint whose message is not shown is left out without taking a later one', () => {
  const markers = markersOf([user('a'), user('b')], [point(1, 'a'), point(2, 'gone'), point(3, 'b')]);
  assert.deepEqual(
    markers.map((m) => m?.prompt),
    [1, 3],
  );
});
