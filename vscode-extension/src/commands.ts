/**
 * The extension's commands (the palette, keybindings and menus name them). Each
 * forwards to the panel's session; none decides what the agent does.
 */

import * as vscode from 'vscode';
import type { Loopd } from './app';

const EXPLAIN = 'Explain what this code does.';

type Command = (...args: unknown[]) => unknown;

export function commands(app: Loopd): Record<string, Command> {
  return {
    'loopd.panel.ask': async (text?: unknown) => {
      const prompt = typeof text === 'string' ? text : await vscode.window.showInputBox({ prompt: 'Ask loopd' });
      if (prompt) await app.ask([{ type: 'text', text: prompt }]);
    },
    'loopd.panel.askSelection': async () => {
      const block = app.contextBlock();
      const prompt = await vscode.window.showInputBox({ prompt: 'Ask loopd about the selection' });
      if (prompt) await app.ask(block ? [{ type: 'text', text: prompt }, block] : [{ type: 'text', text: prompt }]);
    },
    'loopd.panel.explain': async () => {
      const block = app.contextBlock();
      if (block) await app.ask([{ type: 'text', text: EXPLAIN }, block]);
    },
    'loopd.panel.fixDiagnostic': () => fixDiagnostic(app),
    'loopd.panel.cancel': () => app.controller?.cancel(),
    'loopd.panel.newSession': async () => {
      await app.requireController().newSession();
      await app.panel.reveal();
    },
    'loopd.panel.undo': async () => {
      const controller = app.requireController();
      const result = await app.client?.sendRequest<{ summary?: string }>('workspace/executeCommand', {
        command: 'loopd.undo',
        arguments: [{ sessionId: controller.sessionId }],
      });
      void vscode.window.showInformationMessage(`loopd: ${result?.summary || 'nothing to undo'}`);
    },
    'loopd.panel.mention': () => app.mention(),
    'loopd.panel.addSelection': () => app.addSelection(),
    'loopd.panel.showLog': () => app.log.show(),
    'loopd.panel.restart': () => app.restart(),
    'loopd.panel.login': () => app.login(),
    'loopd.panel.setRemoteToken': () => app.setRemoteToken(),
    'loopd.panel.acceptHunk': (reviewId, index) => app.reviews.decideHunk(reviewId, index, 'accept'),
    'loopd.panel.rejectHunk': (reviewId, index) => app.reviews.decideHunk(reviewId, index, 'reject'),
    'loopd.panel.acceptFile': (target) => app.reviews.decideFile(target, 'accept'),
    'loopd.panel.rejectFile': (target) => app.reviews.decideFile(target, 'reject'),
    'loopd.panel.acceptAll': () => app.reviews.decideAll('accept'),
    'loopd.panel.rejectAll': () => app.reviews.decideAll('reject'),
  };
}

/** The diagnostic under the cursor (or on its line) as a prompt with its lines. */
async function fixDiagnostic(app: Loopd): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) return;
  const here = editor.selection.active;
  const diagnostics = vscode.languages.getDiagnostics(editor.document.uri);
  const diag = diagnostics.find((d) => d.range.contains(here)) ?? diagnostics.find((d) => d.range.start.line === here.line);
  if (!diag) {
    void vscode.window.showInformationMessage('loopd: no diagnostic at the cursor');
    return;
  }
  const source = diag.source ? ` (${diag.source})` : '';
  const lines = `L${diag.range.start.line + 1}-${diag.range.end.line + 1}`;
  const line = editor.document.lineAt(diag.range.start.line).range.union(diag.range);
  await app.ask([
    { type: 'text', text: `Fix this diagnostic: ${diag.message}${source}` },
    { type: 'resource', resource: { uri: `${editor.document.uri.toString()}#${lines}`, text: editor.document.getText(line) } },
  ]);
}
