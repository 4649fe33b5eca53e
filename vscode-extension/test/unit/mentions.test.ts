import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mcpServersFromSettings } from '../../src/mcp';
import type { Mention } from '../../src/protocol';
import { completeMention, mentionAttachment, mentionQuery, withoutMentionQuery } from '../../src/webview/composer';
import { initialState, reduce } from '../../src/webview/state';

const readme: Mention = {
  server: 'notes',
  uri: 'mem://notes/readme',
  name: 'readme',
  title: 'The readme',
  description: 'What the project is about.',
  mimeType: 'text/plain',
};
const dot: Mention = { server: 'notes', uri: 'mem://images/dot.png', name: 'dot', mimeType: 'image/png' };

test('an @ that ends the input is being completed; elsewhere it is text', () => {
  assert.equal(mentionQuery('@'), '');
  assert.equal(mentionQuery('look at @rea'), 'rea');
  assert.equal(mentionQuery('mail me@example.com'), undefined, 'an @ inside a word');
  assert.equal(mentionQuery('@readme and more'), undefined, 'the @ word is finished');
  assert.equal(withoutMentionQuery('look at @rea'), 'look at ');
  assert.equal(withoutMentionQuery('no mention'), 'no mention');
});

test('@ offers files first, then the resources whose name, title or uri match', () => {
  const choices = (input: string) =>
    completeMention([readme, dot], input).map((c) => (c.kind === 'files' ? 'files' : c.kind === 'context' ? c.context.kind : c.mention.uri));
  assert.deepEqual(choices('@'), ['files', 'folder', 'problems', 'terminal', 'changes', readme.uri, dot.uri]);
  assert.deepEqual(choices('see @READ'), ['files', readme.uri], 'case-insensitive, by name');
  assert.deepEqual(choices('@images'), ['files', dot.uri], 'by uri');
  assert.deepEqual(choices('@the rea'), [], 'no @ at the end: nothing');
  assert.deepEqual(choices('@zzz'), ['files']);
});

test('a chosen resource is a resource attachment named by its title', () => {
  assert.deepEqual(mentionAttachment(readme), { kind: 'resource', uri: readme.uri, name: 'The readme', mimeType: 'text/plain' });
  assert.deepEqual(mentionAttachment(dot), { kind: 'resource', uri: dot.uri, name: 'dot', mimeType: 'image/png' });
});

test('the session’s mentions are kept until another session is shown', () => {
  const state = reduce(initialState(), { type: 'mentions', mentions: [readme] });
  assert.deepEqual(state.mentions, [readme]);
  assert.deepEqual(reduce(state, { type: 'reset', sessionId: 's2', configOptions: [] }).mentions, []);
});

test('loopd.mcpServers becomes ACP mcpServers; a broken entry is named, not sent', () => {
  const { servers, problems } = mcpServersFromSettings([
    { name: 'notes', command: '/usr/bin/python3', args: ['fake.py', 1], env: { TOKEN: 't' } },
    { name: 'web', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: 'Bearer x' } },
    { name: 'half' },
    'junk',
  ]);
  assert.deepEqual(servers, [
    { name: 'notes', command: '/usr/bin/python3', args: ['fake.py', '1'], env: [{ name: 'TOKEN', value: 't' }] },
    { type: 'http', name: 'web', url: 'http://127.0.0.1:9/mcp', headers: [{ name: 'Authorization', value: 'Bearer x' }] },
  ]);
  assert.deepEqual(problems, ['loopd.mcpServers[2]: half needs a command or a url', 'loopd.mcpServers[3]: not an object']);
  assert.deepEqual(mcpServersFromSettings(undefined), { servers: [], problems: [] });
});
