/**
 * The person's attachments as a prompt's content blocks. Files and folders go as
 * links: the server reads them through its own gates (policy, the open buffer, a
 * line range in the uri). What only the editor knows is embedded under the uri of
 * the file it is about, which the server checks the same way. No `vscode` import.
 */

import type { ContentBlock } from './protocol';
import type { Attachment } from './webview/state';

export function toBlock(a: Attachment): ContentBlock {
  switch (a.kind) {
    case 'file':
    case 'folder':
      return { type: 'resource_link', uri: a.uri, name: a.name };
    case 'resource':
      return { type: 'resource_link', uri: a.uri, name: a.name, ...(a.mimeType ? { mimeType: a.mimeType } : {}) };
    case 'selection':
    case 'problems':
    case 'terminal':
    case 'changes':
      return { type: 'resource', resource: { uri: a.uri, text: a.text ?? '' } };
    case 'image':
      return { type: 'image', data: a.data ?? '', mimeType: a.mimeType ?? 'image/png' };
  }
}

export const MAX_TERMINAL_LINES = 200;

/** What `problemsText` reads of a VS Code diagnostic. */
export interface Diagnostic {
  message: string;
  severity: number;
  source?: string;
  range: { start: { line: number; character: number } };
}

/** A file's diagnostics as the model reads them: one line each, 1-based. */
export function problemsText(path: string, diagnostics: readonly Diagnostic[]): string {
  const severity = ['error', 'warning', 'info', 'hint'];
  const lines = diagnostics.map((d) => {
    const source = d.source ? ` (${d.source})` : '';
    return `L${d.range.start.line + 1}:${d.range.start.character + 1} ${severity[d.severity] ?? 'problem'}: ${d.message}${source}`;
  });
  return [`Problems in ${path}:`, ...lines].join('\n');
}

/** The last `max` lines of a terminal's text, without the blank lines after its prompt. */
export function lastLines(text: string, max = MAX_TERMINAL_LINES): string {
  const lines = text.replace(/\s+$/, '').split(/\r?\n/);
  return lines.slice(-max).join('\n');
}

