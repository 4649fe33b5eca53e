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

