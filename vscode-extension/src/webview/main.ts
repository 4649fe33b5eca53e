/**
 * The agent panel's DOM. It keeps a `PanelState` (see state.ts) and draws it;
 * everything the person does becomes a message to the extension host, which
 * forwards it to the server. Model text goes through `renderMarkdown` (inert
 * HTML); every other string is set as text, never as markup.
 */

import { drawDiff, drawMessage, drawTool, el } from './cards';
import { drawCheckpoints, drawEditing, takeEditing } from './checkpoints';
import { Completions } from './completions';
import { Chips, listenForImages, mentionQuery } from './composer';
import {
  type Approval,
  type HostMessage,
  type Item,
  initialState,
  type PanelState,
  reduce,
  shortPath,
  type ToolCard,
  usageLabel,
  type WebviewMessage,
} from './state';

interface VsCodeApi {
  postMessage(message: WebviewMessage): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const post = (message: WebviewMessage): void => vscode.postMessage(message);

function byId<T extends HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (!node) throw new Error(`#${id} is missing`);
  return node as T;
}

const ui = {
  title: byId<HTMLElement>('title'),
  sessions: byId<HTMLElement>('sessions'),
  sessionsButton: byId<HTMLButtonElement>('sessions-button'),
  newButton: byId<HTMLButtonElement>('new-session'),
  options: byId<HTMLElement>('options'),
  status: byId<HTMLElement>('status'),
  untrusted: byId<HTMLElement>('untrusted'),
  conversation: byId<HTMLElement>('conversation'),
  plan: byId<HTMLElement>('plan'),
  approval: byId<HTMLElement>('approval'),
  attachments: byId<HTMLElement>('attachments'),
  input: byId<HTMLTextAreaElement>('input'),
  completions: byId<HTMLElement>('completions'),
  send: byId<HTMLButtonElement>('send'),
  stop: byId<HTMLButtonElement>('stop'),
  mention: byId<HTMLButtonElement>('mention'),
  addSelection: byId<HTMLButtonElement>('add-selection'),
  redo: byId<HTMLElement>('redo'),
  editing: byId<HTMLElement>('editing'),
};

let state: PanelState = initialState();
const chips = new Chips(ui.attachments);
const completions = new Completions(ui.input, ui.completions, chips, () => state, post);
const drawn = new Map<number, { item: Item; card?: ToolCard; node: HTMLElement }>();
let scheduled = false;

window.addEventListener('message', (event: MessageEvent<HostMessage>) => {
  const message = event.data;
  if (message.type === 'attach') {
    chips.add(message.attachment);
    ui.input.focus();
    return;
  }
  if (message.type === 'focus') {
    if (message.text) ui.input.value = message.text;
    ui.input.focus();
    return;
  }
  if (message.type === 'reset' || message.type === 'snapshot') {
    for (const old of drawn.values()) old.node.remove();
    drawn.clear();
  }
  state = reduce(state, message);
  if (message.type === 'mentions' && mentionQuery(ui.input.value) !== undefined) completions.draw();
  schedule();
});

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() => {
    scheduled = false;
    draw();
  });
}

function draw(): void {
  ui.title.textContent = state.title ?? (state.sessionId ? 'Session' : 'loopd');
  ui.untrusted.hidden = state.trusted;
  ui.send.hidden = state.turn.running;
  ui.stop.hidden = !state.turn.running;
  ui.send.disabled = !state.trusted;
  document.body.dataset.running = String(state.turn.running);
  drawSessions();
  drawOptions();
  drawStatus();
  drawConversation();
  drawCheckpoints(ui, state, post);
  drawPlan();
  drawApproval(state.approval);
}

// -- sessions and options -------------------------------------------------------------

function drawSessions(): void {
  ui.sessions.replaceChildren(
    ...state.sessions.map((s) => {
      const row = el('li', s.sessionId === state.sessionId ? 'session current' : 'session');
      const open = el('button', 'session-open', s.title || s.sessionId);
      open.title = s.updatedAt ? `${s.cwd} · ${s.updatedAt}` : s.cwd;
      open.onclick = () => {
        ui.sessions.hidden = true;
        post({ type: 'loadSession', sessionId: s.sessionId });
      };
      const del = el('button', 'session-delete icon', '✕');
      del.title = 'Delete session';
      del.onclick = () => post({ type: 'deleteSession', sessionId: s.sessionId });
      row.append(open, del);
      return row;
    }),
  );
  if (!state.sessions.length) ui.sessions.append(el('li', 'empty', 'No sessions yet'));
}

function drawOptions(): void {
  ui.options.replaceChildren(
    ...state.configOptions.map((option) => {
      const label = el('label', 'option');
      label.title = option.description ?? option.name;
      label.append(el('span', 'option-name', option.name));
      const select = el('select');
      select.dataset.configId = option.id;
      select.dataset.category = option.category;
      for (const choice of option.options) {
        const item = el('option', undefined, choice.name);
        item.value = choice.value;
        item.selected = choice.value === option.currentValue;
        select.append(item);
      }
      select.onchange = () => post({ type: 'setConfig', configId: option.id, value: select.value });
      label.append(select);
      return label;
    }),
  );
}

function drawStatus(): void {
  const parts: HTMLElement[] = [];
  if (state.usage) parts.push(el('span', 'usage', usageLabel(state.usage)));
  const mode = state.configOptions.find((o) => o.category === 'mode');
  if (mode) {
    const name = mode.options.find((c) => c.value === mode.currentValue)?.name ?? mode.currentValue;
    parts.push(el('span', 'mode', `mode: ${name}`));
  }
  // The mode option's description is how the runtime contains commands (the sandbox tier).
  const tier = state.sandboxTier ? `sandbox: ${state.sandboxTier}` : mode?.description;
  if (tier) parts.push(el('span', 'tier', tier));
  if (state.verification) {
    const { seal, summary, incomplete } = state.verification;
    const badge = el('span', `seal seal-${seal}`, `seal: ${seal}${incomplete ? ' (incomplete)' : ''}`);
    if (summary) badge.title = summary;
    parts.push(badge);
  }
  if (state.turn.stopReason && !state.turn.running) {
    parts.push(el('span', 'stop-reason', `last turn: ${state.turn.stopReason}`));
  }
  if (state.turn.error) parts.push(el('span', 'error', state.turn.error));
  if (state.interrupted && !state.turn.running) {
    const resume = el('button', 'continue', 'Continue');
    resume.title = 'The last turn was cut off when loopd stopped: carry it on';
    resume.onclick = () => post({ type: 'continue' });
    parts.push(resume);
  }
  ui.status.replaceChildren(...parts);
}

// -- the conversation -------------------------------------------------------------------

function drawConversation(): void {
  const atBottom =
    ui.conversation.scrollHeight - ui.conversation.scrollTop - ui.conversation.clientHeight < 40;
  state.items.forEach((item, index) => {
    const card = item.kind === 'tool' ? state.tools[item.id] : undefined;
    const old = drawn.get(index);
    if (old && old.item === item && old.card === card) return;
    const node = item.kind === 'tool' ? drawTool(card as ToolCard, state.cwd, post) : drawMessage(item);
    if (old?.node instanceof HTMLDetailsElement && node instanceof HTMLDetailsElement) node.open = old.node.open;
    if (old) old.node.replaceWith(node);
    else ui.conversation.append(node);
    drawn.set(index, { item, card, node });
  });
  for (const [index, old] of drawn) {
    if (index >= state.items.length) {
      old.node.remove();
      drawn.delete(index);
    }
  }
  if (atBottom) ui.conversation.scrollTop = ui.conversation.scrollHeight;
}

function drawPlan(): void {
  ui.plan.hidden = state.plan.length === 0;
  const list = el('ul');
  for (const entry of state.plan) {
    const item = el('li', `plan-entry ${entry.status}`);
    item.dataset.status = entry.status;
    const box = el('input');
    box.type = 'checkbox';
    box.disabled = true;
    box.checked = entry.status === 'completed';
    item.append(box, el('span', undefined, entry.content));
    list.append(item);
  }
  const done = state.plan.filter((e) => e.status === 'completed').length;
  ui.plan.replaceChildren(el('div', 'plan-head', `Plan · ${done}/${state.plan.length}`), list);
}

function drawApproval(approval: Approval | undefined): void {
  ui.approval.hidden = !approval;
  if (!approval) {
    ui.approval.replaceChildren();
    return;
  }
  ui.approval.dataset.approvalId = approval.id;
  const parts: HTMLElement[] = [el('div', 'approval-title', `loopd asks: ${approval.title}`)];
  if (approval.subject) parts.push(el('code', 'approval-subject', shortPath(approval.subject, state.cwd)));
  if (approval.diff) parts.push(drawDiff(approval.diff, state.cwd, post));
  const buttons = el('div', 'approval-buttons');
  for (const option of approval.options) {
    const button = el('button', `answer ${option.kind}`, option.name);
    button.dataset.optionId = option.optionId;
    button.onclick = () => post({ type: 'answer', approvalId: approval.id, optionId: option.optionId });
    buttons.append(button);
  }
  parts.push(buttons);
  ui.approval.replaceChildren(...parts);
}

// -- input ----------------------------------------------------------------------------

listenForImages(
  ui.input,
  (image) => chips.add(image),
  (why) => chips.say(why),
);

function send(): void {
  const text = ui.input.value.trim();
  const attachments = chips.all;
  if ((!text && !attachments.length) || state.turn.running || !state.trusted) return;
  const edit = takeEditing();
  post(edit ? { type: 'edit', prompt: edit.prompt, text, attachments } : { type: 'prompt', text, attachments });
  drawEditing(ui);
  ui.input.value = '';
  chips.clear();
  completions.hide();
  vscode.setState({ draft: '' });
}

ui.input.addEventListener('keydown', (event) => {
  if (completions.key(event)) return;
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  }
});
let mentioning = false;
ui.input.addEventListener('input', () => {
  vscode.setState({ draft: ui.input.value });
  const wasMentioning = mentioning;
  mentioning = mentionQuery(ui.input.value) !== undefined;
  if (mentioning && !wasMentioning) post({ type: 'listMentions' }); // the server's list as it is now
  completions.draw();
});
ui.send.onclick = send;
ui.stop.onclick = () => post({ type: 'stop' });
ui.mention.onclick = () => post({ type: 'mention' });
ui.addSelection.onclick = () => post({ type: 'addSelection' });
ui.newButton.onclick = () => post({ type: 'newSession' });
ui.sessionsButton.onclick = () => {
  ui.sessions.hidden = !ui.sessions.hidden;
  if (!ui.sessions.hidden) post({ type: 'listSessions' });
};
ui.conversation.addEventListener('click', (event) => {
  const target = event.target as HTMLElement;
  if (target.matches('button.copy')) {
    const code = target.closest('.code-block')?.querySelector('code')?.textContent ?? '';
    post({ type: 'copy', text: code });
    target.textContent = 'Copied';
    setTimeout(() => {
      target.textContent = 'Copy';
    }, 1200);
  }
});

const saved = vscode.getState() as { draft?: string } | undefined;
if (saved?.draft) ui.input.value = saved.draft;
post({ type: 'ready' });
