/**
 * The conversation's pieces as DOM: messages, tool cards, diffs, locations. Model
 * text goes through `renderMarkdown` (inert HTML); every other string is set as
 * text. What a click asks for goes to `post`, for the extension host.
 */

import { type DiffLine, diffLines } from './diff';
import { renderMarkdown } from './markdown';
import { baseName, type Item, shortPath, type ToolCard, toolText, type WebviewMessage } from './state';

export type Post = (message: WebviewMessage) => void;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

export function drawMessage(item: Extract<Item, { kind: 'message' }>): HTMLElement {
  if (item.role === 'thought') {
    const details = el('details', 'msg thought');
    details.append(el('summary', undefined, 'Thinking'));
    const body = el('div', 'markdown');
    body.innerHTML = renderMarkdown(item.text);
    details.append(body);
    return details;
  }
  const node = el('div', `msg ${item.role}`);
  const body = el('div', 'markdown');
  if (item.role === 'user') body.textContent = item.text;
  else body.innerHTML = renderMarkdown(item.text);
  node.append(body);
  if (item.attachments.length) {
    const chips = el('div', 'chips');
    for (const name of item.attachments) chips.append(el('span', 'chip', name));
    node.append(chips);
  }
  return node;
}

const KIND_ICONS: Record<string, string> = {
  read: '📄',
  edit: '✎',
  delete: '🗑',
  move: '⇄',
  search: '🔍',
  execute: '▶',
  think: '💭',
  fetch: '🌐',
  switch_mode: '⇆',
  other: '⚙',
};

export function drawTool(card: ToolCard, cwd: string | undefined, post: Post): HTMLElement {
  const node = el('div', `tool-card status-${card.status}`);
  node.dataset.kind = card.kind;
  node.dataset.status = card.status;
  node.dataset.toolCallId = card.id;
  const head = el('div', 'tool-head');
  head.append(
    el('span', 'tool-icon', KIND_ICONS[card.kind] ?? '⚙'),
    el('span', 'tool-kind', card.kind),
    el('span', 'tool-title', card.title),
    el('span', `tool-status ${card.status}`, card.status.replace('_', ' ')),
  );
  node.append(head);
  if (card.subject) node.append(el('code', 'tool-subject', shortPath(card.subject, cwd)));
  for (const location of card.locations) node.append(locationLink(location.path, location.line, post));
  for (const content of card.content) {
    if (content.type === 'diff') node.append(drawDiff(content, cwd, post));
  }
  const text = toolText(card);
  if (text) {
    const output = el('details', card.kind === 'execute' ? 'tool-output terminal' : 'tool-output');
    output.open = card.kind === 'execute';
    output.append(el('summary', undefined, card.kind === 'execute' ? 'Output' : 'Result'));
    output.append(el('pre', undefined, text));
    node.append(output);
  }
  return node;
}

function locationLink(path: string, line: number | undefined, post: Post): HTMLElement {
  const link = el('a', 'location', line ? `${baseName(path)}:${line}` : baseName(path));
  link.href = '#';
  link.title = path;
  link.onclick = (event) => {
    event.preventDefault();
    post({ type: 'openLocation', path, line });
  };
  return link;
}

export function drawDiff(
  { path, oldText, newText }: { path: string; oldText: string | null; newText: string },
  cwd: string | undefined,
  post: Post,
): HTMLElement {
  const box = el('div', 'diff');
  const bar = el('div', 'diff-bar');
  const shown = shortPath(path, cwd);
  bar.append(el('span', 'diff-path', oldText === null ? `${shown} (new file)` : shown));
  const open = el('button', 'open-diff', 'Open diff');
  open.onclick = () => post({ type: 'openDiff', path, oldText, newText });
  bar.append(open);
  box.append(bar);
  const pre = el('pre', 'diff-lines');
  for (const line of diffLines(oldText, newText)) pre.append(diffLine(line));
  box.append(pre);
  return box;
}

function diffLine(line: DiffLine): HTMLElement {
  const cls = { ' ': 'ctx', '-': 'del', '+': 'add', '…': 'skip' }[line.op];
  return el('div', `line ${cls}`, line.op === '…' ? `⋯ ${line.text}` : `${line.op} ${line.text}`);
}

