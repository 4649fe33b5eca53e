/**
 * Starting `loopd lsp` with vscode-languageclient over stdio, opted into the
 * `loopd/session/*` extension. Finding the executable is `discovery.ts`; when
 * nothing is found the person is told the install line and offered the settings.
 */

import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import {
  type ClientCapabilities,
  type FeatureState,
  LanguageClient,
  type LanguageClientOptions,
  type Middleware,
  type ServerOptions,
  type StaticFeature,
} from 'vscode-languageclient/node';
import { findServer, INSTALL_LINE, MISSING_MESSAGE, type ServerCommand, which } from './discovery';
import { type RemoteSettings, remoteEnv, remoteServer } from './remote';

/** Adds `capabilities.experimental.loopd = true`: this client renders the extension. */
class LoopdCapability implements StaticFeature {
  getState(): FeatureState {
    return { kind: 'static' };
  }
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    capabilities.experimental = { ...(capabilities.experimental as object | undefined), loopd: true };
  }
  initialize(): void {}
  clear(): void {}
}

/** The local `loopd lsp`, or its bridge to `loopd.server.remote.url` when one is set. */
export async function locateServer(): Promise<ServerCommand | undefined> {
  const config = vscode.workspace.getConfiguration('loopd');
  const server = await findLocal(config);
  return server && remoteServer(server, remoteSettings(config));
}

/** `loopd.server.remote.*` from the user's settings only (`machine` scope): a
 * repository must not send the token to a server of its choosing. */
export function remoteSettings(config: vscode.WorkspaceConfiguration): RemoteSettings {
  const user = (key: string) => String(config.inspect<string>(`server.remote.${key}`)?.globalValue ?? '');
  return { url: user('url'), fingerprint: user('fingerprint'), tokenFile: user('tokenFile') };
}

function findLocal(config: vscode.WorkspaceConfiguration): Promise<ServerCommand | undefined> {
  return findServer({
    settingPath: (config.get<string>('server.path') ?? '').trim(),
    extraArgs: config.get<string[]>('server.args') ?? [],
    which: (name) => which(name),
    pythonInterpreter,
    hasLoopd: (python) =>
      new Promise((resolve) => execFile(python, ['-c', 'import loopd'], (error) => resolve(!error))),
  });
}

/** The interpreter the Python extension selected for the first workspace folder. */
async function pythonInterpreter(): Promise<string | undefined> {
  const python = vscode.extensions.getExtension('ms-python.python');
  if (!python) return undefined;
  try {
    const api = python.isActive ? python.exports : await python.activate();
    const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
    const path = api?.environments?.getActiveEnvironmentPath?.(resource)?.path;
    if (typeof path === 'string' && path) return path;
    const details = api?.settings?.getExecutionDetails?.(resource);
    return details?.execCommand?.[0];
  } catch {
    return undefined;
  }
}

export async function notifyMissing(): Promise<void> {
  const settings = 'Open Settings';
  const copy = 'Copy install line';
  const choice = await vscode.window.showErrorMessage(
    MISSING_MESSAGE,
    settings,
    copy,
  );
  if (choice === settings) await vscode.commands.executeCommand('workbench.action.openSettings', 'loopd.server');
  if (choice === copy) await vscode.env.clipboard.writeText(INSTALL_LINE);
}

/** The client of `server`; `token` (the remote server's, from the secret storage)
 * goes in its environment only. */
export function createClient(
  server: ServerCommand,
  log: vscode.LogOutputChannel,
  middleware: Middleware = {},
  token?: string,
): LanguageClient {
  const config = vscode.workspace.getConfiguration('loopd');
  const env = remoteEnv({ ...process.env, ...(config.get<Record<string, string>>('server.env') ?? {}) }, token);
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const serverOptions: ServerOptions = {
    command: server.command,
    args: server.args,
    // No `transport`: TransportKind.stdio would append `--stdio`, which `loopd lsp`
    // does not take (it speaks stdio unless told --tcp).
    options: { env, cwd },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
    outputChannel: log,
    // `review` asks for the agent's writes as pending changes (`loopd/review/*`).
    initializationOptions: { loopd: reviewOptIn(config), client: 'vscode' },
    middleware,
  };
  const client = new LanguageClient('loopd', 'loopd', serverOptions, clientOptions);
  client.registerFeature(new LoopdCapability());
  return client;
}

/** `true` (the extension, no review) or the review opt-in with its alwaysAsk globs. */
function reviewOptIn(config: vscode.WorkspaceConfiguration): true | { review: { alwaysAsk: string[] } } {
  if (config.get<boolean>('review.enabled') === false) return true;
  return { review: { alwaysAsk: alwaysAskGlobs(config) } };
}

/** Every scope's `loopd.review.alwaysAsk` and the defaults together: a setting may add globs, never remove one. */
export function alwaysAskGlobs(config: vscode.WorkspaceConfiguration): string[] {
  const seen = config.inspect<string[]>('review.alwaysAsk');
  const scopes = [seen?.defaultValue, seen?.globalValue, seen?.workspaceValue, seen?.workspaceFolderValue];
  return [...new Set(scopes.flatMap((v) => (Array.isArray(v) ? v.filter((g) => typeof g === 'string') : [])))];
}
