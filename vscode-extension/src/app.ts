/**
 * The extension's one object: the output channel, the status bar item, the panel,
 * the server and its controller, and what the panel and the commands ask of them.
 * Turns run only in a trusted workspace; in an untrusted one the server is not
 * started and the panel says why.
 */

import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { askApproval } from './approval';
import { toBlock } from './attachments';
import { gatherContext } from './context';
import { type Activity, Controller } from './controller';
import { DiffDocuments } from './diffs';
import { loginCommand } from './discovery';
import { mcpServersFromSettings } from './mcp';
import { PanelProvider, VIEW_ID } from './panel';
import {
  type ContentBlock,
  Method,
  type PermissionParams,
  type ReviewProposal,
  type ReviewSettled,
  type SessionNotification,
} from './protocol';
import { type ReviewSettings, Reviews } from './review';
import { REMOTE_TOKEN_SECRET, tokenMissing } from './remote';
import { alwaysAskGlobs, createClient, locateServer, notifyMissing, remoteSettings } from './server';
import type { Approval, Attachment, WebviewMessage } from './webview/state';

const REMEMBERED = 'loopd.sessionId';

export class Loopd {
  client?: LanguageClient;
  controller?: Controller;
  readonly log = vscode.window.createOutputChannel('loopd', { log: true });
  readonly status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  readonly diffs = new DiffDocuments();
  readonly reviews = new Reviews(() => this.reviewSettings());
  readonly panel: PanelProvider;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.panel = new PanelProvider(
      context.extensionUri,
      (m) => void this.fromPanel(m).catch((e) => this.fail(e)),
      () => [
        ...(this.controller?.snapshot() ?? []),
        { type: 'trust', trusted: vscode.workspace.isTrusted },
      ],
    );
    this.status.command = `${VIEW_ID}.focus`;
    this.showActivity('idle', 0);
    this.status.show();
  }

  reviewSettings(): ReviewSettings {
    const config = vscode.workspace.getConfiguration('loopd');
    // The timer from user settings only: a repository must not make its edits land unasked.
    const seconds = config.inspect<number>('review.autoAccept')?.globalValue ?? 0;
    return { autoAcceptSeconds: Math.max(Number(seconds) || 0, 0), alwaysAsk: alwaysAskGlobs(config) };
  }

  private get cwd(): string {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? process.cwd();
  }

  async start(): Promise<void> {
    if (!vscode.workspace.isTrusted) {
      this.log.info('the workspace is not trusted: loopd starts when you trust it');
      this.panel.post({ type: 'trust', trusted: false });
      return;
    }
    const server = await locateServer();
    if (!server) {
      this.log.error('no loopd server found');
      void notifyMissing();
      return;
    }
    const token = await this.context.secrets.get(REMOTE_TOKEN_SECRET);
    const config = vscode.workspace.getConfiguration('loopd');
    if (tokenMissing(remoteSettings(config), token, { ...process.env, ...(config.get('server.env') ?? {}) })) {
      this.log.error('loopd.server.remote.url is set but there is no token for it');
      void this.askForToken();
      return;
    }
    this.log.info(`starting ${server.command} ${server.args.join(' ')} (found via ${server.source})`);
    const client = createClient(server, this.log, {
      // The server's code actions run `loopd.ask`; running them through the panel
      // gives them the panel's turn (progress, Stop, approvals) like any prompt.
      executeCommand: (command, args, next) =>
        command === 'loopd.ask' && isAskArgument(args[0]) ? this.askFromCodeAction(args[0]) : next(command, args),
    }, token);
    const controller = this.makeController(client);
    client.onNotification(Method.update, (n: SessionNotification) => controller.onUpdate(n));
    client.onRequest(Method.requestPermission, (params: PermissionParams, token) =>
      controller.onPermission(params, new Promise((resolve) => token.onCancellationRequested(() => resolve()))),
    );
    client.onRequest(Method.reviewPropose, (params: ReviewProposal, token) => this.reviews.propose(params, token));
    client.onNotification(Method.reviewSettled, (params: ReviewSettled) => void this.reviews.settled(params));
    this.client = client;
    this.controller = controller;
    await client.start();
    this.log.info(`session ${await controller.resume()}`);
  }

  /** The controller of the panel's session, with the dialogs, status bar and settings. */
  private makeController(client: LanguageClient): Controller {
    const config = vscode.workspace.getConfiguration('loopd');
    const timeout = config.get<number>('approvals.timeoutSeconds') ?? 0;
    const mcp = mcpServersFromSettings(config.get('mcpServers'));
    for (const problem of mcp.problems) this.log.warn(`${problem}: left out`);
    return new Controller(
      client,
      {
        post: (m) => this.panel.post(m),
        // The panel's card asks; a modal dialog too only when the person opted in.
        ask: config.get<boolean>('approvals.modal') ? (approval) => this.modal(approval) : undefined,
        activity: (a, waiting) => this.showActivity(a, waiting),
      },
      this.cwd,
      {
        get: () => this.context.workspaceState.get<string>(REMEMBERED),
        set: (id) => void this.context.workspaceState.update(REMEMBERED, id),
      },
      {
        defaults: {
          runtime: config.get<string>('defaults.runtime') || undefined,
          model: config.get<string>('defaults.model') || undefined,
          mode: config.get<string>('defaults.mode') || undefined,
        },
        approvalTimeoutMs: timeout > 0 ? timeout * 1000 : undefined,
        mcpServers: mcp.servers,
        confirmOverwrite,
      },
    );
  }

  private modal(approval: Approval): Promise<string | undefined> {
    return askApproval(
      approval,
      (d) => Promise.resolve(vscode.window.showWarningMessage(d.message, { modal: true, detail: d.detail }, ...d.buttons)),
      async (a) => {
        if (a.diff) await this.diffs.open(a.diff.path, a.diff.oldText, a.diff.newText, this.cwd);
      },
    );
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.controller = undefined;
    if (client) await client.stop();
  }

  /**
   * `loopd login` in a terminal; when it closes, the server is asked whether a model
   * provider is ready now (it looks again without a restart) and the answer is shown.
   */
  async login(): Promise<void> {
    const server = await locateServer();
    if (!server) return void notifyMissing();
    const login = loginCommand(server);
    const terminal = vscode.window.createTerminal({
      name: 'loopd login',
      shellPath: login.command,
      shellArgs: login.args,
      cwd: this.cwd,
    });
    terminal.show();
    const closed = vscode.window.onDidCloseTerminal(async (t) => {
      if (t !== terminal) return;
      closed.dispose();
      const answer = await this.client?.sendRequest<{ loggedIn?: boolean }>('workspace/executeCommand', {
        command: 'loopd.login',
        arguments: [],
      });
      const ready = answer?.loggedIn ?? t.exitStatus?.code === 0;
      void vscode.window.showInformationMessage(
        ready ? 'loopd: logged in, a model provider is ready' : 'loopd: still no model provider (see the terminal)',
      );
    });
  }

  private async askForToken(): Promise<void> {
    const set = "Set the Remote Server's Token";
    const choice = await vscode.window.showErrorMessage(
      'loopd: loopd.server.remote.url is set, but no token: run `loopd serve token` on the server and set it here.',
      set,
    );
    if (choice === set) await this.setRemoteToken();
  }

  /** Ask for the remote server's token (`loopd serve token` printed it), keep it in
   * the secret storage (empty: forget it), and restart the server with it. */
  async setRemoteToken(): Promise<void> {
    const token = await vscode.window.showInputBox({
      prompt: "The remote loopd server's token (`loopd serve token` on the server); empty forgets it",
      password: true,
      ignoreFocusOut: true,
    });
    if (token === undefined) return;
    if (token.trim()) await this.context.secrets.store(REMOTE_TOKEN_SECRET, token.trim());
    else await this.context.secrets.delete(REMOTE_TOKEN_SECRET);
    await this.restart();
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  private showActivity(activity: Activity, waiting: number): void {
    const look = {
      idle: ['$(comment-discussion) loopd', 'loopd: idle — open the panel', undefined],
      running: ['$(sync~spin) loopd', 'loopd: running a turn', undefined],
      waiting: [`$(bell-dot) loopd: ${waiting} waiting`, 'loopd: an approval is waiting', 'statusBarItem.warningBackground'],
    } as const;
    const [text, tooltip, background] = look[activity];
    this.status.text = text;
    this.status.tooltip = tooltip;
    this.status.backgroundColor = background ? new vscode.ThemeColor(background) : undefined;
    this.panel.badge = waiting;
  }

  private fail(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    this.log.error(message);
    void vscode.window.showErrorMessage(`loopd: ${message}`);
  }

  requireController(): Controller {
    if (!vscode.workspace.isTrusted) throw new Error('this workspace is not trusted: trust it to run agent turns');
    if (!this.controller) throw new Error('the loopd server is not running (see "loopd: Show Log")');
    return this.controller;
  }

  async ask(blocks: ContentBlock[]): Promise<void> {
    const controller = this.requireController();
    await this.panel.reveal();
    await controller.prompt(blocks);
  }

  // -- the panel's messages ----------------------------------------------------------

  private async fromPanel(message: WebviewMessage): Promise<void> {
    switch (message.type) {
      case 'ready':
        return;
      case 'prompt':
        return this.ask([{ type: 'text', text: message.text }, ...message.attachments.map(toBlock)]);
      case 'stop':
        return this.controller?.cancel();
      case 'newSession':
        await this.requireController().newSession();
        return;
      case 'listSessions':
        await this.requireController().list();
        return;
      case 'loadSession':
        return this.requireController().load(message.sessionId);
      case 'deleteSession':
        return this.deleteSession(message.sessionId);
      case 'setConfig':
        return this.requireController().setConfig(message.configId, message.value);
      case 'openLocation':
        return this.openLocation(message.path, message.line);
      case 'openDiff':
        return this.diffs.open(message.path, message.oldText, message.newText, this.cwd);
      case 'answer':
        return this.controller?.answer(message.approvalId, message.optionId);
      case 'mention':
        return this.mention();
      case 'mentionContext':
        for (const attachment of await gatherContext(message.kind)) this.attach(attachment);
        return;
      case 'listMentions':
        await this.controller?.mentions();
        return;
      case 'addSelection':
        await this.addSelection();
        return;
      case 'copy':
        await vscode.env.clipboard.writeText(message.text);
        return;
      case 'restore':
        await this.requireController().restore(message.prompt, message.scope);
        return;
      case 'redo':
        await this.requireController().restore(undefined);
        return;
      case 'continue':
        await this.requireController().continue();
        return;
      case 'fork':
        await this.requireController().fork(message.prompt);
        return;
      case 'edit': {
        const blocks: ContentBlock[] = [{ type: 'text', text: message.text }, ...message.attachments.map(toBlock)];
        await this.panel.reveal();
        await this.requireController().edit(message.prompt, blocks);
        return;
      }
    }
  }

  private async deleteSession(sessionId: string): Promise<void> {
    const yes = 'Delete';
    const choice = await vscode.window.showWarningMessage('Delete this loopd session?', { modal: true }, yes);
    if (choice === yes) await this.requireController().delete(sessionId);
  }

  private async openLocation(path: string, line?: number): Promise<void> {
    const uri = path.startsWith('/') ? vscode.Uri.file(path) : vscode.Uri.joinPath(vscode.Uri.file(this.cwd), path);
    const at = new vscode.Position(Math.max(0, (line ?? 1) - 1), 0);
    await vscode.window.showTextDocument(uri, { selection: new vscode.Range(at, at), preview: true });
  }

  async mention(): Promise<void> {
    const files = await vscode.workspace.findFiles('**/*', '**/{node_modules,.git,.venv}/**', 5000);
    const picked = await vscode.window.showQuickPick(
      files.map((uri) => ({ label: vscode.workspace.asRelativePath(uri), uri })),
      { placeHolder: 'Mention a file', matchOnDescription: true },
    );
    if (picked) this.attach({ kind: 'file', uri: picked.uri.toString(), name: picked.label });
  }

  async addSelection(): Promise<boolean> {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return false;
    const selection = editor.selection;
    const range = selection.isEmpty ? editor.document.lineAt(selection.active.line).range : selection;
    const start = range.start.line + 1;
    const end = range.end.line + 1;
    const name = `${vscode.workspace.asRelativePath(editor.document.uri)}:${start === end ? start : `${start}-${end}`}`;
    const uri = `${editor.document.uri.toString()}#L${start === end ? start : `${start}-${end}`}`;
    this.attach({ kind: 'selection', uri, name, text: editor.document.getText(range) });
    return true;
  }

  private attach(attachment: Attachment): void {
    void this.panel.reveal().then(() => this.panel.post({ type: 'attach', attachment }));
  }

  private async askFromCodeAction(argument: AskArgument): Promise<unknown> {
    const text =
      argument.ask || !argument.prompt ? await vscode.window.showInputBox({ prompt: 'Ask loopd' }) : argument.prompt;
    if (!text) return {};
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(argument.uri));
    const { start, end } = argument.range;
    const range = new vscode.Range(start.line, start.character, end.line, end.character);
    const lines = start.line === end.line ? `L${start.line + 1}` : `L${start.line + 1}-${end.line + 1}`;
    const body = range.isEmpty ? doc.lineAt(start.line).text : doc.getText(range);
    void this.ask([
      { type: 'text', text },
      { type: 'resource', resource: { uri: `${argument.uri}#${lines}`, text: body } },
    ]).catch((e) => this.fail(e));
    return { sessionId: this.controller?.sessionId };
  }

  /** The selection (or the whole file) as a prompt block. */
  contextBlock(): ContentBlock | undefined {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return undefined;
    const doc = editor.document;
    if (editor.selection.isEmpty) return { type: 'resource', resource: { uri: doc.uri.toString(), text: doc.getText() } };
    const s = editor.selection;
    return {
      type: 'resource',
      resource: { uri: `${doc.uri.toString()}#L${s.start.line + 1}-${s.end.line + 1}`, text: doc.getText(s) },
    };
  }
}

type Position = { line: number; character: number };

/** The argument of the server's code actions (`loopd.ask` on a range). */
interface AskArgument {
  uri: string;
  range: { start: Position; end: Position };
  prompt?: string;
  ask?: boolean;
}

function isAskArgument(value: unknown): value is AskArgument {
  const a = value as AskArgument | undefined;
  return typeof a?.uri === 'string' && typeof a.range?.start?.line === 'number' && typeof a.range?.end?.line === 'number';
}

/** A modal naming the files a restore would overwrite (changed outside the agent since). */
async function confirmOverwrite(paths: string[], summary: string): Promise<boolean> {
  const overwrite = 'Overwrite';
  const choice = await vscode.window.showWarningMessage(
    `loopd: ${paths.length} file(s) changed outside the agent since this checkpoint`,
    { modal: true, detail: `${paths.map((p) => vscode.workspace.asRelativePath(p)).join('\n')}\n\n${summary}\nRestoring overwrites them.` },
    overwrite,
  );
  return choice === overwrite;
}
