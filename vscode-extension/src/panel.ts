/**
 * The agent panel: a webview view in loopd's activity-bar container. It draws
 * what the controller says and hands what the person does back to it. A new
 * webview (the view was hidden, the window reloaded) gets a snapshot of the state.
 */

import * as vscode from 'vscode';
import { makeNonce, panelHtml } from './html';
import type { WebviewMessage } from './webview/state';

export const VIEW_ID = 'loopd.panel';

export class PanelProvider implements vscode.WebviewViewProvider {
  view?: vscode.WebviewView;
  private ready = false;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly onMessage: (message: WebviewMessage) => void,
    private readonly snapshot: () => unknown[],
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const media = vscode.Uri.joinPath(this.extensionUri, 'dist');
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    view.webview.html = panelHtml({
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'webview.js')).toString(),
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'panel.css')).toString(),
      cspSource: view.webview.cspSource,
      nonce: makeNonce(),
    });
    view.webview.onDidReceiveMessage((message: WebviewMessage) => {
      if (message.type === 'ready') {
        this.ready = true;
        for (const m of this.snapshot()) void view.webview.postMessage(m);
      }
      this.onMessage(message);
    });
    view.onDidDispose(() => {
      if (this.view === view) this.view = undefined;
      this.ready = false;
    });
  }

  post(message: unknown): void {
    // Until it is ready, a new webview gets everything in the snapshot instead.
    if (this.view && this.ready) void this.view.webview.postMessage(message);
  }

  set badge(waiting: number) {
    if (this.view) {
      this.view.badge = waiting ? { value: waiting, tooltip: `${waiting} approval(s) waiting` } : undefined;
    }
  }

  async reveal(): Promise<void> {
    await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
  }
}
