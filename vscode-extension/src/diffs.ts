/**
 * Both sides of a diff as read-only virtual documents, so "Open diff" shows VS
 * Code's diff editor for a proposed edit before (or after) it reaches the file.
 */

import * as vscode from 'vscode';

export class DiffDocuments implements vscode.TextDocumentContentProvider {
  static readonly scheme = 'loopd-diff';
  private texts = new Map<string, string>();
  private next = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.query) ?? '';
  }

  async open(path: string, oldText: string | null, newText: string, cwd: string): Promise<void> {
    const id = ++this.next;
    this.texts.set(`${id}-old`, oldText ?? '');
    this.texts.set(`${id}-new`, newText);
    const file = path.startsWith('/') ? path : `${cwd}/${path}`;
    const side = (s: string) => vscode.Uri.from({ scheme: DiffDocuments.scheme, path: file, query: `${id}-${s}` });
    const name = file.slice(file.lastIndexOf('/') + 1);
    await vscode.commands.executeCommand('vscode.diff', side('old'), side('new'), `${name} (loopd: proposed edit)`);
  }
}
