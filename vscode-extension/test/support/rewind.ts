/**
 * The fake model's script for the checkpoint tests (the same turns as the Python
 * tests' `THREE_TURNS`): turn one writes a file, turn two changes, creates and
 * removes files with bash, turn three edits what turn one wrote.
 */

import type { Step } from './loopd';

const BASH = 'echo bash > b.txt && rm keep.txt && echo more >> a.txt';

export const BASH_TURNS: Step[] = [
  { tool_calls: [{ name: 'write', input: { path: 'notes.txt', content: 'first turn\n' } }] },
  { text: 'wrote notes' },
  { tool_calls: [{ name: 'bash', input: { command: BASH } }] },
  { text: 'ran bash' },
  { tool_calls: [{ name: 'read', input: { path: 'notes.txt' } }] },
  { tool_calls: [{ name: 'edit', input: { path: 'notes.txt', old_string: 'first', new_string: 'third' } }] },
  { text: 'edited notes' },
];

type Block = { type?: string; text?: string };

/** The texts an Anthropic Messages request carries, oldest first. */
export function anthropicTexts(body: Record<string, unknown>): string[] {
  const messages = (body.messages ?? []) as { content: string | Block[] }[];
  return messages.flatMap((m) =>
    typeof m.content === 'string' ? [m.content] : m.content.filter((b) => b.type === 'text').map((b) => b.text ?? ''),
  );
}
