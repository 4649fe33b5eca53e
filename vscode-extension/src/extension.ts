/**
 * The composition root: `activate` makes the one `Loopd` and registers what VS Code
 * calls into (the panel, the diff and review documents, the trust event, the
 * commands); `deactivate` stops its server.
 */

import * as vscode from 'vscode';
import { Loopd } from './app';
import { commands } from './commands';
import { DiffDocuments } from './diffs';
import { VIEW_ID } from './panel';
import { REVIEW_SCHEME } from './review';

let loopd: Loopd | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const app = new Loopd(context);
  loopd = app;
  const run =
    (f: (...args: unknown[]) => unknown) =>
    async (...args: unknown[]) => {
      try {
        await f(...args);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        app.log.error(message);
        void vscode.window.showErrorMessage(`loopd: ${message}`);
      }
    };
  const command = (id: string, f: (...args: unknown[]) => unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, run(f)));

  context.subscriptions.push(
    app.log,
    app.status,
    vscode.window.registerWebviewViewProvider(VIEW_ID, app.panel, { webviewOptions: { retainContextWhenHidden: false } }),
    vscode.workspace.registerTextDocumentContentProvider(DiffDocuments.scheme, app.diffs),
    vscode.workspace.registerTextDocumentContentProvider(REVIEW_SCHEME, app.reviews),
    vscode.languages.registerCodeLensProvider({ scheme: REVIEW_SCHEME }, app.reviews),
    vscode.window.onDidChangeVisibleTextEditors((editors) => app.reviews.decorate(editors)),
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.document.uri.scheme === REVIEW_SCHEME) app.reviews.decorate(vscode.window.visibleTextEditors);
    }),
    app.reviews.watchTabs(),
    app.reviews,
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      app.panel.post({ type: 'trust', trusted: true });
      void app.start().catch((e) => app.log.error(String(e)));
    }),
  );

  for (const [id, f] of Object.entries(commands(app))) command(id, f);

  await app.start().catch((e) => app.log.error(e instanceof Error ? e.message : String(e)));
}

export function deactivate(): Promise<void> | undefined {
  return loopd?.stop();
}
