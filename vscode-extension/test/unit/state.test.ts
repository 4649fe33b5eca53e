import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SessionUpdate } from '../../src/protocol';
import {
  approvalOf,
  completeCommand,
  type HostMessage,
  initialState,
  type PanelState,
  reduce,
  shortPath,
  usageLabel,
} from '../../src/webview/state';

const feed = (updates: SessionUpdate[], state: PanelState = reduce(initialState(), { type: 'reset', sessionId: 's1', configOptions: [] })) =>
  updates.reduce((s, update) => reduce(s, { type: 'update', sessionId: 's1', update }), state);

const text = (t: string) => ({ type: 'text' as const, text: t });

test('streamed chunks of one message join; a new message id or role starts a new item', () => {
  const state = feed([
    { sessionUpdate: 'user_message_chunk', content: text('fix it'), messageId: 'u1' },
    { sessionUpdate: 'agent_thought_chunk', content: text('look '), messageId: 'a1' },
    { sessionUpdate: 'agent_thought_chunk', content: text('first'), messageId: 'a1' },
    { sessionUpdate: 'agent_message_chunk', content: text('Done'), messageId: 'a1' },
    { sessionUpdate: 'agent_message_chunk', content: text(' now.'), messageId: 'a1' },
    { sessionUpdate: 'agent_message_chunk', content: text('Next.'), messageId: 'a2' },
  ]);
  assert.deepEqual(
    state.items.map((i) => (i.kind === 'message' ? [i.role, i.text] : ['tool', i.id])),
    [
      ['user', 'fix it'],
      ['thought', 'look first'],
      ['agent', 'Done now.'],
      ['agent', 'Next.'],
    ],
  );
});

test('a tool call and its updates make one card, with the exact command and output', () => {
  const state = feed([
    { sessionUpdate: 'tool_call', toolCallId: 't1', title: 'Run tests', kind: 'execute', status: 'pending', rawInput: { command: 'pytest -q' } },
    { sessionUpdate: 'tool_call_update', toolCallId: 't1', status: 'in_progress' },
    { sessionUpdate: 'tool_call_update', toolCallId: 't1', status: 'completed', content: [{ type: 'content', content: text('3 passed') }] },
  ]);
  assert.equal(state.items.length, 1);
  const card = state.tools.t1;
  assert.deepEqual([card.kind, card.status, card.subject, card.title], ['execute', 'completed', 'pytest -q', 'Run tests']);
  assert.equal(card.content.length, 1);
});

test('an edit card names its path from the diff; locations are kept', () => {
  const state = feed([
    {
      sessionUpdate: 'tool_call',
      toolCallId: 'e1',
      title: 'Edit a.py',
      kind: 'edit',
      status: 'pending',
      content: [{ type: 'diff', path: '/w/a.py', oldText: 'x = 1\n', newText: 'x = 2\n' }],
      locations: [{ path: '/w/a.py', line: 1 }],
    },
  ]);
  assert.equal(state.tools.e1.subject, '/w/a.py');
  assert.deepEqual(state.tools.e1.locations, [{ path: '/w/a.py', line: 1 }]);
});

test('plan, commands, options, mode, usage, title and loopd meta', () => {
  const state = feed([
    { sessionUpdate: 'plan', entries: [{ content: 'read', priority: 'high', status: 'completed' }, { content: 'fix', priority: 'high', status: 'pending' }] },
    { sessionUpdate: 'available_commands_update', availableCommands: [{ name: 'compact', description: 'Compact' }, { name: 'clear', description: 'Clear' }] },
    {
      sessionUpdate: 'config_option_update',
      configOptions: [{ id: 'mode', name: 'Mode', category: 'mode', type: 'select', currentValue: 'ask', options: [{ value: 'ask', name: 'Ask' }, { value: 'plan', name: 'Plan' }] }],
    },
    { sessionUpdate: 'current_mode_update', currentModeId: 'plan' },
    { sessionUpdate: 'usage_update', used: 50_000, size: 200_000, cost: { amount: 0.125, currency: 'USD' } },
    { sessionUpdate: 'session_info_update', title: 'Fixing x' },
    { sessionUpdate: 'usage_update', used: 60_000, size: 200_000, _meta: { loopd: { sandboxTier: 'bwrap', verification: { seal: 'stale' } } } },
  ]);
  assert.deepEqual(state.plan.map((e) => e.status), ['completed', 'pending']);
  assert.equal(state.configOptions[0].currentValue, 'plan');
  assert.equal(state.title, 'Fixing x');
  assert.equal(usageLabel(state.usage!), '30% of 200k context');
  assert.equal(usageLabel({ used: 50_000, size: 200_000, cost: { amount: 0.125, currency: 'USD' } }), '25% of 200k context · 0.13 USD');
  assert.equal(state.sandboxTier, 'bwrap');
  assert.equal(state.verification?.seal, 'stale');
  const ended = reduce(state, { type: 'turn', turn: { running: false, stopReason: 'end_turn', verification: { seal: 'passed', summary: 'tests pass' } } });
  assert.deepEqual([ended.verification?.seal, ended.verification?.summary], ['passed', 'tests pass']);
  assert.deepEqual(completeCommand(state.commands, '/c').map((c) => c.name), ['compact', 'clear']);
  assert.deepEqual(completeCommand(state.commands, '/co').map((c) => c.name), ['compact']);
  assert.deepEqual(completeCommand(state.commands, 'hello /c'), []);
});

test('a note marked interrupted offers to continue, until a turn runs or another session is shown', () => {
  const cut = feed([
    { sessionUpdate: 'agent_message_chunk', content: text('Hello.'), messageId: 'a1' },
    { sessionUpdate: 'agent_message_chunk', content: text('[cut off]'), messageId: 'n1', _meta: { loopd: { interrupted: true } } },
  ]);
  assert.equal(cut.interrupted, true);
  assert.equal(feed([{ sessionUpdate: 'usage_update', used: 1, size: 2, _meta: { loopd: { sandboxTier: 'bwrap' } } }], cut).interrupted, true);
  const ended = reduce(cut, { type: 'turn', turn: { running: false, stopReason: 'end_turn' } });
  assert.equal(ended.interrupted, true, 'a turn that did not run leaves it');
  assert.equal(reduce(cut, { type: 'turn', turn: { running: true } }).interrupted, false);
  assert.equal(reduce(cut, { type: 'reset', sessionId: 's2', configOptions: [] }).interrupted, false);
  assert.equal(initialState().interrupted, false);
});

test("another session's updates are ignored; reset keeps trust and the session list", () => {
  let state = feed([{ sessionUpdate: 'agent_message_chunk', content: text('mine') }]);
  state = reduce(state, { type: 'update', sessionId: 'other', update: { sessionUpdate: 'agent_message_chunk', content: text('theirs') } });
  assert.equal(state.items.length, 1);
  const messages: HostMessage[] = [
    { type: 'trust', trusted: false },
    { type: 'sessions', sessions: [{ sessionId: 's1', cwd: '/w' }] },
    { type: 'reset', sessionId: 's2', configOptions: [] },
  ];
  state = messages.reduce(reduce, state);
  assert.deepEqual([state.items.length, state.trusted, state.sessions.length, state.sessionId], [0, false, 1, 's2']);
});

test('a snapshot replaces the state (a new webview draws from it)', () => {
  const before = feed([{ sessionUpdate: 'agent_message_chunk', content: text('kept') }]);
  assert.deepEqual(reduce(initialState(), { type: 'snapshot', state: before }), before);
});

test('an approval names the command, or the path and diff of an edit', () => {
  const options = [{ optionId: 'allow_once', name: 'Allow once', kind: 'allow_once' as const }];
  const run = approvalOf('a1', { toolCallId: 't', title: 'Run `rm -rf build`', kind: 'execute', rawInput: { command: 'rm -rf build' } }, options);
  assert.equal(run.subject, 'rm -rf build');
  const edit = approvalOf('a2', { toolCallId: 't', kind: 'edit', content: [{ type: 'diff', path: '/w/a.py', oldText: null, newText: 'x' }] }, options);
  assert.deepEqual([edit.subject, edit.diff?.oldText], ['/w/a.py', null]);
});

test('paths under the workspace are shown relative to it', () => {
  assert.equal(shortPath('/w/src/a.py', '/w'), 'src/a.py');
  assert.equal(shortPath('/w/src/a.py', '/w/'), 'src/a.py');
  assert.equal(shortPath('/wx/a.py', '/w'), '/wx/a.py');
  assert.equal(shortPath('/w/a.py', undefined), '/w/a.py');
});
