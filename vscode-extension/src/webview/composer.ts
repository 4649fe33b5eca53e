/**
 * The composer's `@` completion and attachments. `@` offers the workspace's files
 * (VS Code's picker), then a folder, a file's Problems, the terminal's output and
 * the git changes (the host gathers each, it comes back as a chip), then the
 * session's MCP resources. Images pasted or dropped into the panel are sent as
 * image blocks. Nothing here reads the workspace: the host asks VS Code, and the
 * server decides what of a file may reach the model.
 */

import type { Mention } from '../protocol';
import { el } from './cards';
import type { Attachment, ContextKind } from './state';

/** What `@` offers: the workspace's files (VS Code's picker), then the matching resources. */
export type MentionChoice =
  | { kind: 'files' }
  | { kind: 'context'; context: ContextChoice }
  | { kind: 'resource'; mention: Mention };

const MENTION_AT_END = /(?:^|\s)@([^\s@]*)$/;
const MAX_MENTION_CHOICES = 50;

/** The words typed after an `@` that ends the input, or undefined when none does. */
export function mentionQuery(input: string): string | undefined {
  return MENTION_AT_END.exec(input)?.[1];
}

/** The input without the `@` being completed (what stays once a choice is taken). */
export function withoutMentionQuery(input: string): string {
  const query = mentionQuery(input);
  return query === undefined ? input : input.slice(0, input.length - query.length - 1);
}

/**
 * The choices for the `@` that ends `input`: files first, then the context entries
 * that start with what was typed, then resources whose name, title or uri match.
 */
export function completeMention(mentions: Mention[], input: string): MentionChoice[] {
  const query = mentionQuery(input)?.toLowerCase();
  if (query === undefined) return [];
  const matches = mentions.filter((m) =>
    [m.name, m.title ?? '', m.uri].some((field) => field.toLowerCase().includes(query)),
  );
  return [
    { kind: 'files' },
    ...contextChoices(input).map((context) => ({ kind: 'context', context }) as const),
    ...matches.slice(0, MAX_MENTION_CHOICES).map((mention) => ({ kind: 'resource', mention }) as const),
  ];
}

/** A resource the person chose, as the attachment that links it in the prompt. */
export function mentionAttachment(mention: Mention): Attachment {
  const attachment: Attachment = { kind: 'resource', uri: mention.uri, name: mention.title ?? mention.name };
  return mention.mimeType ? { ...attachment, mimeType: mention.mimeType } : attachment;
}

/** The image types every provider loopd speaks takes, and the largest one it takes (5 MB). */
export const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

export interface ContextChoice {
  kind: ContextKind;
  name: string;
  description: string;
}

const CHOICES: ContextChoice[] = [
  { kind: 'folder', name: '@folder…', description: 'A folder of the workspace (its entries)' },
  { kind: 'problems', name: '@problems', description: "The Problems of the editor's file" },
  { kind: 'terminal', name: '@terminal', description: "The active terminal's last output" },
  { kind: 'changes', name: '@changes', description: 'The git changes of the workspace' },
];

/** The context entries for the `@` that ends `input`, by what was typed after it. */
export function contextChoices(input: string): ContextChoice[] {
  const query = mentionQuery(input)?.toLowerCase();
  if (query === undefined) return [];
  return CHOICES.filter((c) => c.name.slice(1).startsWith(query) || c.kind.startsWith(query));
}

/** An image file as an attachment, or why it cannot be sent. */
export async function imageAttachment(file: Blob & { name?: string }): Promise<Attachment | string> {
  if (!IMAGE_TYPES.includes(file.type)) return `${file.type || 'this file'} is not an image loopd can send (PNG, JPEG, GIF, WebP)`;
  if (file.size > MAX_IMAGE_BYTES) return `the image is ${Math.ceil(file.size / 1024)} KiB, over the 5 MB models take`;
  const data = await new Promise<string>((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ''));
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
  return { kind: 'image', uri: '', name: file.name || `image.${file.type.split('/')[1]}`, mimeType: file.type, data };
}

/** Images pasted into the input or dropped on the panel become attachments; `said` shows why one is not. */
export function listenForImages(input: HTMLElement, add: (a: Attachment) => void, said: (why: string) => void): void {
  const take = async (files: Blob[]) => {
    for (const file of files) {
      const taken = await imageAttachment(file);
      if (typeof taken === 'string') said(taken);
      else add(taken);
    }
  };
  input.addEventListener('paste', (event) => {
    const files = [...(event.clipboardData?.items ?? [])]
      .filter((item) => item.kind === 'file' && item.type.startsWith('image/'))
      .map((item) => item.getAsFile())
      .filter((f): f is File => f !== null);
    if (!files.length) return; // text pastes as text
    event.preventDefault();
    void take(files);
  });
  document.addEventListener('dragover', (event) => {
    if (event.dataTransfer?.types.includes('Files')) event.preventDefault();
  });
  document.addEventListener('drop', (event) => {
    const files = [...(event.dataTransfer?.files ?? [])];
    if (!files.length) return;
    event.preventDefault();
    void take(files);
  });
}

/** The attachments the next prompt carries, drawn as chips in `into`, each with its ✕. */
export class Chips {
  private list: Attachment[] = [];

  constructor(private readonly into: HTMLElement) {}

  get all(): Attachment[] {
    return this.list;
  }

  add(attachment: Attachment): void {
    this.list = [...this.list, attachment];
    this.draw();
  }

  /** Why something could not be attached, shown until the chips are drawn again. */
  say(why: string): void {
    this.into.append(el('span', 'chip refused', why));
  }

  clear(): void {
    this.list = [];
    this.draw();
  }

  private draw(): void {
    this.into.replaceChildren(
      ...this.list.map((a, index) => {
        const chip = chipFor(a);
        const remove = el('button', 'icon', '✕');
        remove.title = 'Remove';
        remove.onclick = () => {
          this.list = this.list.filter((_, i) => i !== index);
          this.draw();
        };
        chip.append(remove);
        return chip;
      }),
    );
  }
}

/** A chip's face: an image shows itself, everything else its name. */
function chipFor(a: Attachment): HTMLElement {
  const chip = el('span', `chip ${a.kind}`);
  if (a.kind === 'image' && a.data) {
    const img = el('img', 'thumb');
    img.src = `data:${a.mimeType};base64,${a.data}`;
    img.alt = a.name;
    chip.append(img);
  }
  chip.append(document.createTextNode(a.name));
  chip.title = a.kind === 'image' ? a.name : a.uri;
  return chip;
}
