/**
 * The checkpoint marker on each user message: Restore (the code, the conversation
 * or both), Fork, Edit; and one Redo for the last restore. The server keeps the
 * checkpoints (`loopd/session/checkpoints`) and decides every restore; the panel
 * only shows which prompt each belongs to and posts what the person chose.
 *
 * A checkpoint names its prompt by number and by its first line (`label`, made as
 * the server makes a session's title). Prompts that ran no turn (slash commands)
 * have none, so the markers are matched in order by that line, not by position.
 */

import type { Checkpoint, RestoreScope } from '../protocol';
import { el, type Post } from './cards';
import type { Item, MessageItem, PanelState } from './state';

const TITLE_MAX = 80;

/** A prompt's first line as the server labels its checkpoint (`sessions.queue.title_of`). */
export function titleOf(text: string): string {
  const first = text.trim().split(/\r\n|\r|\n/)[0] ?? '';
  return first.length <= TITLE_MAX ? first : `${first.slice(0, TITLE_MAX - 3)}...`;
}

/**
 * The checkpoint before each user message (by the message's place among the user
 * messages), matched in order: a checkpoint takes the next user message whose first
 * line is its label; one that matches none (its turn's message was not shown) is
 * left out without moving on.
 */
export function markersOf(items: Item[], checkpoints: Checkpoint[]): (Checkpoint | undefined)[] {
  const users = items.filter((i): i is MessageItem => i.kind === 'message' && i.role === 'user');
  const markers: (Checkpoint | undefined)[] = users.map(() => undefined);
  let next = 0;
  for (const point of checkpoints) {
    const found = users.findIndex((u, index) => index >= next && titleOf(u.text) === point.label);
    if (found < 0) continue;
    markers[found] = point;
    next = found + 1;
  }
  return markers;
}

/** The prompt being edited: the next send restores to before it and runs the new text. */
export interface Editing {
  prompt: number;
  label: string;
}

let editing: Editing | undefined;

/** The edit in progress, taken (the send that uses it ends it). */
export function takeEditing(): Editing | undefined {
  const taken = editing;
  editing = undefined;
  return taken;
}

export interface RewindUi {
  conversation: HTMLElement;
  /** The Redo bar, shown while the last restore can be redone. */
  redo: HTMLElement;
  /** The banner over the input while an earlier prompt is being edited. */
  editing: HTMLElement;
  input: HTMLTextAreaElement;
}

const SCOPES: { scope: RestoreScope; name: string; needsConversation: boolean }[] = [
  { scope: 'both', name: 'Code and conversation', needsConversation: true },
  { scope: 'code', name: 'Code only', needsConversation: false },
  { scope: 'conversation', name: 'Conversation only', needsConversation: true },
];

/** Markers on the drawn user messages, the Redo bar and the editing banner, as `state` says. */
export function drawCheckpoints(ui: RewindUi, state: PanelState, post: Post): void {
  const markers = markersOf(state.items, state.checkpoints.checkpoints);
  const nodes = ui.conversation.querySelectorAll<HTMLElement>(':scope > .msg.user');
  nodes.forEach((node, index) => {
    const point = markers[index];
    const old = node.querySelector<HTMLElement>(':scope > .checkpoint');
    const key = point ? `${point.prompt}:${point.conversation}:${state.turn.running}` : undefined;
    if (old?.dataset.key === key) return;
    old?.remove();
    if (point) node.prepend(marker(point, key as string, state.turn.running, node, ui, post));
  });
  ui.redo.hidden = !state.checkpoints.redo || state.turn.running;
  if (!ui.redo.hidden && !ui.redo.childElementCount) {
    const button = el('button', 'redo', 'Redo');
    button.title = 'Put back what the last restore replaced';
    button.onclick = () => post({ type: 'redo' });
    ui.redo.append(el('span', undefined, 'Restored to a checkpoint.'), button);
  }
  drawEditing(ui);
}

function marker(point: Checkpoint, key: string, running: boolean, node: HTMLElement, ui: RewindUi, post: Post): HTMLElement {
  const box = el('div', 'checkpoint');
  box.dataset.key = key;
  box.dataset.prompt = String(point.prompt);
  const head = el('div', 'checkpoint-head');
  const label = el('span', 'checkpoint-label', `Checkpoint ${point.prompt}`);
  label.title = `Before this prompt (${point.createdAt})${point.leftOut.length ? `; left out: ${point.leftOut.join(', ')}` : ''}`;
  const choices = el('div', 'restore-choices');
  choices.hidden = true;
  for (const { scope, name, needsConversation } of SCOPES) {
    const choice = el('button', `restore-scope scope-${scope}`, name);
    choice.dataset.scope = scope;
    choice.disabled = needsConversation && !point.conversation;
    choice.onclick = () => {
      choices.hidden = true;
      post({ type: 'restore', prompt: point.prompt, scope });
    };
    choices.append(choice);
  }
  const actions: [string, string, () => void][] = [
    ['restore', 'Restore', () => (choices.hidden = !choices.hidden)],
    ['fork', 'Fork', () => post({ type: 'fork', prompt: point.prompt })],
    ['edit', 'Edit', () => startEditing(point, node, ui)],
  ];
  head.append(label);
  for (const [name, text, act] of actions) {
    const button = el('button', `checkpoint-${name}`, text);
    button.disabled = running;
    button.onclick = act;
    head.append(button);
  }
  box.append(head, choices);
  return box;
}

function startEditing(point: Checkpoint, node: HTMLElement, ui: RewindUi): void {
  editing = { prompt: point.prompt, label: point.label };
  ui.input.value = node.querySelector(':scope > .markdown')?.textContent ?? point.label;
  drawEditing(ui);
  ui.input.focus();
}

/** Ends an edit without sending (the banner's ✕). */
function cancelEditing(ui: RewindUi): void {
  editing = undefined;
  ui.input.value = '';
  drawEditing(ui);
}

export function drawEditing(ui: RewindUi): void {
  ui.editing.hidden = !editing;
  if (!editing) {
    ui.editing.replaceChildren();
    return;
  }
  const cancel = el('button', 'icon', '✕');
  cancel.title = 'Stop editing';
  cancel.onclick = () => cancelEditing(ui);
  ui.editing.replaceChildren(
    el('span', undefined, `Editing prompt ${editing.prompt}: sending restores the code and the conversation to before it.`),
    cancel,
  );
}
