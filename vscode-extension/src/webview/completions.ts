/**
 * The completion list under the chat input: `/` completes the session's slash
 * commands; `@` offers files, other context and the session's MCP resources. Arrows
 * move through it, Tab and Enter take the active row, Escape hides it.
 */

import { el } from './cards';
import { type Chips, completeMention, type MentionChoice, mentionAttachment, withoutMentionQuery } from './composer';
import { type Attachment, type ContextKind, completeCommand, type PanelState, type WebviewMessage } from './state';

/** One row of the list: what it shows and what choosing it does. */
interface Completion {
  name: string;
  description: string;
  accept(): void;
}

export class Completions {
  private index = 0;

  constructor(
    private readonly input: HTMLTextAreaElement,
    private readonly list: HTMLElement,
    private readonly chips: Chips,
    private readonly state: () => PanelState,
    private readonly post: (message: WebviewMessage) => void,
  ) {}

  /** Draw the rows for what is typed now (none: the list hides). */
  draw(): void {
    const matches = this.matches();
    this.list.hidden = matches.length === 0;
    this.index = Math.min(this.index, Math.max(0, matches.length - 1));
    this.list.replaceChildren(
      ...matches.map((completion, index) => {
        const row = el('li', index === this.index ? 'completion active' : 'completion');
        row.append(el('span', 'completion-name', completion.name), el('span', 'completion-desc', completion.description));
        row.onmousedown = (event) => {
          event.preventDefault();
          completion.accept();
        };
        return row;
      }),
    );
  }

  hide(): void {
    this.list.hidden = true;
  }

  /** Whether the list took `event` (a key it answers while shown). */
  key(event: KeyboardEvent): boolean {
    const matches = this.list.hidden ? [] : this.matches();
    if (matches.length && (event.key === 'ArrowDown' || event.key === 'ArrowUp')) {
      event.preventDefault();
      this.index = (this.index + (event.key === 'ArrowDown' ? 1 : matches.length - 1)) % matches.length;
      this.draw();
      return true;
    }
    if (matches.length && (event.key === 'Tab' || (event.key === 'Enter' && !event.shiftKey))) {
      event.preventDefault();
      matches[this.index].accept();
      return true;
    }
    if (event.key === 'Escape') this.hide();
    return false;
  }

  private matches(): Completion[] {
    const { commands, mentions } = this.state();
    const typed = this.input.value;
    const named = completeCommand(commands, typed).map((command) => ({
      name: `/${command.name}`,
      description: command.description,
      accept: () => this.takeCommand(command.name),
    }));
    return [...named, ...completeMention(mentions, typed).map((choice) => this.mention(choice))];
  }

  private mention(choice: MentionChoice): Completion {
    switch (choice.kind) {
      case 'files':
        return { name: '@file…', description: 'A file of the workspace', accept: () => this.takeMention() };
      case 'context':
        return { ...choice.context, accept: () => this.takeMention(undefined, choice.context.kind) };
      case 'resource':
        return {
          name: `@${choice.mention.title ?? choice.mention.name}`,
          description: `${choice.mention.description ?? choice.mention.uri} (MCP: ${choice.mention.server})`,
          accept: () => this.takeMention(mentionAttachment(choice.mention)),
        };
    }
  }

  private takeCommand(name: string): void {
    this.input.value = `/${name} `;
    this.hide();
    this.input.focus();
  }

  /**
   * The `@` typed goes; a resource becomes a chip, files open VS Code's picker, other
   * context the host gathers (each comes back as a chip).
   */
  private takeMention(attachment?: Attachment, context?: ContextKind): void {
    this.input.value = withoutMentionQuery(this.input.value);
    this.hide();
    if (attachment) {
      this.chips.add(attachment);
    } else {
      this.post(context ? { type: 'mentionContext', kind: context } : { type: 'mention' });
    }
    this.input.focus();
  }
}
