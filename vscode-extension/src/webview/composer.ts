/**
 * The composer's context, beside files and MCP resources: the `@` menu's folder,
 * Problems, terminal and git changes entries (the host gathers each, it comes back
 * as a chip), and images pasted or dropped into the panel, sent as image blocks.
 * Nothing here reads the workspace: the host asks VS Code, and the server decides
 * what of a file may reach the model.
 */

import { el } from './cards';
import { type Attachment, type ContextKind, mentionQuery } from './state';

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

/** A chip's face: an image shows itself, everything else its name. */
export function chipFor(a: Attachment): HTMLElement {
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
